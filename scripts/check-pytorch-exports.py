#!/usr/bin/env python3
"""Runs `mnv2 classify` on every model that scripts/export-pytorch-models.py exported, on each backend, and
compares the logits with PyTorch's float64 CPU output of the same input (relative L2 per image, top-5).
Needs only numpy (and the mnv2 binary). Usage:

    python3 scripts/check-pytorch-exports.py EXPORT_DIR MNV2 [--backends cpu,cpu-ref,cudnn,cuda] [--bound 1e-5]

Prints one line per (model, backend) and a table; exits 1 when a fp32 run misses the bound or the top-5.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export_dir")
    ap.add_argument("mnv2")
    ap.add_argument("--backends", default="cpu,cpu-ref,cudnn,cuda")
    ap.add_argument("--bound", type=float, default=1e-5)
    args = ap.parse_args()
    with open(os.path.join(args.export_dir, "manifest.json")) as f:
        manifest = json.load(f)
    print(f"PyTorch {manifest.get('torch')}, torchvision {manifest.get('torchvision')}, onnx {manifest.get('onnx')}, "
          f"onnxscript {manifest.get('onnxscript')}")
    rows, failed = [], 0
    for v in manifest["variants"]:
        name = v["name"]
        if "error" in v:
            print(f"{name}: export failed: {v['error'][:200]}")
            continue
        model = os.path.join(args.export_dir, name + ".onnx")
        tensor = os.path.join(args.export_dir, name + ".input.f32")
        ref = np.fromfile(os.path.join(args.export_dir, name + ".logits.f64"), dtype="<f8").reshape(v["batch"], -1)
        side = v["input_side"]
        for backend in args.backends.split(","):
            cmd = [args.mnv2, "classify", "--model", model, "--backend", backend, "--tensor", tensor,
                   "--input-size", f"{side}x{side}", "--top", "5", "--json"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                failed += 1
                rows.append((name, backend, "FAILED", p.stderr.strip().splitlines()[-1:] or [""]))
                print(f"{name} {backend}: exit {p.returncode}: {p.stderr.strip()[:300]}")
                continue
            out = json.loads(p.stdout)
            worst, top_ok = 0.0, True
            for i, image in enumerate(out):
                got = np.array(image["logits"], dtype=np.float64)
                r = ref[i]
                worst = max(worst, float(np.linalg.norm(got - r) / np.linalg.norm(r)))
                top_ok &= [t["index"] for t in image["top5"]] == list(np.argsort(-r)[:5])
            ok = worst < args.bound and top_ok
            failed += 0 if ok else 1
            warnings = [w for w in (out[0].get("warnings") or [])]
            rows.append((name, backend, f"{worst:.2e}", "top-5 equal" if top_ok else "TOP-5 DIFFERS"))
            print(f"{name} (w {v['width_mult']}, {side}x{side}, {v['classes']} classes, IR {v.get('ir_version')}, "
                  f"opset {v.get('opsets')}, {v['exporter']}, ext data {bool(v.get('external_data_files'))}) "
                  f"{backend}: rel L2 {worst:.2e}, {'top-5 equal' if top_ok else 'TOP-5 DIFFERS'}"
                  + (f"; warnings: {warnings}" if warnings else ""))
    print("\nmodel | backend | worst rel L2 vs PyTorch float64 | top-5")
    for r in rows:
        print(" | ".join(str(x) for x in r))
    print(f"\n{len(rows) - failed} of {len(rows)} within {args.bound:g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
