#!/usr/bin/env bash
# The kernel lab's stem, pool and classifier slots and the reworked dw_improved on the H200 (issue 18), one device
# call: the lab's GPU tests, `mnv2 lab` on the new examples (full stdout kept, expected exit codes in the summary),
# and dw_naive beside dw_improved at batch 1 and 8 (the batch-1 question of docs/bench/h200-2026-11-26-lab).
# Run from the repository root with the bundle (scripts/device-bundle.sh) and this script in build-hx-lab2/:
#   bash build-hx-lab2/run.sh        (outputs under $OUT: summary.txt and results.tar.gz with everything)
set -u
final=${OUT:-/tmp/lab2-out}
out=/tmp/lab2-work
rm -rf "$out" && mkdir -p "$out" "$final"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/bundle && tar -xJf "$here/bundle.tar.xz" -C /tmp && cd /tmp/bundle || exit 1
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-} MNV2_SHARED_DIR=$PWD/shared
export MNV2_MODEL=$PWD/shared/weights/mobilenet_v2_1.0_224.onnx MNV2_CACHE_DIR=/tmp/mnv2-lab2-cache
ex=$PWD/share/mnv2-profiler/lab/examples
t0=$SECONDS
lap() { echo "== $1: exit $2 (expected $3), $((SECONDS - t0)) s" | tee -a "$out/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$out/nvidia-smi.txt" 2>&1
timeout 400 ./bin/mnv2_gpu_tests --gtest_filter='LabGpu.*' >"$out/gpu_tests_lab.txt" 2>&1; lap gpu_tests_lab $? 0
lab() {  # lab NAME EXPECTED ARGS...: full stdout and stderr to NAME.txt
  local name=$1 expected=$2; shift 2
  echo "\$ mnv2 lab $*" >"$out/$name.txt"
  timeout 200 ./bin/mnv2 lab "$@" >>"$out/$name.txt" 2>&1
  local rc=$?
  echo "exit $rc" >>"$out/$name.txt"
  lap "$name" $rc "$expected"
}
lab stem_naive 0 --slot stem --kernel "$ex/stem_naive.cu" --timeout 180 --json "$out/stem_naive.json"
lab stem_naive_fp16_b8 0 --slot stem --kernel "$ex/stem_naive.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/stem_naive_fp16_b8.json"
lab pool_naive 0 --slot pool --kernel "$ex/pool_naive.cu" --timeout 180 --json "$out/pool_naive.json"
lab pool_naive_fp16_b8 0 --slot pool --kernel "$ex/pool_naive.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/pool_naive_fp16_b8.json"
lab fc_naive 0 --slot classifier --kernel "$ex/fc_naive.cu" --timeout 180 --out "$out/fc_naive"
lab fc_naive_fp16_b8 0 --slot classifier --kernel "$ex/fc_naive.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/fc_naive_fp16_b8.json"
lab fc_in_pool_slot 1 --slot pool --kernel "$ex/fc_naive.cu" --no-time --json "$out/fc_in_pool_slot.json"
lab block_refused 2 --slot block --kernel "$ex/dw_naive.cu"
lab dw_naive_b1 0 --slot depthwise --kernel "$ex/dw_naive.cu" --timeout 180 --json "$out/dw_naive_b1.json"
lab dw_improved_b1 0 --slot depthwise --kernel "$ex/dw_improved.cu" --timeout 180 --json "$out/dw_improved_b1.json"
lab dw_naive_b8 0 --slot depthwise --kernel "$ex/dw_naive.cu" --batch 8 --timeout 180 --json "$out/dw_naive_b8.json"
lab dw_improved_b8 0 --slot depthwise --kernel "$ex/dw_improved.cu" --batch 8 --timeout 180 --json "$out/dw_improved_b8.json"
lab dw_improved_fp16_b8 0 --slot depthwise --kernel "$ex/dw_improved.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/dw_improved_fp16_b8.json"
# Sums of the per-layer CUPTI medians (user / ours / cuDNN, us) and end to end, from each result file.
for j in "$out"/*.json "$out"/fc_naive/lab.json; do
  [[ -f $j ]] || continue
  python3 - "$j" >>"$out/summary.txt" 2>&1 <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
ls = r.get("layers", [])
s = lambda k: sum(l[k] for l in ls if l.get(k) is not None)
e = r.get("end_to_end") or {}
print(f'{sys.argv[1].split("/")[-1]}: {r["status"]}, {len(ls)} layer(s), batch {r["batch"]} {r["precision"]}: '
      f'user {s("user_us"):.1f} / ours {s("ours_us"):.1f} / cudnn {s("cudnn_us"):.1f} us; '
      f'end to end user {e.get("user_ms")} / ours {e.get("ours_unfused_ms")} / cudnn {e.get("cudnn_ms")} ms')
PY
done
tar -C "$out" -czf "$final/results.tar.gz" . && cp "$out/summary.txt" "$final/"
