#!/usr/bin/env python3
"""The PyTorch anchor: the same network and weights as mnv2 (our ONNX model, rebuilt as a torch nn.Module
node by node), checked against the float64 reference logits of the golden inputs, then timed the way
`mnv2 bench` times its device-resident figures. Writes a `mnv2.bench/1` JSON file that `mnv2 bench --with`
/ `--show` and the app's File > Open report read.

Needs PyTorch (CUDA), the `onnx` package and numpy; no internet. Usage:

    python3 scripts/pytorch-anchor.py --json anchor.json [--batch 1,8,64,256] [--input-size 224x224]
        [--precision fp32,tf32,fp16] [--warmup 20] [--iters 100] [--no-compile]

Precisions: fp32 = float32 with TF32 off for matmul AND cuDNN; tf32 = float32 with TF32 on for both;
fp16 = half weights and activations, channels-last. For each (precision, batch, size) every mode is timed:
eager and CUDA graph (torch.cuda.CUDAGraph captured on a static input), each with cudnn.benchmark on and
off, and torch.compile (--compile-mode, default reduce-overhead) where it compiles within --compile-limit-s
(and the run's compile time within --compile-budget-s); the fastest device-resident median is the record
in "results", every mode is kept in "all_modes".

Figures per mode, as mnv2 defines them (mnv2/bench.h):
  device_resident_*: the input already on the GPU, one forward (or graph replay), CUDA event pair around
                     it, synchronised each iteration; no copies;
  median_ms ... (host) and gpu_*: end to end, the input copied from pinned host memory, the forward, the
                     logits copied back, synchronised: host wall clock, and an event pair around the same.
The logits check (rel L2 per image against the float64 reference, eager, each precision) must pass in fp32
(--tolerance, default 1e-5) or the script exits 1 with the numbers; tf32/fp16 errors are reported only.
Exit codes: 0 success, 1 failed check or runtime error, 2 usage error.
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn

SCHEMA = "mnv2.bench/1"


class AnchorError(Exception):
    """A failure the user can act on: printed as 'error: ...', exit 1."""


# ---- ONNX -> torch ----------------------------------------------------------------------------------------


class Const(nn.Module):
    """An initializer or Constant used as data (not a weight): kept as a buffer so .to()/.half() move it."""

    def __init__(self, value):
        super().__init__()
        self.register_buffer("value", value)

    def forward(self):
        return self.value


class Add(nn.Module):
    def forward(self, a, b):
        return a + b


class Mul(nn.Module):
    def forward(self, a, b):
        return a * b


class GlobalAveragePool(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3), keepdim=True)


class Flatten(nn.Module):
    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        # ONNX Flatten: always 2-D, (product of the dims before axis, product of the rest). Torch ops only,
        # so that torch.compile sees one graph (a numpy call on the shape would break it there).
        if self.axis == 0:
            return x.reshape(1, -1)
        return torch.flatten(torch.flatten(x, self.axis), 0, self.axis - 1)


class Reshape(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.shape = [int(s) for s in shape]

    def forward(self, x):
        # ONNX: 0 copies the input's dimension, -1 is inferred. A leading 1 written for the exported batch is
        # taken as the batch (the models we read put the batch first), so other batches run.
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(self.shape)]
        if len(shape) >= 1 and shape[0] == 1 and x.shape[0] != 1:
            shape[0] = x.shape[0]
        return x.reshape(shape)


class MatMul(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


class Identity(nn.Module):
    def forward(self, x):
        return x


def as_tensor(array):
    """A float32 torch copy of an ONNX initializer (numpy_helper's arrays are read-only views)."""
    return torch.tensor(np.array(array, dtype=np.float32))


def attrs_of(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class OnnxNet(nn.Module):
    """The ONNX graph as a sequence of torch modules (one per node) run in the file's (topological) order."""

    SUPPORTED = ("Conv", "Clip", "Relu", "Add", "Mul", "GlobalAveragePool", "Flatten", "Reshape", "Gemm",
                 "MatMul", "Constant", "Identity", "Dropout", "BatchNormalization")

    def __init__(self, model):
        super().__init__()
        graph = model.graph
        inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        unknown = sorted({n.op_type for n in graph.node if n.op_type not in self.SUPPORTED})
        if unknown:
            raise AnchorError("the model has ops this anchor does not map to torch: " + ", ".join(unknown) +
                              " (supported: " + ", ".join(self.SUPPORTED) + ")")
        real_inputs = [i.name for i in graph.input if i.name not in inits]
        if len(real_inputs) != 1:
            raise AnchorError(f"the model has {len(real_inputs)} non-initializer inputs; one (the image) expected")
        if len(graph.output) != 1:
            raise AnchorError(f"the model has {len(graph.output)} outputs; one (the logits) expected")
        self.input_name = real_inputs[0]
        self.output_name = graph.output[0].name
        consts = dict(inits)  # values known when the module is built (Clip bounds, Reshape shapes, weights)
        self.steps = nn.ModuleList()
        self.wiring = []  # per step: (input names, output name)
        for node in graph.node:
            a = attrs_of(node)
            op = node.op_type
            where = f"node '{node.name or node.output[0]}' ({op})"

            def const(i, what):
                if i >= len(node.input) or not node.input[i]:
                    return None
                name = node.input[i]
                if name not in consts:
                    raise AnchorError(f"{where}: {what} '{name}' is computed at run time; a constant is needed")
                return consts[name]

            if op == "Constant":
                if "value" not in a:
                    raise AnchorError(f"{where}: only the 'value' attribute is supported")
                consts[node.output[0]] = numpy_helper.to_array(a["value"])
                continue  # used by others at build time, or as data through a Const step below
            inputs = list(node.input)
            if op == "Conv":
                w = const(1, "weight")
                b = const(2, "bias")
                if w.ndim != 4:
                    raise AnchorError(f"{where}: only 2-D convolution is supported")
                group = int(a.get("group", 1))
                strides = list(a.get("strides", [1, 1]))
                dil = list(a.get("dilations", [1, 1]))
                if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                    raise AnchorError(f"{where}: auto_pad is not supported (explicit pads only)")
                pads = list(a.get("pads", [0, 0, 0, 0]))  # ONNX: top, left, bottom, right
                conv = nn.Conv2d(w.shape[1] * group, w.shape[0], (w.shape[2], w.shape[3]), stride=strides,
                                 dilation=dil, groups=group, bias=b is not None)
                with torch.no_grad():
                    conv.weight.copy_(as_tensor(w))
                    if b is not None:
                        conv.bias.copy_(as_tensor(b))
                if pads[0] == pads[2] and pads[1] == pads[3]:
                    conv.padding = (pads[0], pads[1])
                    module = conv
                else:  # asymmetric (TensorFlow SAME, stride 2): pad explicitly; ZeroPad2d takes l, r, t, b
                    module = nn.Sequential(nn.ZeroPad2d((pads[1], pads[3], pads[0], pads[2])), conv)
                inputs = inputs[:1]
            elif op == "Clip":
                lo = const(1, "min") if len(node.input) > 1 else a.get("min")
                hi = const(2, "max") if len(node.input) > 2 else a.get("max")
                lo = -math.inf if lo is None else float(np.asarray(lo))
                hi = math.inf if hi is None else float(np.asarray(hi))
                if lo == 0.0 and hi == 6.0:
                    module = nn.ReLU6()
                elif lo == 0.0 and hi == math.inf:
                    module = nn.ReLU()
                else:
                    module = nn.Hardtanh(lo, hi)
                inputs = inputs[:1]
            elif op == "Relu":
                module = nn.ReLU()
            elif op == "Add":
                module = Add()
            elif op == "Mul":
                module = Mul()
            elif op == "GlobalAveragePool":
                module = GlobalAveragePool()
            elif op == "Flatten":
                module = Flatten(int(a.get("axis", 1)))
            elif op == "Reshape":
                module = Reshape(const(1, "shape"))
                inputs = inputs[:1]
            elif op == "Gemm":
                if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                    raise AnchorError(f"{where}: only transA=0, alpha=1, beta=1 is supported")
                w = const(1, "B")
                b = const(2, "C")
                if not a.get("transB", 0):
                    w = w.T
                module = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
                with torch.no_grad():
                    module.weight.copy_(as_tensor(w))
                    if b is not None:
                        module.bias.copy_(as_tensor(b).reshape(-1))
                inputs = inputs[:1]
            elif op == "MatMul":
                if len(node.input) > 1 and node.input[1] in consts and consts[node.input[1]].ndim == 2:
                    w = consts[node.input[1]]
                    module = nn.Linear(w.shape[0], w.shape[1], bias=False)
                    with torch.no_grad():
                        module.weight.copy_(as_tensor(w.T))
                    inputs = inputs[:1]
                else:
                    module = MatMul()
            elif op in ("Identity", "Dropout"):  # Dropout is the identity at inference
                module = Identity()
                inputs = inputs[:1]
            elif op == "BatchNormalization":
                scale, bias, mean, var = (const(i, k) for i, k in enumerate(("scale", "B", "mean", "var"), 1))
                module = nn.BatchNorm2d(scale.shape[0], eps=float(a.get("epsilon", 1e-5)))
                with torch.no_grad():
                    for p, v in ((module.weight, scale), (module.bias, bias), (module.running_mean, mean),
                                 (module.running_var, var)):
                        p.copy_(as_tensor(v))
                module.eval()
                inputs = inputs[:1]
            else:  # SUPPORTED and this chain disagree: a bug here, not in the model
                raise AnchorError(f"{where}: op listed as supported but not mapped")
            # Data inputs that are constants (e.g. an Add's bias) become Const steps producing that name.
            for name in inputs:
                if name in consts and name not in self._produced():
                    self.steps.append(Const(as_tensor(consts[name])))
                    self.wiring.append(([], name))
            self.steps.append(module)
            self.wiring.append((inputs, node.output[0]))
        for p in self.parameters():
            p.requires_grad_(False)

    def _produced(self):
        return {out for _, out in self.wiring}

    def forward(self, x):
        env = {self.input_name: x}
        for module, (inputs, output) in zip(self.steps, self.wiring):
            env[output] = module(*[env[i] for i in inputs])
        return env[self.output_name]


def sha256_file(path):
    """The checksum mnv2 writes for a model file: SHA-256 of its bytes, 'sha256:<64 hex digits>' (sha256sum's)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


# ---- figures ----------------------------------------------------------------------------------------------


def percentile_sorted(s, q):
    """Type 7 (numpy's default), as mnv2/stats.h."""
    if not s:
        return 0.0
    h = (len(s) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def summarize(samples):
    s = sorted(samples)
    n = len(s)
    mean = sum(s) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "mean": mean, "median": percentile_sorted(s, 0.5), "min": s[0], "max": s[-1], "std": std,
            "p10": percentile_sorted(s, 0.1), "p90": percentile_sorted(s, 0.9), "p95": percentile_sorted(s, 0.95),
            "p99": percentile_sorted(s, 0.99),
            "cv": std / mean if mean > 0 else 0.0}


def parse_list(text, what, conv):
    try:
        values = [conv(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: '{text}' is not a comma-separated list")
    if not values:
        raise argparse.ArgumentTypeError(f"{what}: empty list")
    return values


def parse_size(v):
    parts = v.lower().split("x")
    if len(parts) != 2:
        raise ValueError(v)
    h, w = int(parts[0]), int(parts[1])
    if not (16 <= h <= 4096 and 16 <= w <= 4096):
        raise ValueError(v)
    return (h, w)


# ---- precision modes --------------------------------------------------------------------------------------


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def model_for(base, precision, device):
    """A copy of the network in `precision`: fp16 is half, channels-last; fp32/tf32 float32 NCHW."""
    import copy

    m = copy.deepcopy(base).to(device).eval()
    if precision == "fp16":
        m = m.half().to(memory_format=torch.channels_last)
    set_tf32(precision == "tf32")
    return m


def input_for(x, precision):
    if precision == "fp16":
        return x.half().contiguous(memory_format=torch.channels_last)
    return x.float().contiguous()


def layout_of(precision):
    return "channels-last fp16" if precision == "fp16" else (
        "NCHW fp32 (TF32 on for matmul and cuDNN)" if precision == "tf32" else
        "NCHW fp32 (TF32 off for matmul and cuDNN)")


# ---- the logits check -------------------------------------------------------------------------------------


def load_golden(golden_dir, model_file):
    """The golden inputs made for this model file: (names, float32 N x 3 x 224 x 224, float64 logits)."""
    names, xs, refs = [], [], []
    if not os.path.isdir(golden_dir):
        raise AnchorError(f"golden folder '{golden_dir}' not found (--golden)")
    for f in sorted(os.listdir(golden_dir)):
        if not f.endswith(".json"):
            continue
        with open(os.path.join(golden_dir, f)) as fh:
            g = json.load(fh)
        if g.get("model") != os.path.basename(model_file) or "logits" not in g:
            continue
        shape = g.get("input_shape", [1, 3, 224, 224])
        raw = np.fromfile(os.path.join(golden_dir, g["input"]), dtype="<f4")
        if raw.size != int(np.prod(shape)):
            raise AnchorError(f"{g['input']}: {raw.size} floats, {shape} expected")
        names.append(f[:-5])
        xs.append(raw.reshape(shape))
        refs.append(np.asarray(g["logits"], dtype=np.float64))
    if not names:
        raise AnchorError(f"no golden file in '{golden_dir}' names the model '{os.path.basename(model_file)}'")
    return names, np.concatenate(xs), np.stack(refs)


def check_logits(base, precision, device, golden):
    names, x, ref = golden
    m = model_for(base, precision, device)
    with torch.inference_mode():
        y = m(input_for(torch.from_numpy(x).to(device), precision)).double().cpu().numpy()
    per_image = []
    for i, name in enumerate(names):
        err = float(np.linalg.norm(y[i] - ref[i]) / np.linalg.norm(ref[i]))
        per_image.append({"image": name, "rel_l2": err, "top1": int(np.argmax(y[i])),
                          "reference_top1": int(np.argmax(ref[i]))})
    del m
    return per_image


# ---- timing -----------------------------------------------------------------------------------------------


def rel_l2(y, ref):
    """||y - ref|| / ||ref|| in float64: how far a mode's logits are from the eager logits of the same input."""
    ref = ref.double()
    return float(torch.linalg.vector_norm(y.double() - ref) / torch.linalg.vector_norm(ref))


class CompileTimeout(Exception):
    pass


def time_mode(run, x_static, x_host, out_host, warmup, iters):
    """Device-resident (events around `run`) and end-to-end (copy in, run, copy out) figures of one mode."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    dev, dev_host = [], []
    for _ in range(iters):
        t0 = time.perf_counter()
        start.record()
        run()
        end.record()
        end.synchronize()
        dev_host.append((time.perf_counter() - t0) * 1e3)
        dev.append(start.elapsed_time(end))
    e2e_gpu, e2e_host = [], []
    for _ in range(iters):
        t0 = time.perf_counter()
        start.record()
        x_static.copy_(x_host, non_blocking=True)
        out = run()
        out_host.copy_(out, non_blocking=True)
        end.record()
        end.synchronize()
        e2e_host.append((time.perf_counter() - t0) * 1e3)
        e2e_gpu.append(start.elapsed_time(end))
    return {"device": summarize(dev), "device_host": summarize(dev_host), "gpu": summarize(e2e_gpu),
            "host": summarize(e2e_host)}


def measure_point(base, precision, batch, hw, args, device, compile_state, log):
    """Every mode of one (precision, batch, size): a list of (mode dict, figures dict or None, note)."""
    h, w = hw
    m = model_for(base, precision, device)
    gen = torch.Generator().manual_seed(1)  # uniform [-1, 1), as mnv2's random_input (values differ)
    x_cpu = torch.rand((batch, 3, h, w), generator=gen) * 2 - 1
    x_host = input_for(x_cpu, precision).pin_memory()
    x_static = input_for(x_cpu, precision).to(device)
    weight_bytes = sum(p.numel() * p.element_size() for p in m.parameters())
    torch.backends.cudnn.benchmark = False
    with torch.inference_mode():
        eager_out = m(x_static).double()  # every mode's output is compared with this (same precision)
    results = []
    for exec_mode in ("eager", "cuda_graph"):
        for bench in (True, False):
            torch.backends.cudnn.benchmark = bench
            mode = {"exec": exec_mode, "cudnn_benchmark": bench, "compile": None}
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            free0, total = torch.cuda.mem_get_info()
            with torch.inference_mode():
                if exec_mode == "eager":
                    out_static = m(x_static)

                    def run():
                        return m(x_static)
                else:
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):  # warm-up off the capture (algorithm choice, allocations)
                        for _ in range(3):
                            m(x_static)
                    torch.cuda.current_stream().wait_stream(s)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        out_static = m(x_static)

                    def run(graph=graph, out=out_static):
                        graph.replay()
                        return out
                out_host = torch.empty(out_static.shape, dtype=out_static.dtype, pin_memory=True)
                fig = time_mode(run, x_static, x_host, out_host, args.warmup, args.iters)
                fig["rel_l2_vs_eager"] = rel_l2(run(), eager_out)
            free1, _ = torch.cuda.mem_get_info()
            fig["memory"] = memory_block(weight_bytes, total, free0, free1)
            results.append((mode, fig, ""))
            del run, out_static
            if exec_mode == "cuda_graph":
                del graph
    if not args.no_compile:
        results.append(measure_compiled(m, precision, batch, x_static, x_host, weight_bytes, eager_out, args,
                                        compile_state, log))
    return results  # the model and its buffers go with this frame


def memory_block(weight_bytes, total, free_before, free_after):
    peak = torch.cuda.max_memory_allocated()
    return {"weight_bytes": weight_bytes, "activation_bytes": max(0, peak - weight_bytes), "workspace_bytes": 0,
            "total_bytes": max(peak, weight_bytes), "tensors": 0,
            "device_used_before_bytes": total - free_before, "device_used_peak_bytes": total - free_after,
            "device_total_bytes": total, "driver_held_bytes": 0}


def measure_compiled(m, precision, batch, x_static, x_host, weight_bytes, eager_out, args, state, log):
    mode = {"exec": "torch.compile " + args.compile_mode, "cudnn_benchmark": True, "compile": args.compile_mode}
    if state["disabled"]:
        return (mode, None, state["disabled"])
    left = args.compile_budget_s - state["spent"]
    limit = int(min(args.compile_limit_s, left))
    if limit < 1:
        state["disabled"] = f"skipped: the compile budget ({args.compile_budget_s} s, --compile-budget-s) is spent"
        return (mode, None, state["disabled"])
    torch.backends.cudnn.benchmark = True
    torch._dynamo.reset()  # a fresh cache: each shape and precision compiles on its own, no recompile limit
    # fullgraph: a graph break would time a mix of compiled and eager code; it fails here instead.
    compiled = torch.compile(m, mode=args.compile_mode, dynamic=False, fullgraph=True)

    def on_alarm(signum, frame):
        raise CompileTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    t0 = time.perf_counter()
    try:
        with torch.inference_mode():
            for _ in range(3):  # reduce-overhead records its CUDA graph on a later call than the first
                compiled(x_static)
            torch.cuda.synchronize()
    except CompileTimeout:
        state["spent"] += time.perf_counter() - t0
        state["disabled"] = (f"skipped: compiling {precision} batch {batch} took more than {limit} s "
                             f"(--compile-limit-s); later compiles skipped too")
        log(state["disabled"])
        torch._dynamo.reset()
        return (mode, None, state["disabled"])
    except Exception as e:  # a compile failure is a finding about torch.compile, not a failed anchor
        state["disabled"] = f"skipped: torch.compile failed ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
        log(state["disabled"])
        return (mode, None, state["disabled"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    took = time.perf_counter() - t0
    state["spent"] += took
    log(f"torch.compile {args.compile_mode} {precision} batch {batch}: compiled in {took:.1f} s")
    mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", lambda: None)
    torch.cuda.reset_peak_memory_stats()
    free0, total = torch.cuda.mem_get_info()
    with torch.inference_mode():
        mark_step()
        out = compiled(x_static)
        out_host = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)

        def run():
            mark_step()  # reduce-overhead: each call is a new step of its CUDA graph trees
            return compiled(x_static)

        fig = time_mode(run, x_static, x_host, out_host, args.warmup, args.iters)
        fig["rel_l2_vs_eager"] = rel_l2(run(), eager_out)
    free1, _ = torch.cuda.mem_get_info()
    fig["memory"] = memory_block(weight_bytes, total, free0, free1)
    fig["compile_s"] = took
    torch._dynamo.reset()
    return (mode, fig, f"compiled in {took:.1f} s")


# ---- output -----------------------------------------------------------------------------------------------


def describe(mode, precision, device_name):
    exec_text = {"eager": "eager", "cuda_graph": "CUDA graph"}.get(mode["exec"], mode["exec"])
    return (f"PyTorch {torch.__version__} {exec_text}, cudnn.benchmark {'on' if mode['cudnn_benchmark'] else 'off'}, "
            f"{layout_of(precision)}, torch.compile {mode['compile'] or 'off'}; device-resident = input on the "
            f"GPU, events around each forward/replay; end to end = pinned copy in, forward, copy out, on "
            f"{device_name}")


def record(mode, fig, precision, batch, hw, args, device_name, best):
    host, gpu, dev = fig["host"], fig["gpu"], fig["device"]
    r = {"backend": "pytorch", "backend_description": describe(mode, precision, device_name), "precision": precision,
         "batch": batch, "height": hw[0], "width": hw[1], "warmup": args.warmup, "iters": args.iters,
         "median_ms": host["median"], "mean_ms": host["mean"], "min_ms": host["min"], "max_ms": host["max"],
         "std_ms": host["std"], "p10_ms": host["p10"], "p90_ms": host["p90"], "p95_ms": host["p95"],
         "p99_ms": host["p99"],
         "cv": host["cv"], "images_per_s": batch * 1e3 / host["median"],
         "gpu_median_ms": gpu["median"], "gpu_p90_ms": gpu["p90"], "gpu_min_ms": gpu["min"],
         "device_resident_median_ms": dev["median"], "device_resident_p90_ms": dev["p90"],
         "device_resident_min_ms": dev["min"], "device_resident_images_per_s": batch * 1e3 / dev["median"],
         # The host wall clock of the device-resident loop (forward + event + synchronise): not in mnv2's schema.
         "device_resident_host_median_ms": fig["device_host"]["median"],
         "memory_bytes": fig["memory"]["total_bytes"], "memory": fig["memory"], "cpu_threads": 0,
         "mode": mode, "best_mode": best,
         # The mode's logits of the timed input against eager's in the same precision (a wrong capture or a
         # compile that changes the arithmetic shows here).
         "output_rel_l2_vs_eager": fig["rel_l2_vs_eager"]}
    if "compile_s" in fig:
        r["compile_s"] = fig["compile_s"]
    return r


def git_commit():
    try:
        out = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short=12",
                              "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write_json(path, doc):
    """All or nothing: a temporary file beside the target, renamed over it."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def print_table(rows):
    head = (f"{'prec':5} {'batch':>5} {'size':>8} {'mode':46} {'dev_med_ms':>10} {'dev_p90_ms':>10} "
            f"{'dev_host_ms':>11} {'e2e_gpu_ms':>10} {'e2e_host_ms':>11} {'dev_img/s':>10} {'vs_eager':>9}")
    print(head)
    for r in rows:
        mode = r["mode"]
        name = (f"{mode['exec']}, bench {'on' if mode['cudnn_benchmark'] else 'off'}" if not mode["compile"]
                else mode["exec"])
        print(f"{r['precision']:5} {r['batch']:>5} {str(r['height']) + 'x' + str(r['width']):>8} "
              f"{name + (' *' if r['best_mode'] else ''):46} {r['device_resident_median_ms']:10.3f} "
              f"{r['device_resident_p90_ms']:10.3f} {r['device_resident_host_median_ms']:11.3f} "
              f"{r['gpu_median_ms']:10.3f} {r['median_ms']:11.3f} {r['device_resident_images_per_s']:10.1f} "
              f"{r['output_rel_l2_vs_eager']:9.1e}")


# ---- main -------------------------------------------------------------------------------------------------


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    shared = os.environ.get("MNV2_SHARED_DIR", os.path.join(here, "..", "..", "shared"))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=os.environ.get("MNV2_MODEL",
                                                     os.path.join(shared, "weights", "mobilenet_v2_1.0_224.onnx")),
                   help="the ONNX model (default $MNV2_MODEL, else ../shared/weights/mobilenet_v2_1.0_224.onnx)")
    p.add_argument("--golden", default=None,
                   help="folder of golden inputs and float64 logits (default: ../golden beside the model's folder)")
    p.add_argument("--json", required=True, help="the mnv2.bench/1 file to write")
    p.add_argument("--batch", default="1,8,64,256", type=lambda t: parse_list(t, "--batch", int))
    p.add_argument("--input-size", default="224x224", type=lambda t: parse_list(t, "--input-size", parse_size))
    p.add_argument("--precision", default="fp32,tf32,fp16", type=lambda t: parse_list(t, "--precision", str))
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--tolerance", type=float, default=1e-5, help="fp32 rel L2 bound per image (default 1e-5)")
    p.add_argument("--no-compile", action="store_true", help="do not time torch.compile")
    p.add_argument("--compile-mode", default="reduce-overhead",
                   choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
    p.add_argument("--compile-limit-s", type=int, default=180, help="one compile's limit; past it, compile is skipped")
    p.add_argument("--compile-budget-s", type=int, default=600, help="all compiles' limit")
    p.add_argument("--check-only", action="store_true",
                   help="only the logits check (fp32; runs on the CPU where there is no GPU)")
    args = p.parse_args(argv)
    for b in args.batch:
        if not 1 <= b <= 65536:
            p.error(f"--batch {b} is outside 1..65536")
    for prec in args.precision:
        if prec not in ("fp32", "tf32", "fp16"):
            p.error(f"--precision '{prec}': fp32, tf32 or fp16")
    if args.warmup < 0 or args.iters < 2:
        p.error("--warmup must be 0 or more and --iters 2 or more")
    if args.golden is None:
        args.golden = os.path.join(os.path.dirname(os.path.abspath(args.model)), "..", "golden")
    return args


def main(argv):
    args = parse_args(argv)
    log = lambda msg: print(msg, flush=True)
    if not os.path.isfile(args.model):
        raise AnchorError(f"model '{args.model}' not found (--model or MNV2_MODEL)")
    try:
        model = onnx.load(args.model)
    except Exception as e:
        raise AnchorError(f"{args.model}: not a readable ONNX model ({e})")
    base = OnnxNet(model).eval()
    golden = load_golden(args.golden, args.model)
    cuda = torch.cuda.is_available()
    if not cuda and not args.check_only:
        raise AnchorError("no CUDA device: the timings need one (--check-only runs the logits check on the CPU)")
    device = torch.device("cuda" if cuda else "cpu")
    device_name = torch.cuda.get_device_name(0) if cuda else "CPU"
    log(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
        f"{torch.backends.cudnn.version() if cuda else '-'}, {device_name}")
    log(f"model {args.model}: {len(model.graph.node)} ONNX nodes -> {len(base.steps)} torch steps, "
        f"{sum(p.numel() for p in base.parameters())} parameters")
    log("fp32 = TF32 off: torch.backends.cuda.matmul.allow_tf32 = False, torch.backends.cudnn.allow_tf32 = False; "
        "tf32 = both True; fp16 = half, channels-last")

    # The check: every precision asked for (eager), fp32 must pass.
    checks = {}
    failed = []
    for prec in (["fp32"] if args.check_only else args.precision):
        if prec != "fp32" and not cuda:
            continue
        per_image = check_logits(base, prec, device, golden)
        worst = max(c["rel_l2"] for c in per_image)
        top1 = all(c["top1"] == c["reference_top1"] for c in per_image)
        bound = args.tolerance if prec == "fp32" else None
        ok = bound is None or (worst <= bound and top1)
        checks[prec] = {"images": per_image, "worst_rel_l2": worst, "top1_agree": top1, "bound": bound,
                        "passed": ok if bound is not None else None}
        log(f"logits check {prec}: worst rel L2 {worst:.3e} over {len(per_image)} images ("
            + ", ".join(f"{c['image']} {c['rel_l2']:.2e}" for c in per_image) + "); top-1 "
            + ("agrees" if top1 else "DIFFERS") + (f"; bound {bound:g}: {'pass' if ok else 'FAIL'}" if bound else
                                                     " (reported, no bound)"))
        if not ok:
            failed.append(f"{prec}: worst rel L2 {worst:.3e} > {bound:g}" if worst > bound else
                          f"{prec}: top-1 differs")
    if failed:
        raise AnchorError("logits check failed: " + "; ".join(failed))
    if args.check_only:
        return 0

    doc = {"schema": SCHEMA,
           "model": {"source": os.path.abspath(args.model), "found_by": "--model", "checksum": sha256_file(args.model),
                     "synthetic": False, "classes": int(golden[2].shape[1]), "layers": len(base.steps),
                     "warnings": []},
           "commit": git_commit(), "timer": "host_clock", "results": [], "all_modes": [],
           "anchor": {"script": "scripts/pytorch-anchor.py", "torch": torch.__version__, "cuda": torch.version.cuda,
                      "cudnn": torch.backends.cudnn.version(), "device": device_name,
                      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      "argv": argv, "tf32": "fp32: matmul.allow_tf32=False, cudnn.allow_tf32=False; tf32: both True",
                      "layers_note": "'layers' counts torch steps (ONNX nodes less Constants, plus constant inputs)",
                      "logits_check": checks, "notes": []}}
    compile_state = {"spent": 0.0, "disabled": "" if not args.no_compile else "off (--no-compile)"}
    for prec in args.precision:
        for hw in args.input_size:
            for batch in args.batch:
                log(f"-- {prec} batch {batch} {hw[0]}x{hw[1]}")
                try:
                    modes = measure_point(base, prec, batch, hw, args, device, compile_state, log)
                except torch.cuda.OutOfMemoryError as e:
                    note = f"{prec} batch {batch} {hw[0]}x{hw[1]}: out of GPU memory ({str(e).splitlines()[0]})"
                    log("skipped: " + note)
                    doc["anchor"]["notes"].append(note)
                    torch.cuda.empty_cache()
                    continue
                timed = [(m, f) for m, f, _ in modes if f is not None]
                best = min(timed, key=lambda mf: mf[1]["device"]["median"])
                for m, f, note in modes:
                    if f is None:
                        doc["anchor"]["notes"].append(f"{prec} batch {batch}: {m['exec']}: {note}")
                        continue
                    rec = record(m, f, prec, batch, hw, args, device_name, m is best[0])
                    doc["all_modes"].append(rec)
                    if m is best[0]:
                        doc["results"].append(rec)
                write_json(args.json, doc)  # after each point: a cut-off run keeps what it measured
    print()
    print("device-resident (dev_*): input on the GPU, CUDA events around each forward/replay; dev_host: host wall "
          "clock of the same; e2e: pinned copy in + forward + copy out, events (gpu) and host wall clock; "
          "* = the best mode (lowest dev median), the record in \"results\"; vs_eager: rel L2 of the mode's logits "
          "against eager's, same input and precision")
    print_table(doc["all_modes"])
    for n in doc["anchor"]["notes"]:
        print("note: " + n)
    print(f"wrote {args.json}: {len(doc['results'])} results, {len(doc['all_modes'])} modes")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except AnchorError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
