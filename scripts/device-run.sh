#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root with .device/ carried:
#   run(command="bash scripts/device-run.sh", carry=[".device"])
# In one call: every GPU test, profiles of the GPU backends with both timers, cross-backend comparisons on
# the shared photographs (their golden input tensors), and the benchmarks. Everything lands in
# $OUT/results.tar.gz (reports, logs) plus $OUT/summary.txt; the device tool returns at most 8 files.
# MNV2_DEVICE_SECTIONS picks parts (comma list of base, cuda, ncu, app; default all), e.g. for a kernel iteration:
#   run(command="MNV2_DEVICE_SECTIONS=cuda bash scripts/device-run.sh", carry=[".device"])
set -uo pipefail
sections=",${MNV2_DEVICE_SECTIONS:-base,cuda,ncu,app},"
want() { [[ $sections == *",$1,"* ]]; }
out=${OUT:-/tmp/mnv2-device-out}
mkdir -p "$out"
work=/tmp/mnv2-run
repo=$PWD
rm -rf /tmp/bundle "$work" && mkdir -p "$work"
tar -xJf .device/bundle.tar.xz -C /tmp || { echo "no bundle: run scripts/device-bundle.sh first"; exit 1; }
cd /tmp/bundle
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-} MNV2_SHARED_DIR=$PWD/shared
export MNV2_MODEL=$PWD/shared/weights/mobilenet_v2_1.0_224.onnx
summary=$work/summary.txt
step() { echo "== $*" | tee -a "$summary"; }
run() {  # run NAME CMD...: output to NAME.log, tail to the summary, status recorded
  local name=$1; shift
  step "$name: $*"
  local t0=$SECONDS
  "$@" >"$work/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL:-25}" "$work/$name.log" >>"$summary"
  echo "-- $name: exit $rc, $((SECONDS - t0)) s" | tee -a "$summary"
  cp "$summary" "$out/summary.txt"  # what ran so far comes back even if the call runs out of time
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$work/nvidia-smi.csv" 2>&1
cat "$work/nvidia-smi.csv" >>"$summary"
TAIL=30 run info ./bin/mnv2 info
if want base; then
TAIL=40 run gpu_tests ./bin/mnv2_gpu_tests --gtest_brief=1
TAIL=12 run profile_cudnn_event ./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --timing event \
  --warmup 20 --iters 200 --csv "$work/profile_cudnn_event_b1.csv" --json "$work/profile_cudnn_event_b1.json"
TAIL=12 run profile_cudnn_cupti ./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --timing cupti \
  --warmup 20 --iters 200 --csv "$work/profile_cudnn_cupti_b1.csv" --json "$work/profile_cudnn_cupti_b1.json" \
  --trace "$work/trace_cudnn_cupti_b1.json"
TAIL=12 run profile_cudnn_cupti_b64 ./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --timing cupti \
  --batch 64 --warmup 10 --iters 50 --csv "$work/profile_cudnn_cupti_b64.csv" --json "$work/profile_cudnn_cupti_b64.json"
for img in cat cat_720p grace_hopper hot_dog parrot; do
  TAIL=8 run "compare_$img" ./bin/mnv2 compare --backends cpu,cudnn --tensor "shared/golden/$img.input.f32" --timing cupti \
    --warmup 5 --iters 30 --csv "$work/compare_${img}.csv" --json "$work/compare_${img}.json"
done
TAIL=10 run compare_event_b64 ./bin/mnv2 compare --backends cpu,cudnn --tensor shared/golden/cat.input.f32 --timing event \
  --batch 64 --warmup 3 --iters 20 --json "$work/compare_event_b64.json"
for img in cat cat_720p grace_hopper hot_dog parrot; do
  TAIL=8 run "classify_$img" ./bin/mnv2 classify --backend cudnn --tensor "shared/golden/$img.input.f32" --top 3
done
TAIL=8 run bench_cudnn ./bin/mnv2 bench --backend cudnn --batch 1,8,64,256 --warmup 20 --iters 100 --json "$work/bench_cudnn.json"
# Precision modes of the cudnn backend (fp32 above): the bench at batch 1/64/256, and fp16 against the cpu
# reference (fp32) on a photograph, every layer.
for p in tf32 fp16; do
  TAIL=8 run "bench_cudnn_$p" ./bin/mnv2 bench --backend cudnn --precision $p --batch 1,64,256 --warmup 20 --iters 100 \
    --json "$work/bench_cudnn_$p.json"
  TAIL=8 run "compare_cudnn_${p}_cat" ./bin/mnv2 compare --backends cpu,cudnn --precision $p \
    --tensor shared/golden/cat.input.f32 --timing event --warmup 5 --iters 30 --json "$work/compare_cudnn_${p}_cat.json"
done
TAIL=6 run bench_cpu ./bin/mnv2 bench --backend cpu --batch 1,8 --warmup 5 --iters 30 --json "$work/bench_cpu.json"
fi

# ---- custom CUDA kernels backend (cuda) ----------------------------------------------------------------
# In order of what matters most should the call run out of time (the summary reaches $OUT after each step).
if want cuda; then
# Correctness: the kernel and backend tests (the fused expand+dw path included), CUPTI graph attribution.
TAIL=30 run cuda_tests ./bin/mnv2_gpu_tests --gtest_filter='*Cuda*:*Kernel*:ProfilerGpu*:TimingGpu*' --gtest_brief=1
# Benchmarks: end to end (upload .. download) and device-resident (input on the GPU, graph replay), both
# fast-path versions: v3 (MNV2_CUDA_FUSE=none, the default) and the fused expansion + depthwise.
TAIL=14 run bench_cuda ./bin/mnv2 bench --backends cuda,cudnn --batch 1,8,64,256 --warmup 20 --iters 100 \
  --json "$work/bench_cuda.json"
MNV2_CUDA_FUSE=expand_dw TAIL=8 run bench_cuda_fused ./bin/mnv2 bench --backends cuda --batch 1,8,64,256 --warmup 20 \
  --iters 100 --json "$work/bench_cuda_fused.json"
# Per-layer CUPTI times inside the CUDA graph replay (graph node ids recorded at capture), both versions.
profile_lines() { grep -E "end to end|per layer|per kind|WARNING|two-timer" "$work/$1.log" >>"$summary"; }
TAIL=0 run profile_cuda_graph_b1 ./bin/mnv2 profile --backend cuda --tensor shared/golden/cat.input.f32 --timing cupti \
  --exec graph --warmup 20 --iters 200 --csv "$work/profile_cuda_graph_b1.csv" --json "$work/profile_cuda_graph_b1.json" \
  --trace "$work/trace_cuda_graph_b1.json"
profile_lines profile_cuda_graph_b1
TAIL=0 run profile_cuda_cupti_b1 ./bin/mnv2 profile --backend cuda --tensor shared/golden/cat.input.f32 --timing cupti \
  --warmup 20 --iters 200 --csv "$work/profile_cuda_cupti_b1.csv" --json "$work/profile_cuda_cupti_b1.json"
profile_lines profile_cuda_cupti_b1
MNV2_CUDA_FUSE=expand_dw TAIL=0 run profile_cuda_fused_graph_b1 ./bin/mnv2 profile --backend cuda \
  --tensor shared/golden/cat.input.f32 --timing cupti --exec graph --warmup 20 --iters 200 \
  --csv "$work/profile_cuda_fused_graph_b1.csv" --json "$work/profile_cuda_fused_graph_b1.json"
profile_lines profile_cuda_fused_graph_b1
TAIL=0 run profile_cuda_graph_b256 ./bin/mnv2 profile --backend cuda --batch 256 --timing cupti --exec graph \
  --warmup 5 --iters 20 --csv "$work/profile_cuda_graph_b256.csv" --json "$work/profile_cuda_graph_b256.json"
profile_lines profile_cuda_graph_b256
MNV2_CUDA_FUSE=expand_dw TAIL=0 run profile_cuda_fused_graph_b256 ./bin/mnv2 profile --backend cuda --batch 256 \
  --timing cupti --exec graph --warmup 5 --iters 20 --csv "$work/profile_cuda_fused_graph_b256.csv" \
  --json "$work/profile_cuda_fused_graph_b256.json"
profile_lines profile_cuda_fused_graph_b256
TAIL=3 run profile_cuda_graph_event_refused ./bin/mnv2 profile --backend cuda --timing event --exec graph --iters 2
# Memory errors: the new kernel and the backend's fallbacks on small cases (memcheck is slow), then whole
# batch-1 run of the fused network (its prepare captures both graphs, node map included).
TAIL=6 run cuda_memcheck compute-sanitizer --tool memcheck --error-exitcode 9 ./bin/mnv2_gpu_tests \
  --gtest_filter='KernelFused*:KernelDepthwise*:CudaBackendTest.SmallNetwork*:CudaBackendTest.GraphReplayIsRefused*'
MNV2_CUDA_FUSE=expand_dw TAIL=6 run cuda_memcheck_fused_net compute-sanitizer --tool memcheck --error-exitcode 9 \
  ./bin/mnv2 classify --backend cuda --tensor shared/golden/cat.input.f32 --top 3
for img in cat grace_hopper; do
  TAIL=8 run "compare_cuda_$img" ./bin/mnv2 compare --backends cpu,cudnn,cuda --tensor "shared/golden/$img.input.f32" \
    --timing cupti --warmup 5 --iters 30 --json "$work/compare_cuda_${img}.json"
done
MNV2_CUDA_VARIANT=baseline TAIL=8 run bench_cuda_baseline ./bin/mnv2 bench --backends cuda --batch 1,64 --warmup 5 \
  --iters 30 --json "$work/bench_cuda_baseline.json"
fi

if want ncu; then
# The Nsight Compute hand-off: the command mnv2 prints for one layer, run as printed (where ncu is installed).
ncu_check() {
  local cmd ncu
  cmd=$(./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --ncu-command block3.dw 2>&1 | grep '^ncu ')
  echo "printed: $cmd"
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [[ -n $ncu && -n $cmd ]] || { echo "ncu not installed here (or no command printed): not run"; return 0; }
  # As printed, with the lighter "basic" section set; then what the report file holds, per kernel.
  cmd=${cmd/--set full/--set basic}
  local rep
  rep=$(sed -n 's/.* -o \([^ ]*\) .*/\1/p' <<<"$cmd")
  (cd /tmp && PATH=$(dirname "$ncu"):$PATH timeout 240 bash -c "$cmd") || return
  "$ncu" --import "/tmp/$rep.ncu-rep" --print-summary per-kernel | head -60
}
TAIL=20 run ncu_command ncu_check
fi

# ---- the desktop app, live (when the bundle has it: MNV2_DEVICE_APP=1 bash scripts/device-bundle.sh) ------
# One Compare run of every available backend on cat.bmp (decoded by QImage there), exported as JSON, then the
# screenshots from that report (no second GPU run). PNGs come back beside summary.txt.
if want app && [[ -f "$repo/.device/app.tar.xz" ]]; then
  tar -xJf "$repo/.device/app.tar.xz" -C /tmp
  app() { /tmp/qtbundle/run.sh mnv2-profiler --model "$MNV2_MODEL" --size 1500x950 "$@"; }
  TAIL=8 run app_compare app --image shared/images/cat.bmp --backend cuda --compare --warmup 20 --iters 200 \
    --tab timings --log-scale --screenshot "$work/h200-app-timings.png" --export-json "$work/h200-app-compare.json" --quit
  TAIL=4 run app_runs app --report "$work/h200-app-compare.json" --tab comparison --runs 1,2 \
    --screenshot "$work/h200-app-cuda-vs-cudnn.png" --quit
  TAIL=4 run app_diffs app --report "$work/h200-app-compare.json" --tab diffs --diff cuda,cpu \
    --screenshot "$work/h200-app-diffs.png" --quit
  TAIL=4 run app_graph app --report "$work/h200-app-compare.json" --tab graph --color-by time \
    --screenshot "$work/h200-app-graph.png" --quit
  # Roofline of the cuda backend at batch 64 under the ceilings measured there, and a batch sweep of both
  # GPU backends (their PNGs travel in results.tar.gz: the device tool returns 8 files).
  TAIL=6 run app_roofline app --backend cuda --batch 64 --warmup 5 --iters 30 --timing cupti --run --ceilings \
    --tab roofline --roofline-run 0 --screenshot "$work/h200-app-roofline.png" --quit
  TAIL=6 run app_sweep app --sweep --sweep-backends cuda,cudnn --sweep-sizes 224x224 --sweep-batches 1,8,64,256 \
    --sweep-x batch --tab sweep --screenshot "$work/h200-app-sweep.png" --quit
  cp "$work"/h200-app-timings.png "$work"/h200-app-cuda-vs-cudnn.png "$work"/h200-app-roofline.png \
    "$work/h200-app-compare.json" "$out/" 2>/dev/null
fi

nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >>"$summary" 2>&1

cp "$summary" "$out/summary.txt"
tar -C "$work" -czf "$out/results.tar.gz" .
ls -la "$out"
