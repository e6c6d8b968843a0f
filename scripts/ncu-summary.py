#!/usr/bin/env python3
# Summarises Nsight Compute raw CSV files (ncu --nvtx ... --csv --page raw --print-units base --log-file F, one
# mnv2 run per file; scripts/device-run.sh section r3ncu) by metric name, never by ncu's human-readable text:
# per file, the kernels of the last whole run (kernels inside an NVTX step range; prepare-time kernels have none),
# their summed duration, duration-weighted speed of light (compute and memory throughput against peak), DRAM
# throughput, achieved occupancy, issue-slot use, the FMA and tensor pipes, the top warp stall reasons, and the
# slowest kernels with the same figures.
#   scripts/ncu-summary.py [--json OUT] FILE.csv[.xz]...
import csv
import json
import lzma
import re
import sys

SOL_SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
TIME = "gpu__time_duration.sum"
PATTERNS = {  # figure: a regex over metric names, the first match wins
    "dram": r"^gpu__dram_throughput\.avg\.pct_of_peak_sustained_elapsed$|^dram__throughput\.avg\.pct_of_peak_sustained_elapsed$",
    "issue": r"^sm__issue_active\.avg\.pct_of_peak_sustained_(active|elapsed)$",
    "fma_pipe": r"^sm__inst_executed_pipe_fma\.avg\.pct_of_peak_sustained_active$|^sm__pipe_fma_cycles_active\.avg\.pct_of_peak_sustained_active$",
    "mma_pipe": r"^sm__inst_executed_pipe_tensor_op_hmma\.avg\.pct_of_peak_sustained_active$",
    "wgmma_pipe": r"^sm__inst_executed_pipe_tensor_op_gmma\.avg\.pct_of_peak_sustained_active$",
    "theoretical_occupancy": r"^sm__maximum_warps_per_active_cycle_pct$",
}
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def read_rows(path):
    opener = lzma.open if path.endswith(".xz") else open  # the files kept under docs/bench are xz-compressed
    with opener(path, "rt", newline="", errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise SystemExit(f"{path}: no CSV header (\"ID\",...): ncu did not profile anything")
    rows = list(csv.reader(lines[start:]))
    header, body = rows[0], rows[1:]
    # --print-units base adds a units row under the header (its ID cell is empty)
    body = [r for r in body if len(r) == len(header) and r[0].strip() and number(r[0]) is not None]
    return header, [dict(zip(header, r)) for r in body]


def step_of(row, nvtx_columns):
    # A push/pop range stack as ncu prints it: `TID  "<domain>:NAME:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg" `
    # per range, innermost last; NAME may hold spaces, '+' and ':'; the six fields after it have no ':'.
    for c in nvtx_columns:
        text = row.get(c, "")
        ranges = re.findall(r'"<[^>]*>:(.*?)(?::[^:"]*){6}"', text)
        if ranges:
            return ranges[-1]
    return ""


def last_run(rows, nvtx_columns):
    stepped = [(step_of(r, nvtx_columns), r) for r in rows]
    stepped = [(s, r) for s, r in stepped if s]
    if not stepped:
        return rows, 1  # no NVTX column: every kernel (one run assumed)
    first = stepped[0][0]
    runs, current, seen_other = [], [], False
    for s, r in stepped:
        if s == first and seen_other:
            runs.append(current)
            current, seen_other = [], False
        if s != first:
            seen_other = True
        current.append((s, r))
    runs.append(current)
    return [dict(r, _step=s) for s, r in runs[-1]], len(runs)


def weighted(kernels, metric):
    pairs = [(k["time"], k[metric]) for k in kernels if k.get(metric) is not None]
    total = sum(t for t, _ in pairs)
    return sum(t * v for t, v in pairs) / total if total > 0 else None


def summarise(path):
    header, rows = read_rows(path)
    nvtx_columns = [c for c in header if "Push/Pop" in c or "NVTX" in c.upper() or c.startswith("thread Domain")]
    chosen = {name: next((c for c in header if re.match(p, c)), None) for name, p in PATTERNS.items()}
    stalls = [c for c in header if STALL.match(c)]
    run, runs = last_run(rows, nvtx_columns)
    kernels = []
    for r in run:
        t = number(r.get(TIME))
        if t is None:
            continue
        k = {"name": r.get("Kernel Name", "?"), "step": r.get("_step", ""), "time": t * 1e-3,  # ns -> us
             "sol_sm": number(r.get(SOL_SM)), "sol_mem": number(r.get(SOL_MEM)), "occupancy": number(r.get(OCC)),
             "registers": r.get("launch__registers_per_thread", ""), "grid": r.get("Grid Size", ""), "block": r.get("Block Size", "")}
        for name, c in chosen.items():
            k[name] = number(r.get(c)) if c else None
        st = sorted(((number(r.get(c)) or 0.0, STALL.match(c).group(1)) for c in stalls), reverse=True)[:3]
        k["stalls"] = [[n, round(v, 2)] for v, n in st if v > 0]
        kernels.append(k)
    figures = ["sol_sm", "sol_mem", "dram", "occupancy", "theoretical_occupancy", "issue", "fma_pipe", "mma_pipe",
               "wgmma_pipe"]
    out = {"file": path, "runs_in_file": runs, "kernels": len(kernels),
           "kernel_time_us": round(sum(k["time"] for k in kernels), 2),
           "weighted_pct": {f: (round(w, 1) if (w := weighted(kernels, f)) is not None else None) for f in figures},
           "metrics_used": {"time": TIME, "sol_sm": SOL_SM, "sol_mem": SOL_MEM, "occupancy": OCC,
                            **chosen},
           "slowest": sorted(kernels, key=lambda k: -k["time"])[:8]}
    # The kernels in SOL bands (duration share): what bounds the run as a whole.
    bands = {"sol >= 60% (throughput-bound)": 0.0, "sol 30-60%": 0.0, "sol < 30% (latency-bound)": 0.0}
    for k in kernels:
        sol = max(k["sol_sm"] or 0, k["sol_mem"] or 0)
        key = "sol >= 60% (throughput-bound)" if sol >= 60 else "sol 30-60%" if sol >= 30 else "sol < 30% (latency-bound)"
        bands[key] += k["time"]
    out["time_by_sol_band_us"] = {b: round(v, 1) for b, v in bands.items()}
    # Kernel time by kernel function (the name without its template arguments and parameters).
    families = {}
    for k in kernels:
        name = re.sub(r"^void\s+", "", k["name"]).split("(")[0].split("<")[0].split("::")[-1]
        t, n = families.get(name, (0.0, 0))
        families[name] = (t + k["time"], n + 1)
    out["time_by_kernel_us"] = {f: [round(t, 1), n] for f, (t, n) in sorted(families.items(), key=lambda x: -x[1][0])}
    return out


def fmt(v):
    return "-" if v is None else f"{v:.1f}"


def main():
    args = sys.argv[1:]
    json_out = None
    if args[:1] == ["--json"]:
        json_out, args = args[1], args[2:]
    if not args:
        raise SystemExit("usage: ncu-summary.py [--json OUT] FILE.csv...")
    results = []
    for path in args:
        try:
            s = summarise(path)
        except (OSError, SystemExit) as e:
            print(f"{path}: {e}")
            continue
        results.append(s)
        w = s["weighted_pct"]
        print(f"== {path}: {s['kernels']} kernels (last of {s['runs_in_file']} runs), {s['kernel_time_us']} us of "
              f"kernel time; duration-weighted % of peak: SM {fmt(w['sol_sm'])}, memory {fmt(w['sol_mem'])}, DRAM "
              f"{fmt(w['dram'])}, achieved occupancy {fmt(w['occupancy'])} (theoretical "
              f"{fmt(w['theoretical_occupancy'])}), issue {fmt(w['issue'])}, FMA pipe {fmt(w['fma_pipe'])}, mma pipe "
              f"{fmt(w['mma_pipe'])}, wgmma pipe {fmt(w['wgmma_pipe'])}")
        print("   time by SOL band (us): " + ", ".join(f"{b} {v}" for b, v in s["time_by_sol_band_us"].items()))
        print("   time by kernel (us, launches): " +
              ", ".join(f"{f} {t} ({n})" for f, (t, n) in s["time_by_kernel_us"].items()))
        for k in s["slowest"]:
            print(f"   {k['time']:7.2f} us  {k['step'][:34]:34} {k['name'][5:45]:40} grid {k['grid']:>14} "
                  f"regs {k['registers']:>3} SM {fmt(k['sol_sm'])} mem {fmt(k['sol_mem'])} DRAM {fmt(k['dram'])} "
                  f"occ {fmt(k['occupancy'])}/{fmt(k['theoretical_occupancy'])} issue {fmt(k['issue'])} fma "
                  f"{fmt(k['fma_pipe'])} mma {fmt(k['mma_pipe'])} stalls {k['stalls']}")
    if json_out:
        with open(json_out, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
