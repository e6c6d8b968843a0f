#!/usr/bin/env python3
# Writes the measured block-split table (engine/backends/cuda/block_split_rules.cpp, kSm90Rows) from a
# mnv2_stage_bench JSON file: for every block shape and batch it timed, the tile x split with the lowest median µs a
# stage. The unit test BlockSplitRules.TableIsTheBenchFilesFastest reads the same file and fails where the table
# and it disagree.
#   scripts/block-split-table.py docs/bench/h200-2026-11-30-stage/stage_bench.json
import json
import re
import sys

VARIANT = re.compile(r"^block tile (\d+)x(\d+) chunk \d+ items \d+(?: split (\d+))?$")


def parse_variant(text):
    m = VARIANT.match(text)
    if not m:
        sys.exit(f"not a block variant: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)


def rows(path):
    with open(path) as f:
        bench = json.load(f)
    out = []
    for b in bench["batches"]:
        for s in b["shapes"]:
            h, w = (int(x) for x in s["map"].split("x"))
            th, tw, splits = parse_variant(s["best_variant"])
            out.append((b["batch"], s["cin"], s["expanded"], s["cout"], h, w, s["stride"], th, tw, splits, s["name"],
                        s["planner_us"], s["best_us"]))
    return bench["gpu"], out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: block-split-table.py STAGE_BENCH.json")
    gpu, table = rows(sys.argv[1])
    print(f"    // {gpu}: {len(table)} rows, batch: blocks (µs a stage: unsplit as planned, this)")
    for r in table:
        print(f"    {{{', '.join(str(x) for x in r[:10])}}},  // b{r[0]}: {r[10]} ({r[11]:.2f}, {r[12]:.2f})")


if __name__ == "__main__":
    main()
