#!/usr/bin/env python3
"""Golden outputs of the mnv2 CLI: every command on the CPU backends, its stdout, JSON and CSV files.

Recorded before the engine API refactor of issue 13 (commit 18d74cd's outputs) so that moving the
orchestration, the report writers and the argument parser is provably behaviour-preserving. What depends on
the moment is masked before the comparison: timings (every key or column that names a time, a rate or a
share), dates, run ids, the commit, the CPU's description (ISA, thread count), the measured roofline ceilings
and what follows from them. What depends on the CPU (oneDNN's kernels, fusions, blocked layouts and
scratchpad follow the ISA, the caches and the thread count) is compared as what the program promises, not as
what oneDNN chose on the recording machine: promises.py checks the steps as a valid partition of the layers and
compares their base partition, variants by their stable part, step figures against the layer table and memory
against bounds derived from the model's tensors. Everything else is compared: text exactly, numbers within
1e-4 absolute + 1e-4 relative (logits and diffs move in the last bits with the kernels). JSON is compared as
parsed values with key order, so whitespace may change but no key, order or value.

  run_golden.py --mnv2 BIN --shared DIR [--threads N] [--update] [--only CASE]

--threads sets the cpu backends' thread count (MNV2_CPU_THREADS, 2 by default); ONEDNN_MAX_CPU_ISA in the
environment caps oneDNN's ISA. --update re-records the files under tests/cli/golden/cases/; that is a reviewed
change of behaviour, and the recording must itself keep every promise (it is checked the same way).
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import promises

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")

# Keys (JSON) and columns (CSV) whose values are timings, rates, environment facts or per-run identities.
MASK_KEY = re.compile(
    r"(_ms|_ns|_us|_per_s|_gb_s|_s|_cv)$|^(cv|share|dur|ts|gflop_s|gbytes_s|ridge_flop_per_byte|date|run_id|commit|"
    r"backend_description|device|key|method|cudnn|cuda_runtime|driver|sm_clock_mhz_start|sm_clock_mhz_end|"
    r"bound|of_roof|attainable_gflop_s|roof_gflop_s|percent_of_roof|fraction_of_roof|timing|host|hostname|"
    r"cpu|cpu_description|threads|created|generated|memory_bound|iteration)$")
# Added after the recording and machine-dependent by nature: a run's reliability findings (what else ran on
# the machine) and the thread count it ran with. Dropped from JSON objects, CSV columns and stdout lines on
# both sides.
DROP_KEY = re.compile(r"^(reliability|cpu_threads)$")
DROP_LINE = re.compile(r"^\s*(?:\S.* )?reliability: |^\s+(?:unreliable|noted|unknown): ")
# The CPU backends describe the CPU they run on ("CPU, fp32: oneDNN 2.6.3, jit avx512_core_bf16 (...), 2 threads").
CPU_DESCRIPTION = re.compile(r"CPU(?: reference)?, fp32: .*?\d+ threads?")
COMMIT = re.compile(r"\b(commit[ \"=:]+)[0-9a-f]{7,40}\b")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
DECIMAL = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?")
MASKED = "<masked>"
# Which iteration a timeline shows is the one with the median per-layer total: it moves from run to run.
ITERATION = re.compile(r"\biteration \d+ of (\d+)")


def case_list(tmp, shared):
    img = os.path.join(shared, "images")
    gold = os.path.join(shared, "golden")
    t = lambda name: os.path.join(tmp, name)  # noqa: E731
    quick = ["--warmup", "1", "--iters", "2"]
    # Each: name, argv, stdout mode ('exact': numbers within tolerance, 'shape': decimals masked, 'model':
    # only from the 'model:' line on, 'none'), files written, expected exit code, stderr must contain; decodes:
    # the case decodes image files (a build without image decoding, as for the GPU machine, skips it, saying so).
    return [
        dict(name="info_model", argv=["info"], stdout="model"),
        dict(name="info_json", argv=["info", "--json"], stdout="json:model"),
        dict(name="topology_table", argv=["topology"], stdout="exact"),
        dict(name="topology_csv", argv=["topology", "--format", "csv", "--batch", "2", "--input-size", "160x192"],
             stdout="csv"),
        dict(name="topology_json", argv=["topology", "--format", "json"], stdout="json"),
        dict(name="classify_images", decodes=True, argv=["classify", "--backend", "cpu", os.path.join(img, "cat.bmp"),
                                           os.path.join(img, "parrot.jpg"), os.path.join(img, "hot_dog.jpg")],
             stdout="exact"),
        dict(name="classify_tensor_json", argv=["classify", "--backend", "cpu-ref", "--json", "--top", "3",
                                                "--tensor", os.path.join(gold, "grace_hopper.input.f32")],
             stdout="json"),
        dict(name="bench", argv=["bench", "--backends", "cpu-ref,cpu", "--batch", "1,2", "--csv", t("bench.csv"),
                                 "--json", t("bench.json")] + quick, stdout="shape",
             files=["bench.csv", "bench.json"]),
        dict(name="profile", decodes=True, argv=["profile", "--backend", "cpu-ref", "--image", os.path.join(img, "cat.bmp"),
                                   "--csv", t("profile.csv"), "--json", t("profile.json"),
                                   "--trace", t("profile.trace.json")] + quick, stdout="shape",
             files=["profile.csv", "profile.json", "profile.trace.json"]),
        dict(name="profile_cpu_batch2", argv=["profile", "--backend", "cpu", "--batch", "2", "--input-size",
                                              "192x160", "--json", t("profile2.json")] + quick, stdout="shape",
             files=["profile2.json"]),
        dict(name="roofline", argv=["roofline", "--backend", "cpu-ref", "--json", t("roofline.json"), "--csv",
                                    t("roofline.csv")] + quick, stdout="shape", files=["roofline.json",
                                                                                       "roofline.csv"],
             drop=[r"GB/s, compute .* GFLOP/s"], sub=[(r"\b(memory|compute)\s*$", MASKED), (r"\d+ below the ridge \(memory-bound\), \d+ above",
                                                                       "<ridge split>")]),
        dict(name="memory", argv=["memory", "--backend", "cpu-ref", "--batch", "4", "--csv", t("memory.csv"),
                                  "--json", t("memory.json")], stdout="exact", files=["memory.csv", "memory.json"]),
        dict(name="eval", decodes=True, argv=["eval", "--images", t("eval"), "--list", t("eval/list.txt"), "--backend", "cpu",
                                "--batch", "2", "--json", t("eval.json")], stdout="shape", files=["eval.json"]),
        dict(name="compare", argv=["compare", "--backends", "cpu-ref,cpu", "--csv", t("compare.csv"), "--json",
                                   t("compare.json")] + quick, stdout="shape", files=["compare.csv",
                                                                                      "compare.json"]),
        dict(name="usage_unknown_command", argv=["nosuch"], stdout="none", rc=2, stderr="nosuch"),
        dict(name="usage_bad_batch", argv=["bench", "--backends", "cpu", "--batch", "0"], stdout="none", rc=2,
             stderr="batch"),
        dict(name="usage_unknown_backend", argv=["classify", "--backend", "nosuch", os.path.join(img, "cat.bmp")],
             stdout="none", rc=2, stderr="nosuch"),
        dict(name="missing_model", argv=["topology", "--model", t("absent.onnx")], stdout="none", rc=1,
             stderr="absent.onnx"),
    ]


def prepare_eval_dir(tmp, shared):
    d = os.path.join(tmp, "eval")
    os.makedirs(d)
    labels = {"cat.bmp": 286, "parrot.jpg": 89, "hot_dog.jpg": 935, "grace_hopper.bmp": 653}
    for name in labels:
        shutil.copy(os.path.join(shared, "images", name), d)
    with open(os.path.join(d, "list.txt"), "w") as f:
        for name, label in labels.items():
            f.write(f"{name} {label}\n")


def normalise_text(text, tmp, shared):
    text = text.replace(tmp, "<tmp>").replace(os.path.realpath(tmp), "<tmp>")
    text = text.replace(os.path.realpath(shared), "<shared>").replace(shared, "<shared>")
    text = CPU_DESCRIPTION.sub("<cpu>", text)
    text = ITERATION.sub(lambda m: "iteration <masked> of " + m.group(1), text)
    return COMMIT.sub(lambda m: m.group(1) + "<commit>", text)


def mask_json(value, key=None):
    if isinstance(value, dict):
        return {k: (MASKED if MASK_KEY.search(k) and not isinstance(v, (dict, list)) else mask_json(v, k))
                for k, v in value.items() if not DROP_KEY.search(k)}
    if isinstance(value, list):
        return [mask_json(v, key) for v in value]
    return value


def mask_csv(text):
    return mask_rows(list(csv.reader(io.StringIO(text))))


def mask_rows(rows):
    if not rows:
        return rows
    kept = [i for i, h in enumerate(rows[0]) if not DROP_KEY.search(h)]
    masked = [i for i, h in enumerate(rows[0]) if MASK_KEY.search(h)]
    return [[rows[0][i] for i in kept if i < len(rows[0])]] + [
        [MASKED if i in masked else r[i] for i in kept if i < len(r)] for r in rows[1:]]


def mask_lines(text, mode, drop=(), sub=()):
    lines = []
    for line in text.splitlines():
        if DROP_LINE.search(line) or any(re.search(p, line) for p in drop):
            continue
        for pattern, repl in sub:
            line = re.sub(pattern, repl, line)
        if mode == "shape":  # a masked number's width moves the columns: spacing is not compared either
            line = re.sub(r"\s+", " ", DECIMAL.sub("#", line))
        lines.append(line.rstrip())
    return lines


def normalised(kind, text, tmp, shared, case):
    """The comparable form of one output: a JSON value, CSV rows or text lines."""
    text = normalise_text(text, tmp, shared)
    if kind.startswith("json"):
        value = mask_json(json.loads(text))
        if ":" in kind:
            value = value[kind.split(":", 1)[1]]
        return value
    if kind == "csv":
        return mask_csv(text)
    if kind == "model":
        lines = text.splitlines()
        start = next((i for i, l in enumerate(lines) if l.startswith("model:")), len(lines))
        return mask_lines("\n".join(lines[start:]), "exact")
    return mask_lines(text, kind, case.get("drop", ()), case.get("sub", ()))


def same_number(a, b):
    return abs(a - b) <= 1e-4 + 1e-4 * abs(b)


def compare_text(a, b):
    """Text with numbers: the text between numbers exactly, the numbers within tolerance."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    return all(same_number(float(x), float(y)) for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)))


