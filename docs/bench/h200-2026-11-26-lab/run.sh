#!/usr/bin/env bash
# The kernel lab on the H200 (issue 18), one device call: the lab's GPU tests, `mnv2 lab` on every example
# (full stdout kept), and compute-sanitizer on dw_naive through the command line the lab printed.
# Run from the repository root with the bundle (scripts/device-bundle.sh) and this script in build-hx-lab/:
#   bash build-hx-lab/run.sh        (outputs under $OUT: summary.txt and results.tar.gz with everything)
set -u
final=${OUT:-/tmp/lab-out}
out=/tmp/lab-work  # everything is written here, then packed into $final (the device tool returns 8 files)
rm -rf "$out" && mkdir -p "$out" "$final"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/bundle && tar -xJf "$here/bundle.tar.xz" -C /tmp && cd /tmp/bundle || exit 1
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-} MNV2_SHARED_DIR=$PWD/shared
export MNV2_MODEL=$PWD/shared/weights/mobilenet_v2_1.0_224.onnx MNV2_CACHE_DIR=/tmp/mnv2-lab-cache
ex=$PWD/share/mnv2-profiler/lab/examples
t0=$SECONDS
lap() { echo "== $1: exit $2, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$out/nvidia-smi.txt" 2>&1
timeout 200 ./bin/mnv2_gpu_tests --gtest_filter='LabGpu.*' >"$out/gpu_tests_lab.txt" 2>&1; lap gpu_tests_lab $?
lab() {  # lab NAME ARGS...: full stdout and stderr to NAME.txt
  local name=$1; shift
  echo "\$ mnv2 lab $*" >"$out/$name.txt"
  timeout 200 ./bin/mnv2 lab "$@" >>"$out/$name.txt" 2>&1
  local rc=$?
  echo "exit $rc" >>"$out/$name.txt"
  lap "$name" $rc
}
lab dw_naive --slot depthwise --kernel "$ex/dw_naive.cu" --timeout 180 --json "$out/dw_naive.json"
lab dw_improved --slot depthwise --kernel "$ex/dw_improved.cu" --timeout 180 --out "$out/dw_improved"
lab dw_naive_b8 --slot depthwise --kernel "$ex/dw_naive.cu" --batch 8 --timeout 180 --json "$out/dw_naive_b8.json"
lab dw_improved_b8 --slot depthwise --kernel "$ex/dw_improved.cu" --batch 8 --timeout 180 --json "$out/dw_improved_b8.json"
lab dw_naive_fp16_b8 --slot depthwise --kernel "$ex/dw_naive.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/dw_naive_fp16_b8.json"
lab dw_improved_fp16_b8 --slot depthwise --kernel "$ex/dw_improved.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/dw_improved_fp16_b8.json"
lab dw_wrong --slot depthwise --kernel "$ex/dw_wrong.cu" --json "$out/dw_wrong.json"
lab dw_oob --slot depthwise --kernel "$ex/dw_oob.cu" --json "$out/dw_oob.json"
lab dw_syntax --slot depthwise --kernel "$ex/dw_syntax.cu" --json "$out/dw_syntax.json"
lab pw_naive --slot pointwise --kernel "$ex/pw_naive.cu" --timeout 180 --json "$out/pw_naive.json"
lab pw_naive_fp16_b8 --slot pointwise --kernel "$ex/pw_naive.cu" --precision fp16 --batch 8 --timeout 180 --json "$out/pw_naive_fp16_b8.json"
# compute-sanitizer on dw_naive through the line the lab printed ("memory checker: ...").
cmd=$(sed -n 's/^memory checker: //p' "$out/dw_naive.txt" | head -1)
echo "\$ $cmd" >"$out/sanitizer_dw_naive.txt"
[[ -n $cmd ]] && timeout 150 bash -c "$cmd" >>"$out/sanitizer_dw_naive.txt" 2>&1
lap sanitizer_dw_naive $?
# The device tool brings back 8 files: everything in one archive, plus the summary.
tar -C "$out" -czf "$final/results.tar.gz" . && cp "$out/summary.txt" "$final/"
