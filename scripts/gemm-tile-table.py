#!/usr/bin/env python3
# Writes the measured FFMA GEMM tile table (engine/backends/cuda/gemm_tile_rules.cpp, kSm90Fp32Tiles) from a
# mnv2_gemm_bench JSON file: for every GEMM shape it timed, the forced tile with the lowest median. The unit test
# GemmTileRules.TableIsTheBenchFilesFastestTiles reads the same file and fails where the table and it disagree.
# --from-batch B leaves out the shapes of smaller batches (the table's from_batch says why).
#   scripts/gemm-tile-table.py --from-batch 8 docs/bench/h200-2026-11-29-issue32/suite-gemm/gemm_bench.json
import json
import sys


def rows(path, from_batch):
    with open(path) as f:
        bench = json.load(f)
    seen = {}
    for b in bench["batches"]:
        if b["batch"] < from_batch:
            continue
        for r in b["rows"]:
            key = (r["m"], r["n"], r["k"])
            tile = r["best_tile"]["variant"].split()[1]  # "gemm 128x32w vec4 splitk2": the tile
            if key in seen and seen[key][0] != tile:
                sys.exit(f"{path}: shape {key} timed twice with different winners")
            seen[key] = (tile, b["batch"], r["layer"], r["best_tile"]["median_ms"], r["cublas"]["median_ms"])
    return bench["device"], seen


def main():
    args = sys.argv[1:]
    from_batch = 1
    if args[:1] == ["--from-batch"] and len(args) > 1:
        from_batch, args = int(args[1]), args[2:]
    if len(args) != 1:
        sys.exit("usage: gemm-tile-table.py [--from-batch B] GEMM_BENCH.json")
    device, seen = rows(args[0], from_batch)
    print(f"    // {device}: {len(seen)} shapes, batch: layer (its median ms, cuBLAS's)")
    for (m, n, k), (tile, batch, layer, best, cublas) in sorted(seen.items(), key=lambda x: (x[1][1], x[0])):
        print(f'    {{{m}, {n}, {k}, "{tile}"}},  // b{batch}: {layer} ({best:.4f}, {cublas:.4f})')


if __name__ == "__main__":
    main()
