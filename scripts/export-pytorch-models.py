#!/usr/bin/env python3
"""Exports torchvision MobileNetV2 models the way users do today, with PyTorch's ONNX exporter, and
writes a float64 PyTorch reference for each, so that `mnv2` can be checked against PyTorch itself.

Needs PyTorch, torchvision, onnx and onnxscript (the GPU machine has them; there is no internet there,
so the weights are random, seeded: only logits are meaningful). Usage:

    python3 scripts/export-pytorch-models.py OUT_DIR [--only NAME,...]

For each variant NAME it writes into OUT_DIR:
  NAME.onnx (+ NAME.onnx.data where the exporter keeps external data)  the exported model
  NAME.input.f32    raw little-endian float32 NCHW input, batch 2, N(0,1) (the preprocessed domain)
  NAME.logits.f64   raw little-endian float64 logits of PyTorch's float64 CPU forward of that input
and a manifest.json describing every variant (exporter settings, versions, shapes, IR/opset, and
onnxruntime's float32 logits error against the reference where onnxruntime is installed).
"""
import argparse
import json
import os
import sys
import time
import zlib

import numpy as np
import torch
import torchvision

# name: (width multiplier, input side, classes, exporter keyword arguments)
VARIANTS = {
    # PyTorch 2.11's defaults: the torch.export-based exporter, external data, its default opset (20 in 2.11).
    "tv_w100_224_default": (1.0, 224, 1000, {}),
    "tv_w050_160_default": (0.5, 160, 1000, {}),
    "tv_w075_192_default": (0.75, 192, 1000, {}),
    "tv_w140_256_default": (1.4, 256, 1000, {}),
    # Weights inlined in the .onnx (external_data=False), a newer opset, a dynamic batch dimension.
    "tv_w050_160_inline": (0.5, 160, 1000, {"external_data": False}),
    "tv_w035_128_opset23": (0.35, 128, 1000, {"opset_version": 23}),
    "tv_w050_224_dynbatch": (0.5, 224, 1000, {"dynamic_batch": True}),
    # Small enough to keep in the repository's test data (about 1.7 MB): 10 classes.
    "tv_w035_96_c10_default": (0.35, 96, 10, {}),
    # The TorchScript-based exporter that older tutorials use (dynamo=False), opset 17, inlined.
    "tv_w050_160_legacy": (0.5, 160, 1000, {"dynamo": False, "opset_version": 17}),
}


def export(name, width, side, classes, opts, out_dir):
    torch.manual_seed(zlib.crc32(name.encode()))
    model = torchvision.models.mobilenet_v2(width_mult=width, num_classes=classes)
    # Random but realistic batch-norm statistics, so that folding them is exercised (fresh models have
    # mean 0, var 1, which would hide a wrong fold).
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    model.eval()
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(2, 3, side, side, generator=gen, dtype=torch.float32)
    path = os.path.join(out_dir, name + ".onnx")
    kwargs = {}
    dynamo = opts.get("dynamo", True)
    if not dynamo:
        kwargs["dynamo"] = False
    if "external_data" in opts:
        kwargs["external_data"] = opts["external_data"]
    if "opset_version" in opts:
        kwargs["opset_version"] = opts["opset_version"]
    if opts.get("dynamic_batch"):
        kwargs["dynamic_shapes"] = ({0: torch.export.Dim("batch", min=1, max=1024)},)
        kwargs["input_names"] = ["input"]
    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(model, (x,), path, **kwargs)
    took = time.time() - t0
    with torch.no_grad():
        ref = model.double()(x.double()).numpy()
    x.numpy().astype("<f4").tofile(os.path.join(out_dir, name + ".input.f32"))
    ref.astype("<f8").tofile(os.path.join(out_dir, name + ".logits.f64"))

    info = {"name": name, "width_mult": width, "input_side": side, "classes": classes, "batch": 2,
            "exporter": "torch.export (dynamo=True)" if dynamo else "TorchScript (dynamo=False)",
            "options": {k: v for k, v in opts.items()}, "export_s": round(took, 2)}
    import onnx
    m = onnx.load(path, load_external_data=False)
    info["ir_version"] = m.ir_version
    info["opsets"] = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    info["producer"] = m.producer_name + " " + m.producer_version
    info["ops"] = sorted({n.op_type for n in m.graph.node})
    info["external_data_files"] = sorted({e.value for t in m.graph.initializer for e in t.external_data
                                          if e.key == "location"})
    info["files"] = sorted(f for f in os.listdir(out_dir) if f.startswith(name + "."))
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        y = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
        info["onnxruntime_rel_l2"] = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
    except Exception as e:  # a report, not a failure: our own checks judge the model
        info["onnxruntime_error"] = str(e)[:400]
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    only = [s for s in args.only.split(",") if s]
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__, "variants": []}
    try:
        import onnx, onnxscript
        manifest["onnx"] = onnx.__version__
        manifest["onnxscript"] = onnxscript.__version__
    except Exception:
        pass
    failed = 0
    for name, (w, s, c, opts) in VARIANTS.items():
        if only and name not in only:
            continue
        try:
            info = export(name, w, s, c, opts, args.out_dir)
        except Exception as e:
            info = {"name": name, "error": repr(e)[:2000]}
            failed += 1
        manifest["variants"].append(info)
        print(json.dumps(info), flush=True)
    with open(os.path.join(args.out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
