#!/usr/bin/env bash
# helper "block2", device call 3 (fused block v3: two barriers per chunk). Everything goes into one tarball,
# $OUT/call3.tar.gz, rebuilt after every step (the device tool returns a few files only, and a timeout keeps it).
# Order: bench none vs block, ncu on blocks 2-8's fused kernels, block tests, CUPTI per-layer profiles, memcheck.
set -u
start=$SECONDS
cd "$(dirname "$0")"
tar xJf bundle.tar.xz && cd bundle
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-} MNV2_SHARED_DIR=$PWD/shared
export MNV2_MODEL=$PWD/shared/weights/mobilenet_v2_1.0_224.onnx
out=${OUT:-/tmp/out}; mkdir -p "$out"
res=/tmp/call3; rm -rf "$res"; mkdir -p "$res"
pack() { tar -C /tmp -czf "$out/call3.tar.gz.tmp" call3 && mv "$out/call3.tar.gz.tmp" "$out/call3.tar.gz"; }
st() { echo "$*" | tee -a "$res/status.txt"; pack; }
left() { echo $((196 - (SECONDS - start))); }  # seconds left of the call's budget
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$res/nvidia-smi.csv" 2>&1
st "unpacked at $((SECONDS - start)) s"
for f in none block; do
  t0=$SECONDS
  timeout 40 ./bin/mnv2 bench --backends cuda --precision fp16 --batch 1,8,64,256 --warmup 20 --iters 100 --cuda-fusion $f \
    --json "$res/bench_fp16_$f.json" > "$res/bench_fp16_$f.log" 2>&1
  st "bench $f rc=$? $((SECONDS - t0)) s"
done
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [[ -n $ncu ]]; then
  t0=$SECONDS
  "$ncu" --version > "$res/ncu_version.txt" 2>&1
  # The fused kernels of blocks 2..8 (launches 0..6 of fused_block at batch 256), one pass each, layer by layer.
  secs=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
        --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis
        --section SchedulerStats)
  timeout $(( $(left) > 75 ? 75 : $(left) )) "$ncu" --kernel-name regex:fused_block --launch-skip 0 --launch-count 7 \
    "${secs[@]}" -f -o "$res/ncu_block_b256" \
    ./bin/mnv2 profile --backend cuda --precision fp16 --cuda-fusion block --cuda-graph off --batch 256 \
    --warmup 0 --iters 1 --timing event > "$res/ncu_run.log" 2>&1
  st "ncu rc=$? $((SECONDS - t0)) s"
  if [[ -f $res/ncu_block_b256.ncu-rep ]]; then
    "$ncu" --import "$res/ncu_block_b256.ncu-rep" --page details > "$res/ncu_details.txt" 2>&1
    "$ncu" --import "$res/ncu_block_b256.ncu-rep" --page raw --csv > "$res/ncu_raw.csv" 2>&1
    st "ncu export rc=$? $((SECONDS - t0)) s"
  fi
else
  st "ncu not installed here: not run"
fi
t0=$SECONDS
timeout 40 ./bin/mnv2_gpu_tests --gtest_filter='KernelFusedBlock*:*FusedBlock*:*BlockFusion*' > "$res/gpu_tests_block.log" 2>&1
st "block tests rc=$? $((SECONDS - t0)) s"
for f in block none; do
  t0=$SECONDS
  l=$(left); (( l > 30 )) && l=30
  (( l > 5 )) || { st "profile $f skipped: no time"; continue; }
  timeout $l ./bin/mnv2 profile --backend cuda --precision fp16 --cuda-fusion $f --batch 256 --timing cupti --exec graph \
    --warmup 5 --iters 20 --csv "$res/profile_${f}_fp16_graph_b256.csv" > "$res/profile_${f}_fp16_graph_b256.log" 2>&1
  st "profile $f b256 rc=$? $((SECONDS - t0)) s"
done
t0=$SECONDS
l=$(left)
if (( l > 15 )); then
  timeout $l compute-sanitizer --tool memcheck --error-exitcode 9 ./bin/mnv2_gpu_tests --gtest_filter='KernelFusedBlock*' \
    > "$res/memcheck_kernel.log" 2>&1
  st "memcheck kernel rc=$? $((SECONDS - t0)) s"
fi
st "total $((SECONDS - start)) s"
grep -E "^cuda" "$res"/bench_fp16_*.log
grep -E "FAILED|PASSED" "$res/gpu_tests_block.log" | head