def compare(a, b, path="$"):
    """None where a (new) matches b (golden), else a line saying where they differ. A value that depends on the
    partition into steps (promises.PARTITION: half of a fused step on one side) was checked for consistency
    with its own side's steps and matches anything."""
    if promises.PARTITION in (a, b):
        return None
    if isinstance(b, dict):
        if not isinstance(a, dict):
            return f"{path}: expected an object"
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys {list(a.keys())} != golden {list(b.keys())}"
        for k in b:
            d = compare(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            return f"{path}: expected a list of {len(b)}, got {len(a) if isinstance(a, list) else type(a).__name__}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = compare(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(b, bool) or b is None:
        return None if a == b and type(a) is type(b) else f"{path}: {a!r} != golden {b!r}"
    if isinstance(b, (int, float)):
        ok = isinstance(a, (int, float)) and not isinstance(a, bool) and same_number(a, b)
        return None if ok else f"{path}: {a!r} != golden {b!r}"
    if isinstance(b, str):
        return None if isinstance(a, str) and compare_text(a, b) else f"{path}: {a!r} != golden {b!r}"
    return None if a == b else f"{path}: {a!r} != golden {b!r}"


def load_golden(path, case):
    with open(path) as f:
        want = json.load(f)
    # A mask added after the recording applies to the recorded side too.
    for name, value in want.items():
        if name.endswith(".csv") or (name == "stdout" and case["stdout"] == "csv"):
            want[name] = mask_rows(value)
        elif name.endswith(".json") or (name == "stdout" and case["stdout"].startswith("json")):
            want[name] = mask_json(value)
    return want


def run_case(mnv2, shared, tmp, case, env):
    r = subprocess.run([mnv2] + case["argv"], capture_output=True, text=True, env=env, timeout=300)
    out = {"rc": r.returncode}
    if r.returncode != case.get("rc", 0):
        raise AssertionError(f"exit {r.returncode}, expected {case.get('rc', 0)}; stderr: {r.stderr[-2000:]}")
    if case.get("stderr") and case["stderr"] not in r.stderr:
        raise AssertionError(f"stderr lacks {case['stderr']!r}: {r.stderr[-2000:]}")
    if r.returncode != 0 and not r.stderr.strip():
        raise AssertionError("a failing command must say why on stderr")
    if case["stdout"] != "none":
        out["stdout"] = normalised(case["stdout"], r.stdout, tmp, shared, case)
    for name in case.get("files", []):
        path = os.path.join(tmp, name)
        with open(path) as f:
            text = f.read()
        kind = "csv" if name.endswith(".csv") else "json"
        out[name] = normalised(kind, text, tmp, shared, case)
    return out


def topology_source(mnv2, env):
    """topo_for(batch, height, width, fusing): the model's layer table at that batch and input size, from
    `mnv2 topology --format json` (run once per size), as a promises.Topology."""
    cache = {}

    def topo_for(batch, height, width, fusing):
        key = (batch, height, width)
        if key not in cache:
            r = subprocess.run([mnv2, "topology", "--format", "json", "--batch", str(batch), "--input-size",
                                f"{height}x{width}"], capture_output=True, text=True, env=env, timeout=120)
            if r.returncode != 0:
                raise AssertionError(f"mnv2 topology failed: {r.stderr[-500:]}")
            cache[key] = json.loads(r.stdout)["layers"]
        return promises.Topology(cache[key], fusing=fusing)

    return topo_for


THREADS_ASKED = "<the thread count asked for>"
ENV_THREADS = re.compile(r"\bthreads=(\d+) \(\$MNV2_CPU_THREADS\)")


def asked_threads(run, asked, where):
    """A run's threads option: the count this runner asked for through $MNV2_CPU_THREADS (a recording: any)."""
    opts = run.get("metadata", {}).get("options")
    if isinstance(opts, dict) and isinstance(opts.get("threads"), dict):
        t = opts["threads"]
        if asked is not None and (t.get("value") != str(asked) or t.get("source") != "environment"):
            raise AssertionError(f"{where}.metadata.options.threads = {t}, asked for {asked} by $MNV2_CPU_THREADS")
        run = dict(run, metadata=dict(run["metadata"], options=dict(opts, threads=dict(t, value=THREADS_ASKED))))
    return run


def asked_threads_line(line, asked):
    """'options from the environment: threads=2 ($MNV2_CPU_THREADS)': the count asked for."""
    def sub(m):
        if asked is not None and m.group(1) != str(asked):
            raise AssertionError(f"{line!r}: threads={m.group(1)}, asked for {asked}")
        return f"threads={THREADS_ASKED} ($MNV2_CPU_THREADS)"
    return ENV_THREADS.sub(sub, line)


def promised(out, case, topo_for, threads):
    """One case's outputs with what depends on the CPU checked against the promises and replaced by what
    every machine gives (promises.py). `threads` None: a recording, whose memory bounds are checked with the
    largest thread count it could have had (its bounds grow with the thread count)."""
    asked, threads = threads, threads or 256
    out = dict(out)
    for name, value in out.items():
        if name == "rc":
            continue
        kind = case["stdout"] if name == "stdout" else ("csv" if name.endswith(".csv") else "json")
        if kind == "shape":
            value = promises.canon_profile_stdout(value, topo_for, threads)
            value = promises.canon_compare_stdout(value, topo_for, threads)
        elif kind.startswith("json") and isinstance(value, dict):
            if value.get("schema") == "mnv2.report":
                value = dict(value, runs=[asked_threads(promises.canon_report_run(r, threads, f"{name}.runs[{k}]"),
                                                        asked, f"{name}.runs[{k}]")
                                          for k, r in enumerate(value["runs"])])
            if isinstance(value.get("run"), dict) and "steps" in value["run"]:  # a roofline report's run
                value = dict(value, run=asked_threads(promises.canon_report_run(value["run"], threads, f"{name}.run"),
                                                      asked, f"{name}.run"))
            if isinstance(value.get("traceEvents"), list):
                value = promises.canon_trace(value, threads, name)
            value = promises.canon_bench(value, None, topo_for, threads)
        elif kind in ("shape", "exact"):
            pass
        if kind in ("shape", "exact", "model"):
            value = [asked_threads_line(line, asked) for line in value]
        if kind == "csv":
            value = promises.canon_layer_csv(value, topo_for, threads)
            value = promises.canon_bench(None, value, topo_for, threads)
        out[name] = value
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mnv2", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--threads", type=int, default=2, help="the cpu backends' thread count")
    ap.add_argument("--only")
    args = ap.parse_args()
    shared = os.path.abspath(args.shared)
    model = os.path.join(shared, "weights", "mobilenet_v2_1.0_224.onnx")
    if not os.path.isfile(model):
        print(f"SKIP: no model at {model}")
        return 0
    failures = 0
    with tempfile.TemporaryDirectory(prefix="mnv2-golden-") as tmp:
        tmp = os.path.realpath(tmp)
        prepare_eval_dir(tmp, shared)
        env = dict(os.environ, MNV2_MODEL=model, MNV2_CPU_THREADS=str(args.threads),
                   MNV2_CACHE_DIR=os.path.join(tmp, "cache"), MNV2_GPU_PLUGIN=os.path.join(tmp, "no-gpu-plugin.so"),
                   LC_ALL="C")
        topo_for = topology_source(args.mnv2, env)
        info = subprocess.run([args.mnv2, "info"], capture_output=True, text=True, env=env, timeout=60).stdout
        decodes = "image decoding none" not in info
        for case in case_list(tmp, shared):
            if args.only and case["name"] != args.only:
                continue
            if case.get("decodes") and not decodes:
                print(f"skip {case['name']}: this build decodes no image files ('mnv2 info': image decoding none)")
                continue
            golden_path = os.path.join(CASES_DIR, case["name"] + ".json")
            try:
                got = run_case(args.mnv2, shared, tmp, case, env)
                # The output must keep every promise before it is recorded or compared (promises.py).
                got_promised = promised(got, case, topo_for, args.threads)
                if args.update:
                    os.makedirs(CASES_DIR, exist_ok=True)
                    with open(golden_path, "w") as f:
                        json.dump(got, f, indent=1)
                        f.write("\n")
                    print(f"recorded {case['name']}")
                    continue
                # The recording was made on another CPU with another thread count: its own bounds are its own.
                want = promised(load_golden(golden_path, case), case, topo_for, None)
                diff = compare(got_promised, want)
                if diff:
                    raise AssertionError(diff)
                print(f"ok   {case['name']}")
            except Exception as e:  # noqa: BLE001 (one case's failure, whatever it is, is that case's)
                failures += 1
                print(f"FAIL {case['name']}: {e}")
    if failures:
        print(f"{failures} golden case(s) differ; if the change is intended, re-record with --update and review "
              "the diff of tests/cli/golden/cases/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
