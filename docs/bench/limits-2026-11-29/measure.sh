#!/usr/bin/env bash
# Issue 30's budgets measured on this machine: the CliBudgets tests (each finding's input through the real mnv2
# under GNU time) and classify of 64 and 6,000 photographs with the real model. Usage, from the repository root
# after scripts/build.sh: bash docs/bench/limits-2026-11-29/measure.sh [BUILD_DIR]  (writes beside itself)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
shared=${MNV2_SHARED_DIR:-$root/../shared}
{
  echo "# $(date -u '+%F %T UTC'), commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# MemAvailable $(awk '/MemAvailable/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
} >"$here/machine.txt"
"$build/tests/mnv2_cli_tests" --gtest_filter='CliBudgets.*' >"$here/cli_budgets.log" 2>&1 || true
grep -E '^\[( measured|       OK|  FAILED) ' "$here/cli_budgets.log" >"$here/cli_budgets.txt" || true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$shared/images/cat.bmp" "$work/c.bmp"
: >"$here/classify_many.txt"
for n in 64 2000 6000; do
  # Named from the folder: 6,000 full paths would pass the kernel's 128 KiB limit on one shell argument.
  (cd "$work" && /usr/bin/time -f '%e %M' -o time.txt "$build/app/mnv2" classify --model "$shared/weights/mobilenet_v2_1.0_224.onnx" \
    --backend cpu --json $(printf 'c.bmp %.0s' $(seq "$n")) >out.json 2>err.txt) && rc=0 || rc=$?
  read -r seconds kib < <(tail -n 1 "$work/time.txt")
  results=$(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))))" "$work/out.json")
  printf 'classify --backend cpu --json, %5d files of cat.bmp: exit %d, %6.2f s, peak %d MiB, %d results\n' \
    "$n" "$rc" "$seconds" $((kib / 1024)) "$results" | tee -a "$here/classify_many.txt"
done
