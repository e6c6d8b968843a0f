#!/usr/bin/env python3
"""Files at and past the read budgets of mnv2/input_files.h, for the memory figures of docs/LIMITS.md.

  scripts/make-limit-files.py SEED_REPORT.json OUT_DIR

SEED_REPORT.json is a real compare report (mnv2 compare --backends cpu-ref,cpu --json ...). Writes:
  largest-report.json   the largest legal report: 4 runs of a 4096-layer model (the importer's bound), every
                        layer its own step with a diff, built from the seed's first layer and step
  oversized-report.json a 63 MiB file of the shape with the most memory per byte ([{},{},...])
  largest-cache.json    a roofline cache of 3000 entries (just under its 1 MiB budget)
  oversized-cache.json  a 150 MiB cache (over the size budget)
"""
import copy
import json
import sys

seed, out = sys.argv[1], sys.argv[2]
doc = json.load(open(seed))
layers = 4096
runs = []
for r in (doc["runs"] * 2)[:4]:
    r = copy.deepcopy(r)
    tl, ts = r["layers"][1], r["steps"][1]
    r["layers"], r["steps"] = [], []
    for i in range(layers):
        l = copy.deepcopy(tl)
        l.update(index=i, step=i, name=f"layer{i}", inputs=[i - 1])
        s = copy.deepcopy(ts)
        s.update(step=i, name=f"layer{i}", layers=[i])
        r["layers"].append(l)
        r["steps"].append(s)
    if "diff" in r:
        r["diff"]["compared"] = [True] * layers
        r["diff"]["first_divergent_layer"] = -1
        for l in r["layers"]:
            l.setdefault("diff", {"max_abs": 0.0, "rel_l2": 0.0, "cosine": 1.0, "finite": True})
    r["kernel_records"] = []
    r.pop("timeline", None)  # its spans name the template's steps
    runs.append(r)
doc["runs"] = runs
with open(f"{out}/largest-report.json", "w") as f:
    json.dump(doc, f, indent=1)

n = (63 << 20) // 3
with open(f"{out}/oversized-report.json", "w") as f:
    f.write("[" + ",".join(["{}"] * n) + "]")

entry = {"device": "NVIDIA H200", "key": "", "bandwidth_gb_s": 4000.0, "gflop_s": 50000.0,
         "ridge_flop_per_byte": 12.5, "method": "device-to-device copy of 1 GiB and cuBLAS GEMM n=8192"}
devices = {}
for i in range(3000):
    e = dict(entry, key=f"NVIDIA H200|GPU-{i:08d}|1980 MHz")
    devices[e["key"]] = e
with open(f"{out}/largest-cache.json", "w") as f:
    json.dump({"schema": "mnv2.roofline-cache/1", "devices": devices}, f)
with open(f"{out}/oversized-cache.json", "w") as f:
    f.write('{"schema": "mnv2.roofline-cache/1", "devices": {' + ",".join(
        f'"k{i}": {json.dumps(entry)}' for i in range((150 << 20) // 220)) + "}}")
