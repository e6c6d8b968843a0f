#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root with .device/ carried:
#   run(command="bash scripts/device-run.sh", carry=[".device"])
# In one call: every GPU test, profiles of the GPU backends with both timers, cross-backend comparisons on
# the shared photographs (their golden input tensors), and the benchmarks. Everything lands in
# $OUT/results.tar.gz (reports, logs) plus $OUT/summary.txt; the device tool returns at most 8 files.
# MNV2_DEVICE_SECTIONS picks parts (comma list of tests, base, cuda, studies, ncu, app, portable, exports, cpu,
# timeline, anchor, cudnn, baseline, round2, r3chain, r3table, r3tiles, r3ncu, r3fp32, r3san, r3dsmem, r3early,
# stage, stageab, r3split, app35, deepdive, stem, ffma, tf32, lab, applab, ops, devices, abab, golden_cpu, cpu_suite, gemm;
# default the first 13), e.g.
# for a kernel iteration:
#   run(command="MNV2_DEVICE_SECTIONS=cuda bash scripts/device-run.sh", carry=[".device"])
set -uo pipefail
sections=",${MNV2_DEVICE_SECTIONS:-tests,base,cuda,studies,ncu,app,portable,exports,cpu,timeline,anchor,cudnn,baseline},"
want() { [[ $sections == *",$1,"* ]]; }
out=${OUT:-/tmp/mnv2-device-out}
mkdir -p "$out"
work=/tmp/mnv2-run
repo=$PWD
rm -rf /tmp/bundle "$work" && mkdir -p "$work"
# MNV2_DEVICE_BUNDLE: another bundle file (e.g. one repacked smaller to fit the carry limit).
tar -xJf "${MNV2_DEVICE_BUNDLE:-.device/bundle.tar.xz}" -C /tmp || { echo "no bundle: run scripts/device-bundle.sh first"; exit 1; }
# A slim bundle (MNV2_DEVICE_SLIM=1) leaves out the second export style; an earlier call may have carried it as
# .device/extra.tar.xz (bundle/shared/weights/...), which stays on a warm machine between calls.
# MNV2_DEVICE_EXTRA: that file elsewhere (copied off by an earlier call to a warm machine, when the bundle and the
# extra do not fit one carry).
extra=${MNV2_DEVICE_EXTRA:-.device/extra.tar.xz}
[[ -f $extra ]] && tar -xJf "$extra" -C /tmp
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
if want tests; then
TAIL=40 run gpu_tests ./bin/mnv2_gpu_tests --gtest_brief=1
fi
if want base; then
TAIL=12 run profile_cudnn_event ./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --timing event \
  --warmup 20 --iters 200 --csv "$work/profile_cudnn_event_b1.csv" --json "$work/profile_cudnn_event_b1.json"
TAIL=12 run profile_cudnn_cupti ./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --timing cupti \
  --warmup 20 --iters 200 --csv "$work/profile_cudnn_cupti_b1.csv" --json "$work/profile_cudnn_cupti_b1.json" \
  --trace "$work/trace_cudnn_cupti_b1.json"
TAIL=12 run profile_cudnn_cupti_b64 ./bin/mnv2 profile --backend cudnn --tensor shared/golden/cat.input.f32 --timing cupti \
  --batch 64 --warmup 10 --iters 50 --csv "$work/profile_cudnn_cupti_b64.csv" --json "$work/profile_cudnn_cupti_b64.json"
for img in cat cat_720p grace_hopper hot_dog parrot; do
  TAIL=8 run "compare_$img" ./bin/mnv2 compare --backends cpu-ref,cudnn --tensor "shared/golden/$img.input.f32" --timing cupti \
    --warmup 5 --iters 30 --csv "$work/compare_${img}.csv" --json "$work/compare_${img}.json"
done
TAIL=10 run compare_event_b64 ./bin/mnv2 compare --backends cpu-ref,cudnn --tensor shared/golden/cat.input.f32 --timing event \
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
  TAIL=8 run "compare_cudnn_${p}_cat" ./bin/mnv2 compare --backends cpu-ref,cudnn --precision $p \
    --tensor shared/golden/cat.input.f32 --timing event --warmup 5 --iters 30 --json "$work/compare_cudnn_${p}_cat.json"
done
TAIL=6 run bench_cpu ./bin/mnv2 bench --backend cpu --batch 1,8 --warmup 5 --iters 30 --json "$work/bench_cpu.json"
fi

# ---- custom CUDA kernels backend (cuda) ----------------------------------------------------------------
# In order of what matters most should the call run out of time (the summary reaches $OUT after each step).
if want cuda; then
# Correctness: the kernel and backend tests (the fused expand+dw path included), CUPTI graph attribution.
TAIL=30 run cuda_tests ./bin/mnv2_gpu_tests --gtest_filter='*Cuda*:*Kernel*:ProfilerGpu*:TimingGpu*' --gtest_brief=1
profile_lines() { grep -E "end to end|per layer|per kind|WARNING|two-timer" "$work/$1.log" >>"$summary"; }
# Precision modes (issue 6): the cudnn tests that share the stated bounds; tf32 and fp16 of both GPU backends
# at batch 1/64/256 (end to end and device-resident); each mode of cuda against the cpu reference (fp32) on a
# photograph, every layer; fp16 per layer inside the CUDA graph at batch 256 and 1; memcheck of the new kernels
# and of an fp16 network.
TAIL=12 run cudnn_precision_tests ./bin/mnv2_gpu_tests \
  --gtest_filter='CudnnBackendTest.Reduced*:CudnnBackendTest.Fp16*:CudnnBackendTest.RefusesUnsupported*' --gtest_brief=1
for p in tf32 fp16; do
  TAIL=12 run "bench_cuda_$p" ./bin/mnv2 bench --backends cuda,cudnn --precision $p --batch 1,64,256 --warmup 20 \
    --iters 100 --json "$work/bench_cuda_$p.json"
  TAIL=14 run "compare_cuda_${p}_cat" ./bin/mnv2 compare --backends cpu-ref,cuda --precision $p \
    --tensor shared/golden/cat.input.f32 --timing event --warmup 5 --iters 30 --json "$work/compare_cuda_${p}_cat.json"
done
for b in 256 1; do
  TAIL=0 run "profile_cuda_fp16_graph_b$b" ./bin/mnv2 profile --backend cuda --precision fp16 --batch $b --timing cupti \
    --exec graph --warmup 5 --iters 20 --csv "$work/profile_cuda_fp16_graph_b$b.csv" \
    --json "$work/profile_cuda_fp16_graph_b$b.json"
  profile_lines "profile_cuda_fp16_graph_b$b"
done
TAIL=0 run profile_cuda_tf32_graph_b256 ./bin/mnv2 profile --backend cuda --precision tf32 --batch 256 --timing cupti \
  --exec graph --warmup 5 --iters 20 --csv "$work/profile_cuda_tf32_graph_b256.csv" \
  --json "$work/profile_cuda_tf32_graph_b256.json"
profile_lines profile_cuda_tf32_graph_b256
# tf32 at batch 1 (the split-K tensor-core GEMMs of the 7x7 and 14x14 maps).
TAIL=0 run profile_cuda_tf32_graph_b1 ./bin/mnv2 profile --backend cuda --precision tf32 --batch 1 --timing cupti \
  --exec graph --warmup 5 --iters 20 --csv "$work/profile_cuda_tf32_graph_b1.csv"
profile_lines profile_cuda_tf32_graph_b1
TAIL=6 run cuda_memcheck_precision compute-sanitizer --tool memcheck --error-exitcode 9 ./bin/mnv2_gpu_tests \
  --gtest_filter='KernelGemmTc*:KernelHalf*'
TAIL=6 run cuda_memcheck_fp16_net compute-sanitizer --tool memcheck --error-exitcode 9 \
  ./bin/mnv2 classify --backend cuda --precision fp16 --tensor shared/golden/cat.input.f32 --top 3
# Benchmarks: end to end (upload .. download) and device-resident (input on the GPU, graph replay), both
# fast-path versions: v3 (--cuda-fusion none, the default) and the fused expansion + depthwise (the flag, or
# the MNV2_CUDA_FUSE override the profiles below use).
TAIL=14 run bench_cuda ./bin/mnv2 bench --backends cuda,cudnn --batch 1,8,64,256 --warmup 20 --iters 100 \
  --json "$work/bench_cuda.json"
TAIL=8 run bench_cuda_fused ./bin/mnv2 bench --cuda-fusion expand_dw --backends cuda --batch 1,8,64,256 --warmup 20 \
  --iters 100 --json "$work/bench_cuda_fused.json"
# Per-layer CUPTI times inside the CUDA graph replay (graph node ids recorded at capture), both versions.
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
  TAIL=8 run "compare_cuda_$img" ./bin/mnv2 compare --backends cpu-ref,cudnn,cuda --tensor "shared/golden/$img.input.f32" \
    --timing cupti --warmup 5 --iters 30 --json "$work/compare_cuda_${img}.json"
done
TAIL=8 run bench_cuda_baseline ./bin/mnv2 bench --cuda-variant baseline --backends cuda --batch 1,64 --warmup 5 \
  --iters 30 --json "$work/bench_cuda_baseline.json"
# compare --exec graph over a list that mixes backends: cuda per layer inside its graph, cpu and cudnn (no
# graph) layer by layer with a warning in their reports.
TAIL=10 run compare_graph_mixed ./bin/mnv2 compare --backends cpu-ref,cudnn,cuda --exec graph --timing cupti \
  --tensor shared/golden/cat.input.f32 --warmup 5 --iters 30 --json "$work/compare_graph_mixed.json"
# The roofline of cuda in fp16 at batch 256 (2 bytes per element), per layer inside the graph.
TAIL=8 run roofline_cuda_fp16_b256 ./bin/mnv2 roofline --backend cuda --precision fp16 --batch 256 --timing cupti \
  --exec graph --warmup 5 --iters 20 --csv "$work/roofline_cuda_fp16_b256.csv"
fi

# ---- studies: accuracy per backend and precision, latency against input size --------------------------
if want studies; then
# The labelled set: the golden inputs (preprocessed on the build machine: this one has no image codecs),
# each labelled with its float64 golden top-1. Then the same five x 100 (links) for the pipeline's images/s.
set_dir=$work/eval-set && mkdir -p "$set_dir/x100"
for img in cat cat_720p grace_hopper hot_dog parrot; do
  label=$(grep -m1 '"index"' "shared/golden/$img.json" | tr -dc 0-9)
  # A list names files beneath --images (absolute names are refused): a link to each input.
  ln -sf "$PWD/shared/golden/$img.input.f32" "$set_dir/$img.input.f32"
  echo "$img.input.f32 $label" >>"$set_dir/golden.txt"
  for k in $(seq -w 1 100); do
    ln -sf "$PWD/shared/golden/$img.input.f32" "$set_dir/x100/$img-$k.f32"
    echo "$img-$k.f32 $label" >>"$set_dir/x100.txt"
  done
done
TAIL=6 run eval_cpu ./bin/mnv2 eval --images "$set_dir" --list "$set_dir/golden.txt" --backend cpu --batch 5 \
  --json "$work/eval_cpu.json"
for b in cudnn cuda; do
  for p in fp32 tf32 fp16; do
    TAIL=6 run "eval_${b}_$p" ./bin/mnv2 eval --images "$set_dir" --list "$set_dir/golden.txt" --backend $b \
      --precision $p --batch 5 --json "$work/eval_${b}_$p.json"
    TAIL=4 run "eval_x100_${b}_$p" ./bin/mnv2 eval --images "$set_dir/x100" --list "$set_dir/x100.txt" --backend $b \
      --precision $p --batch 64 --json "$work/eval_x100_${b}_$p.json"
  done
done
# Latency and throughput against input size (HxW) and batch, as other MobileNetV2 profiling studies sweep.
for p in fp32 fp16; do
  TAIL=22 run "sweep_sizes_$p" ./bin/mnv2 bench --backends cuda,cudnn --precision $p \
    --input-size 224x224,500x334,1024x2048 --batch 1,8,32 --warmup 5 --iters 30 \
    --csv "$work/sweep_sizes_$p.csv" --json "$work/sweep_sizes_$p.json"
done
TAIL=8 run memory_1024x2048 ./bin/mnv2 memory --backend cuda --batch 8 --input-size 1024x2048
fi

# ---- portable code: the compute_75 PTX plugin, JIT-compiled by the driver (issue 12) -----------------------
# The same programs with bundle/lib75/libmnv2_gpu.so (PTX for compute_75 only: no cp.async, no TF32 tensor
# cores): info says what runs, the whole GPU suite (tf32 refused by name where the code lacks it), and the
# bench against the default plugin (sm_90 machine code) in the same call.
if want portable && [[ -f lib75/libmnv2_gpu.so ]]; then
ptx75() { MNV2_GPU_PLUGIN=$PWD/lib75/libmnv2_gpu.so LD_LIBRARY_PATH=$PWD/lib75:$LD_LIBRARY_PATH CUDA_CACHE_PATH=/tmp/jit75 "$@"; }
TAIL=14 run info_ptx75 ptx75 ./bin/mnv2 info
# PTX75_TESTS_FILTER: a part of the suite (a --gtest_filter pattern), to split it over calls of the device's time limit.
TAIL=40 run gpu_tests_ptx75 ptx75 timeout "${PTX75_TESTS_TIMEOUT_S:-900}" ./bin/mnv2_gpu_tests --gtest_brief=1 \
  --gtest_filter="${PTX75_TESTS_FILTER:-*}"
TAIL=6 run classify_ptx75_tf32_refused ptx75 ./bin/mnv2 classify --backend cuda --precision tf32 --tensor shared/golden/cat.input.f32
for p in $([[ ${PORTABLE_BENCH:-1} == 0 ]] || echo fp32 fp16); do
  TAIL=8 run "bench_ptx75_$p" ptx75 ./bin/mnv2 bench --backends cuda --precision $p --batch 1,64,256 --warmup 20 \
    --iters 100 --json "$work/bench_ptx75_$p.json"
  TAIL=8 run "bench_sm90_$p" ./bin/mnv2 bench --backends cuda --precision $p --batch 1,64,256 --warmup 20 --iters 100 \
    --json "$work/bench_sm90_$p.json"
done
[[ ${PORTABLE_BENCH:-1} == 0 ]] || TAIL=8 run bench_ptx75_cudnn ptx75 ./bin/mnv2 bench --backends cudnn --batch 1,64 --warmup 10 --iters 50
fi
# A plugin with sm_80 machine code only: nothing of it runs on sm_90; info and the cuda backend say so.
if want portable && [[ -f lib80/libmnv2_gpu.so ]]; then
sm80() { MNV2_GPU_PLUGIN=$PWD/lib80/libmnv2_gpu.so LD_LIBRARY_PATH=$PWD/lib80:$LD_LIBRARY_PATH "$@"; }
TAIL=14 run info_sm80_only sm80 ./bin/mnv2 info
TAIL=4 run classify_sm80_only_cuda sm80 ./bin/mnv2 classify --backend cuda --tensor shared/golden/cat.input.f32 --top 1
TAIL=4 run classify_sm80_only_cudnn sm80 ./bin/mnv2 classify --backend cudnn --tensor shared/golden/cat.input.f32 --top 1
fi

# ---- models from PyTorch's current exporter (issue 12) --------------------------------------------------------
# Exports torchvision MobileNetV2 at several widths and sizes with PyTorch's defaults (external data, opset 20)
# and other settings, then classifies each on cpu, cudnn and cuda against PyTorch's float64 logits.
if want exports; then
TAIL=4 run export_models python3 "$repo/scripts/export-pytorch-models.py" "$work/exports"
TAIL=40 run check_exports python3 "$repo/scripts/check-pytorch-exports.py" "$work/exports" ./bin/mnv2
TAIL=12 run info_export ./bin/mnv2 info --model "$work/exports/tv_w050_160_default.onnx"
TAIL=6 run classify_export_fp16 ./bin/mnv2 classify --backend cuda --precision fp16 \
  --model "$work/exports/tv_w140_256_default.onnx" --tensor "$work/exports/tv_w140_256_default.input.f32" --input-size 256x256
rm -f "$work"/exports/*.onnx.data "$work"/exports/*.onnx "$work"/exports/*.f32  # not worth the way back
fi

if want ops; then
# The op harness (tests/ops): every op and fused pattern on every cuda and cudnn variant against cpu-ref, the CI's
# seed; then the per-op benchmark of MobileNetV2's own layer shapes on each backend's default variant (and the
# block fusion), as CSV.
TAIL=40 run op_harness ./bin/mnv2_op_harness --seed 29 --backends cuda,cudnn
TAIL=20 run op_bench ./bin/mnv2_op_harness --seed 29 --backends cpu,cudnn,cuda --bench --csv "$work/op_bench.csv" \
  --filter 'mnv2 \| (cpu threads=2|cudnn fused layout=auto|cuda fast fusion=(none|block) splitk=separate) '
fi

if want gemm; then
# The FFMA GEMMs (fp32, no TF32) of every distinct 1x1 convolution against cuBLAS CUBLAS_COMPUTE_32F_PEDANTIC
# (tests/bench/bench_gemm_fp32.cpp): the cost model's variant, every tile forced, cuBLAS; a float64 check first.
TAIL=40 run gemm_tests ./bin/mnv2_gpu_tests --gtest_filter='KernelGemm.*:KernelPointwiseConv.*:KernelSplitK.*' --gtest_brief=1
TAIL=120 run gemm_bench ./bin/mnv2_gemm_bench --batch 1,8,64,256 --warmup 20 --iters 200 --json "$work/gemm_bench.json"
cp "$work/gemm_bench.json" "$work/gemm_bench.log" "$out/" 2>/dev/null
# The network end to end in fp32 with the planner's choices (the GEMMs its fused blocks leave).
TAIL=8 run gemm_bench_cuda ./bin/mnv2 bench --backend cuda --batch 1,8,64,256 --warmup 20 --iters 100 \
  --json "$work/gemm_bench_cuda.json"
TAIL=8 run gemm_bench_cuda_none ./bin/mnv2 bench --backend cuda --cuda-fusion none --batch 1,8,64,256 --warmup 20 \
  --iters 100 --json "$work/gemm_bench_cuda_none.json"
fi

# ---- the cpu backends on this machine's Xeon against ONNX Runtime (issue 12, "every CPU") ------------------
# Same model, 2 threads pinned to CPUs 0-1 for all three, 3 interleaved rounds (order reversed every other round),
# medians of 50 timed runs each; onnxruntime is the machine's Python wheel.
if want cpu; then
TAIL=6 run info_cpu ./bin/mnv2 info
cpu_round() {  # cpu_round ROUND: one run of each implementation at batch 1 and 8
  local order="ort cpu cpu-ref"; (( $1 % 2 )) && order="cpu-ref cpu ort"
  for b in 1 8; do for impl in $order; do
    if [[ $impl == ort ]]; then
      ms=$(taskset -c 0,1 python3 "$repo/scripts/bench-onnxruntime.py" "$MNV2_MODEL" $b 10 50 2)
    else
      MNV2_CPU_THREADS=2 taskset -c 0,1 ./bin/mnv2 bench --backends $impl --batch $b --warmup 10 --iters 50 \
        --json "$work/cpu_bench.json" >/dev/null 2>&1
      ms=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median_ms"])' "$work/cpu_bench.json")
    fi
    echo "round $1 batch $b $impl $ms"
  done; done
}
cpu_rounds() { for r in 1 2 3; do cpu_round $r; done; }
TAIL=20 run cpu_vs_onnxruntime cpu_rounds
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
  # Accuracy page: the five photographs decoded by QImage there (JPEG plugin in the bundle), labelled with
  # their golden top-1, on cuda in fp16 and cudnn in tf32; a size sweep of both GPU backends.
  TAIL=6 run app_eval_cuda_fp16 app --backend cuda --precision fp16 --eval "$repo/tests/ui/shared_photos_eval.txt" \
    --eval-images shared/images --eval-batch 5 --tab accuracy --screenshot "$work/h200-app-accuracy.png" \
    --export-eval-csv "$work/h200-app-eval-cuda-fp16.csv" --quit
  TAIL=6 run app_eval_cudnn_tf32 app --backend cudnn --precision tf32 --eval "$repo/tests/ui/shared_photos_eval.txt" \
    --eval-images shared/images --eval-batch 5 --export-eval-csv "$work/h200-app-eval-cudnn-tf32.csv" --quit
  TAIL=6 run app_sweep_sizes app --sweep --sweep-backends cuda,cudnn --sweep-sizes 224x224,500x334,1024x2048 \
    --sweep-batches 1,8 --sweep-x size --tab sweep --screenshot "$work/h200-app-sweep-sizes.png" --quit
  TAIL=8 run app_compare_fp16 app --image shared/images/cat.bmp --backend cuda --precision fp16 --compare \
    --warmup 10 --iters 50 --tab diffs --diff cuda,cpu --screenshot "$work/h200-app-diffs-fp16.png" \
    --export-json "$work/h200-app-compare-fp16.json" --quit
  TAIL=6 run app_roofline_fp16 app --backend cuda --precision fp16 --batch 256 --warmup 5 --iters 20 --timing cupti \
    --run --ceilings --tab roofline --roofline-run 0 --screenshot "$work/h200-app-roofline-fp16.png" --quit
  cp "$work"/h200-app-accuracy.png "$work"/h200-app-sweep-sizes.png "$out/" 2>/dev/null
  cp "$work"/h200-app-timings.png "$work"/h200-app-cuda-vs-cudnn.png "$work"/h200-app-roofline.png \
    "$work/h200-app-compare.json" "$out/" 2>/dev/null
fi

# app35 (issue 35): the app offscreen on the GPU, random input (the CLI bundle decodes no images, and the deep dive
# re-runs a run's settings through the CLI): a cuda and a cudnn run in fp16 at batch 1 with CUPTI, their Run
# comparison, the cuda run's timeline (its kernels), then a deep dive of both runs into layer APP35_LAYER (default 35:
# block 7's depthwise, inside the cuda plan's split fused block) with Nsight Compute, the Deep dive page in front.
if want app35 && [[ -f "$repo/.device/app.tar.xz" ]]; then
  [[ -x /tmp/qtbundle/run.sh ]] || tar -xJf "$repo/.device/app.tar.xz" -C /tmp
  export MNV2_CLI=$PWD/bin/mnv2
  app() { /tmp/qtbundle/run.sh mnv2-profiler --model "$MNV2_MODEL" --size 1500x950 "$@"; }
  for b in cuda cudnn; do
    TAIL=6 run "app35_run_$b" app --backend $b --precision fp16 --timing cupti --warmup 20 --iters 100 --run \
      --export-json "$work/h200-app-$b-fp16.json" --quit
  done
  reports=(--report "$work/h200-app-cuda-fp16.json" --report "$work/h200-app-cudnn-fp16.json")
  TAIL=4 run app35_comparison app "${reports[@]}" --tab comparison --runs 0,1 \
    --screenshot "$work/h200-app-cuda-vs-cudnn-fp16.png" --quit
  TAIL=4 run app35_timeline app --report "$work/h200-app-cuda-fp16.json" --tab timeline \
    --screenshot "$work/h200-app-timeline-cuda-fp16.png" --quit
  TAIL=30 run app35_deepdive timeout "${APP35_DD_TIMEOUT:-300}" /tmp/qtbundle/run.sh mnv2-profiler --model "$MNV2_MODEL" \
    --size 1500x950 "${reports[@]}" --tab comparison --runs 0,1 --select-layer "${APP35_LAYER:-35}" --deep-dive \
    --screenshot "$work/h200-app-deepdive-fp16.png" --quit
  cp "$work"/h200-app-*.png "$out/" 2>/dev/null
fi

# The Kernel lab page of the app (issue 18; section applab, also part of app): the app runs the bundle's `mnv2 lab`
# as a process; a compile error in the editor and the per-layer chart of a user kernel against ours and cuDNN.
if { want app || want applab; } && [[ -f "$repo/.device/app.tar.xz" ]]; then
  [[ -x /tmp/qtbundle/run.sh ]] || tar -xJf "$repo/.device/app.tar.xz" -C /tmp
  app() { /tmp/qtbundle/run.sh mnv2-profiler --model "$MNV2_MODEL" --size 1500x950 "$@"; }
  lab_examples=$PWD/share/mnv2-profiler/lab/examples
  MNV2_CLI=$PWD/bin/mnv2 TAIL=6 run app_lab_compile_error app --tab lab --lab-slot depthwise \
    --lab-kernel "$lab_examples/dw_syntax.cu" --lab compile --lab-view diagnostics \
    --screenshot "$work/h200-app-lab-compile-error.png" --quit
  MNV2_CLI=$PWD/bin/mnv2 TAIL=6 run app_lab_run app --tab lab --lab-slot depthwise \
    --lab-kernel "$lab_examples/dw_improved.cu" --lab run --lab-view chart --screenshot "$work/h200-app-lab-run.png" --quit
  cp "$work"/h200-app-lab-*.png "$out/" 2>/dev/null
fi

# ---- timelines and reliability (issue 15) ----------------------------------------------------------------
# One iteration at its own timestamps with every GPU timer and execution: cudaEvent spans, CUPTI records per
# stream layer by layer and inside the graph replay, for both GPU backends; each run's reliability findings
# (other GPU processes, SM clock) in its summary; the two cuda runs side by side with mnv2 runs.
if want timeline; then
for spec in "cuda event layers" "cuda cupti layers" "cuda cupti graph" "cudnn cupti layers" "cudnn event layers"; do
  read -r b t e <<<"$spec"
  name="timeline_${b}_${t}_${e}"
  exec_flag=()
  [[ $e == graph ]] && exec_flag=(--exec graph)
  TAIL=14 run "$name" ./bin/mnv2 profile --backend "$b" --timing "$t" "${exec_flag[@]}" \
    --tensor shared/golden/cat.input.f32 --warmup 10 --iters 50 --json "$work/$name.json" --trace "$work/$name.trace.json"
done
TAIL=40 run timeline_runs ./bin/mnv2 runs "$work/timeline_cuda_cupti_layers.json" "$work/timeline_cuda_cupti_graph.json"
# The trace's tracks and event counts per track (process, thread name), for the note.
python3 - "$work" >"$work/timeline_tracks.txt" 2>&1 <<'PY'
import json, sys, glob, collections
for f in sorted(glob.glob(sys.argv[1] + "/timeline_*.trace.json")):
    ev = json.load(open(f))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    count = collections.Counter((e["pid"], e["tid"]) for e in ev if e.get("ph") == "X")
    print(f.split("/")[-1])
    for k, n in sorted(count.items()):
        print("  ", names.get(k, k), n)
PY
cat "$work/timeline_tracks.txt" >>"$summary"
cp "$work"/timeline_cuda_cupti_graph.trace.json "$work"/timeline_cudnn_cupti_layers.trace.json "$out/" 2>/dev/null
fi

# ---- the PyTorch anchor (issue 16) ------------------------------------------------------------------------
# The same ONNX model and weights rebuilt as a torch module (scripts/pytorch-anchor.py): its logits against
# the float64 golden references (fp32 must pass), then eager / CUDA graph / torch.compile, cudnn.benchmark on
# and off, fp32 (TF32 off) / tf32 / fp16 channels-last, device-resident and end to end, as mnv2.bench/1;
# then mnv2 reads it back beside nothing (--show). MNV2_ANCHOR_COMPILE_BUDGET_S bounds all compiles (s).
if want anchor; then
TAIL=80 run pytorch_anchor python3 "$repo/scripts/pytorch-anchor.py" --model "$MNV2_MODEL" --golden shared/golden \
  --batch 1,8,64,256 --precision fp32,tf32,fp16 --warmup 20 --iters 100 \
  --compile-budget-s "${MNV2_ANCHOR_COMPILE_BUDGET_S:-300}" --json "$out/pytorch-anchor.json"
cp "$out/pytorch-anchor.json" "$work/" 2>/dev/null  # written to $out after each point: a cut-off call keeps it
TAIL=20 run pytorch_anchor_show ./bin/mnv2 bench --show "$work/pytorch-anchor.json"
cp "$work/pytorch_anchor.log" "$out/" 2>/dev/null
fi

# The cudnn backend's fused variant (issue 16): its tests and the engine list, then device-resident benches of
# fused cudnn, naive cudnn and cuda in fp32 and fp16, and per-step CUPTI profiles of the fused graph replay.
if want cudnn; then
export MNV2_CUDNN_PLAN_CACHE=$work/cudnn_plans.json
MNV2_CUDNN_ENGINE_LIST=$work/cudnn_engines.txt TAIL=${CUDNN_TEST_TAIL:-60} run cudnn_tests ./bin/mnv2_gpu_tests \
  --gtest_filter="${CUDNN_TEST_FILTER:-Cudnn*}"
grep -E "^\[ +(OK|FAILED) +\]|graph .* run as one|Failure|Expected|error" "$work/cudnn_tests.log" | head -80 >>"$summary"
for p in ${CUDNN_BENCH_PRECISIONS:-fp32 fp16}; do
  TAIL=14 run "bench_cudnn_fused_$p" ./bin/mnv2 bench --backends cudnn,cuda --precision $p --batch ${CUDNN_BATCHES:-1,8,64,256} \
    --warmup 20 --iters 100 --json "$work/bench_cudnn_fused_$p.json"
  TAIL=10 run "bench_cudnn_naive_$p" ./bin/mnv2 bench --backends cudnn --cudnn-variant naive --precision $p \
    --batch ${CUDNN_BATCHES:-1,8,64,256} --warmup 20 --iters 100 --json "$work/bench_cudnn_naive_$p.json"
done
for pb in ${CUDNN_PROFILES:-fp32:1 fp16:1 fp16:256 fp32:256}; do
  TAIL=0 run "profile_cudnn_${pb/:/_b}" ./bin/mnv2 profile --backend cudnn --precision ${pb%%:*} --batch ${pb##*:} \
    --timing cupti --exec graph --warmup 5 --iters 20 --csv "$work/profile_cudnn_${pb/:/_b}.csv"
  grep -E "end to end|per layer|per kind|WARNING" "$work/profile_cudnn_${pb/:/_b}.log" >>"$summary"
done
cp "$work"/cudnn_engines.txt "$work"/cudnn_tests.log "$work"/bench_cudnn_*.json "$work"/profile_cudnn_*.csv "$out/" 2>/dev/null
fi

# ---- the cuDNN baseline beside the PyTorch anchor (issue 16) -------------------------------------------------
# One call, so that every ratio is of figures taken together: the cudnn tests; cuda, cudnn (fused, the default)
# and cudnn naive at batch 1/8/64/256 in fp32 and fp16 (end to end and device-resident); the PyTorch anchor over
# the same points; the table of all of them; cuda against cudnn on a photograph (the app's Run comparison
# screenshot opens that report); per-layer CUPTI profiles of the fused cudnn at batch 1 and 256.
if want baseline; then
TAIL=20 run baseline_cudnn_tests ./bin/mnv2_gpu_tests --gtest_filter='CudnnBackendTest*' --gtest_brief=1
for p in fp32 fp16; do
  TAIL=16 run "baseline_bench_$p" ./bin/mnv2 bench --backends cuda,cudnn --precision $p --batch 1,8,64,256 \
    --warmup 20 --iters 100 --json "$work/baseline_bench_$p.json"
  TAIL=10 run "baseline_bench_naive_$p" ./bin/mnv2 bench --backends cudnn --cudnn-variant naive --precision $p \
    --batch 1,8,64,256 --warmup 20 --iters 100 --json "$work/baseline_bench_naive_$p.json"
done
TAIL=60 run baseline_anchor python3 "$repo/scripts/pytorch-anchor.py" --model "$MNV2_MODEL" --golden shared/golden \
  --batch 1,8,64,256 --precision fp32,fp16 --warmup 20 --iters 100 \
  --compile-budget-s "${MNV2_ANCHOR_COMPILE_BUDGET_S:-100}" --json "$work/baseline_anchor.json"
TAIL=60 run baseline_table ./bin/mnv2 bench --show "$work/baseline_bench_fp32.json,$work/baseline_bench_naive_fp32.json,$work/baseline_bench_fp16.json,$work/baseline_bench_naive_fp16.json,$work/baseline_anchor.json"
TAIL=14 run baseline_compare ./bin/mnv2 compare --backends cuda,cudnn --tensor shared/golden/cat.input.f32 --timing cupti \
  --warmup 10 --iters 50 --json "$work/baseline_compare_cuda_cudnn.json"
for p in fp32 fp16; do
  for b in 1 256; do
    TAIL=6 run "baseline_profile_cudnn_${p}_b$b" ./bin/mnv2 profile --backend cudnn --precision $p --batch $b \
      --timing cupti --warmup 5 --iters 20 --csv "$work/baseline_profile_cudnn_${p}_b$b.csv"
  done
done
fi

# ---- custom kernels round 2 (issue 17) ------------------------------------------------------------------------
# One call, every ratio of figures taken together: cuda (default plan and whole-block fusion in fp16) and fused
# cudnn at batch 1/8/64/256 in fp32 and fp16, device-resident and end to end, with kernels per run; the 8-bit
# input path at batch 256 as sub-batches overlapping upload and compute; the PyTorch anchor over the same points;
# the table of all; per-layer CUPTI profiles inside the graph replay of the fused plan at batch 1 and 256.
if want round2; then
R2_ITERS=${R2_ITERS:-200}
for p in ${R2_PRECISIONS:-fp32 tf32 fp16}; do
  TAIL=16 run "r2_bench_$p" ./bin/mnv2 bench --backends cuda,cudnn --precision $p --batch 1,8,64,256 \
    --warmup 20 --iters "$R2_ITERS" --json "$work/r2_bench_$p.json"
done
for p in ${R2_BLOCK_PRECISIONS:-fp16 tf32 fp32}; do
  TAIL=12 run "r2_bench_${p}_block" ./bin/mnv2 bench --backends cuda --cuda-fusion block --precision $p \
    --batch 1,8,64,256 --warmup 20 --iters "$R2_ITERS" --json "$work/r2_bench_${p}_block.json"
done
# PDL forced on where auto leaves it off (above batch 8), beside the default run of the same call.
for p in ${R2_PDL_PRECISIONS-fp16 fp32}; do
  TAIL=8 run "r2_bench_${p}_pdl_on" ./bin/mnv2 bench --backends cuda --cuda-pdl on --precision $p --batch 64,256 \
    --warmup 20 --iters "$R2_ITERS" --json "$work/r2_bench_${p}_pdl_on.json"
done
for spec in ${R2_U8:-fp16:none fp16:block fp32:none}; do
  p=${spec%%:*} f=${spec##*:}
  TAIL=12 run "r2_u8_${p}_$f" ./bin/mnv2 bench --backends cuda --cuda-fusion "$f" --precision $p --batch 1,256 \
    --u8 --sub-batch "${R2_SUB_BATCH:-64}" --warmup 10 --iters 100 --json "$work/r2_u8_${p}_$f.json"
done
TAIL=60 run r2_anchor python3 "$repo/scripts/pytorch-anchor.py" --model "$MNV2_MODEL" --golden shared/golden \
  --batch 1,8,64,256 --precision "${R2_ANCHOR_PRECISIONS:-fp32,tf32,fp16}" --warmup 20 --iters 100 \
  --compile-budget-s "${MNV2_ANCHOR_COMPILE_BUDGET_S:-100}" --json "$work/r2_anchor.json"
shown=$(ls "$work"/r2_bench_*.json "$work"/r2_u8_*.json "$work"/r2_anchor.json 2>/dev/null | paste -sd,)
TAIL=80 run r2_table ./bin/mnv2 bench --show "$shown"
for spec in ${R2_PROFILES:-fp16:block:1 fp16:block:256 fp32:none:256}; do
  IFS=: read -r p f b <<<"$spec"
  TAIL=0 run "r2_profile_${p}_${f}_b$b" ./bin/mnv2 profile --backend cuda --cuda-fusion "$f" --precision $p --batch $b \
    --timing cupti --exec graph --warmup 5 --iters 20 --csv "$work/r2_profile_${p}_${f}_b$b.csv" \
    --json "$work/r2_profile_${p}_${f}_b$b.json"
  grep -E "end to end|per layer|per kind|WARNING" "$work/r2_profile_${p}_${f}_b$b.log" >>"$summary"
done
fi

# ---- issue 32: the default plan (fusion auto) and PDL into the fused blocks -----------------------------------
# r3chain: the fused-block steps' programmatic edges (PDL auto = on at batch 1 and 8) against PDL off, the same
# binary and call; the default plan's fused networks under compute-sanitizer (memcheck, racecheck, synccheck: the
# graph with its programmatic edges, so each kernel's early start is checked), the GPU suite with the new default.
if want r3chain; then
TAIL=12 run r3_describe ./bin/mnv2 profile --backend cuda --precision fp16 --warmup 1 --iters 2
for p in fp16 tf32 fp32; do
  TAIL=10 run "r3_pdl_on_$p" ./bin/mnv2 bench --backends cuda --precision $p --batch 1,8 --warmup 20 \
    --iters "${R3_ITERS:-300}" --json "$work/r3_pdl_on_$p.json"
  TAIL=10 run "r3_pdl_off_$p" ./bin/mnv2 bench --backends cuda --precision $p --batch 1,8 --cuda-pdl off --warmup 20 \
    --iters "${R3_ITERS:-300}" --json "$work/r3_pdl_off_$p.json"
done
TAIL=40 run r3_gpu_tests ./bin/mnv2_gpu_tests --gtest_brief=1
for p in fp16 tf32 fp32; do
  for tool in memcheck racecheck synccheck; do
    TAIL=6 run "r3_${tool}_$p" compute-sanitizer --tool $tool --error-exitcode 9 ./bin/mnv2 classify --backend cuda \
      --precision $p --tensor shared/golden/cat.input.f32 --top 3
  done
done
fi
# r3san: the measured GEMM tiles (gemm_tile_rules, batch 8 and up on sm_90) under every compute-sanitizer tool, in
# the precisions and batches whose 1x1 GEMMs take them (R3SAN_POINTS precision:batch words).
if want r3san; then
for pt in ${R3SAN_POINTS:-fp32:8 fp32:64 fp16:8 tf32:8}; do
  p=${pt%:*} b=${pt#*:}
  for tool in memcheck racecheck synccheck; do
    TAIL=6 run "r3san_${tool}_${p}_b$b" timeout "${R3SAN_TIMEOUT:-150}" compute-sanitizer --tool $tool --error-exitcode 9 \
      ./bin/mnv2 profile --backend cuda --precision "$p" --batch "$b" --warmup 0 --iters 1 --timing event
  done
done
fi
# alternate PREFIX OPTION MODES PRECISIONS BATCHES ITERS ROUNDS: ROUNDS alternating rounds of the device-resident
# benchmark of the cuda backend, OPTION set to each of MODES in turn, every precision in each; the JSON files
# (PREFIX_precision_mode_rROUND.json) also to $out.
alternate() {
  local prefix=$1 option=$2 modes=$3 precisions=$4 batches=$5 iters=$6 rounds=$7 r m p
  for r in $(seq 1 "$rounds"); do
    for m in $modes; do
      for p in $precisions; do
        TAIL=8 run "${prefix}_${p}_${m}_r$r" ./bin/mnv2 bench --backends cuda --precision "$p" --batch "$batches" \
          "$option" "$m" --warmup 20 --iters "$iters" --json "$work/${prefix}_${p}_${m}_r$r.json"
      done
    done
  done
  cp "$work/${prefix}"_*.json "$out/" 2>/dev/null
}
# r3dsmem: split-K reduced in a thread-block cluster through distributed shared memory (--cuda-splitk cluster,
# tensor-core GEMMs) against the separate reduction kernel, the same binary and call: the kernel and backend tests,
# sanitizers, then alternating rounds of the device-resident benchmark (R3D_ROUNDS, R3D_ITERS).
if want r3dsmem; then
TAIL=20 run r3d_tests ./bin/mnv2_gpu_tests --gtest_filter='KernelSplitK.*:CudaBackendTest.KernelsPerRun*:CudaBackendTest.PdlAndInKernelSplitK*'
TAIL=6 run r3d_plan ./bin/mnv2 plan --gpu h200 --precision fp16 --batch 1 --cuda-splitk cluster
for tool in memcheck racecheck synccheck; do
  TAIL=6 run "r3d_${tool}_net" timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 ./bin/mnv2 profile \
    --backend cuda --precision fp16 --batch 1 --cuda-splitk cluster --warmup 0 --iters 1 --timing event
  MNV2_SPLITK_TEST_CASES=6 TAIL=6 run "r3d_${tool}_kernel" timeout 150 compute-sanitizer --tool $tool \
    --error-exitcode 9 ./bin/mnv2_gpu_tests --gtest_filter='KernelSplitK.TensorCore*'
done
alternate r3d --cuda-splitk "separate cluster" "${R3D_PRECISIONS:-fp16 tf32}" "${R3D_BATCHES:-1,8,64,256}" \
  "${R3D_ITERS:-300}" "${R3D_ROUNDS:-3}"
fi
# stage: issue 33's stage prototype: the fp16 block kernel with its expanded channels split over several blocks per
# tile (FusedBlockVariant::splits). mnv2_stage_bench (one block as a stage in graphs of 32 launches, every tile x
# split; STAGE_BATCHES, STAGE_ITERS) beside the network's default plan in the same call, then the kernel's tests and
# the sanitizers on the small split cases (STAGE_SAN_TIMEOUT each).
if want stage; then
TAIL=60 run stage_bench ./bin/mnv2_stage_bench --batch "${STAGE_BATCHES:-1,8}" --launches 32 --warmup 10 \
  --iters "${STAGE_ITERS:-100}" --json "$work/stage_bench.json"
TAIL=8 run stage_network_fp16 ./bin/mnv2 bench --backends cuda --precision fp16 --batch 1,8 --warmup 20 --iters 300 \
  --json "$work/stage_network_fp16.json"
cp "$work"/stage_*.json "$out/" 2>/dev/null
TAIL=20 run stage_tests ./bin/mnv2_gpu_tests --gtest_brief=1 --gtest_filter='KernelFusedBlock*'
for tool in memcheck racecheck synccheck; do
  TAIL=6 run "stage_$tool" timeout "${STAGE_SAN_TIMEOUT:-200}" compute-sanitizer --tool $tool --error-exitcode 9 \
    ./bin/mnv2_gpu_tests --gtest_filter='KernelFusedBlock.SplitLaunchesOfSmallMaps'
done
fi
# stageab: this bundle against an earlier build in the same call (MNV2_DEVICE_BEFORE, default .device/before.tar.xz:
# before/{mnv2,mnv2_stage_bench,libmnv2_engine.so,libmnv2_gpu.so}, one build's, the engine finding its plugin beside
# itself): the stage bench of both (AB_AFTER_BATCHES, AB_BEFORE_BATCHES; empty: none), then alternating rounds of the
# network's default plan in fp16 (AB_ROUNDS, AB_BATCHES, AB_ITERS), then this bundle's block kernel tests and
# sanitizers on its split and chain cases (AB_TESTS=0: none; AB_SAN_TIMEOUT each).
if want stageab; then
rm -rf /tmp/before-build && mkdir -p /tmp/before-build
tar -xJf "$repo/${MNV2_DEVICE_BEFORE:-.device/before.tar.xz}" -C /tmp/before-build || echo "no earlier build" >>"$summary"
bb=/tmp/before-build/before
if [[ -n ${AB_AFTER_BATCHES-1,8} ]]; then
  # AB_FASTEST_FROM: an earlier stage bench file (repository path): time only its fastest variants (and the chains);
  # AB_BEFORE_FASTEST=1: the earlier build's bench too (a build that has the option: dab20f1 and later).
  TAIL=60 run ab_stage_after ./bin/mnv2_stage_bench --batch "${AB_AFTER_BATCHES-1,8}" --launches 32 --warmup 10 \
    --iters "${AB_STAGE_ITERS:-100}" --json "$work/ab_stage_after.json" \
    ${AB_FASTEST_FROM:+--fastest-from "$repo/$AB_FASTEST_FROM"}
  cp "$work/ab_stage_after.json" "$out/" 2>/dev/null
fi
if [[ -n ${AB_BEFORE_BATCHES-1} ]]; then
  TAIL=20 run ab_stage_before env LD_LIBRARY_PATH="$bb:$LD_LIBRARY_PATH" "$bb/mnv2_stage_bench" \
    --batch "${AB_BEFORE_BATCHES-1}" --launches 32 --warmup 10 --iters "${AB_STAGE_ITERS:-100}" \
    --json "$work/ab_stage_before.json" ${AB_FASTEST_FROM:+${AB_BEFORE_FASTEST:+--fastest-from "$repo/$AB_FASTEST_FROM"}}
  cp "$work/ab_stage_before.json" "$out/" 2>/dev/null
fi
for r in $(seq 1 "${AB_ROUNDS:-0}"); do
  TAIL=8 run "ab_net_before_r$r" env LD_LIBRARY_PATH="$bb:$LD_LIBRARY_PATH" "$bb/mnv2" bench --backends cuda \
    --precision fp16 --batch "${AB_BATCHES:-1,8,256}" --warmup 20 --iters "${AB_ITERS:-300}" \
    --json "$work/ab_net_before_r$r.json"
  TAIL=8 run "ab_net_after_r$r" ./bin/mnv2 bench --backends cuda --precision fp16 --batch "${AB_BATCHES:-1,8,256}" \
    --warmup 20 --iters "${AB_ITERS:-300}" --json "$work/ab_net_after_r$r.json"
done
cp "$work"/ab_net_*.json "$out/" 2>/dev/null
if [[ ${AB_TESTS:-1} == 1 ]]; then
  TAIL=20 run ab_tests ./bin/mnv2_gpu_tests --gtest_brief=1 --gtest_filter='KernelFusedBlock*:CudaBackendTest.BlockSplit*'
  for tool in memcheck racecheck synccheck; do
    TAIL=6 run "ab_$tool" timeout "${AB_SAN_TIMEOUT:-120}" compute-sanitizer --tool $tool --error-exitcode 9 \
      ./bin/mnv2_gpu_tests --gtest_filter='KernelFusedBlock.SplitLaunchesOfSmallMaps:KernelFusedBlock.Chain*'
  done
fi
fi
# r3split: --cuda-fusion block_split (the fused fp16 blocks split over more CTAs where the stage bench measured it
# faster) against block, the same binary and call: its backend tests (1,000 replays bit for bit, the contract
# variant), sanitizers on a split network (R3S_SAN_BATCHES), then alternating rounds of the device-resident benchmark
# (R3S_ROUNDS, R3S_ITERS, R3S_BATCHES).
if want r3split; then
TAIL=20 run r3s_tests ./bin/mnv2_gpu_tests --gtest_brief=1 \
  --gtest_filter='CudaBackendTest.BlockSplit*:*GpuBackendContract*block_split*:KernelFusedBlock*'
TAIL=8 run r3s_plan ./bin/mnv2 plan --gpu h200 --precision fp16 --batch 8 --cuda-fusion block_split
for b in ${R3S_SAN_BATCHES:-8}; do
  for tool in memcheck racecheck synccheck; do
    TAIL=6 run "r3s_${tool}_b$b" timeout "${R3S_SAN_TIMEOUT:-120}" compute-sanitizer --tool $tool --error-exitcode 9 \
      ./bin/mnv2 profile --backend cuda --precision fp16 --batch "$b" --cuda-fusion block_split --warmup 0 --iters 1 \
      --timing event
  done
done
alternate r3s --cuda-fusion "block block_split" "fp16" "${R3S_BATCHES:-1,8}" "${R3S_ITERS:-300}" "${R3S_ROUNDS:-3}"
fi
# r3early: every kernel's weights loaded before its PDL wait (the default) against after it (--cuda-pdl
# late_weights), the same binary and call: the backend's PDL tests and the kernels' suites, sanitizers on PDL
# networks (R3E_CHECKS=0: none), then alternating rounds of the device-resident benchmark in the --cuda-pdl modes
# R3E_MODES (on and late_weights; R3E_ROUNDS, R3E_ITERS, R3E_BATCHES).
if want r3early; then
if [[ ${R3E_CHECKS:-1} == 1 ]]; then
TAIL=20 run r3e_tests ./bin/mnv2_gpu_tests --gtest_brief=1 \
  --gtest_filter='CudaBackendTest.PdlAndInKernelSplitK*:CudaBackendTest.KernelsPerRun*:Kernel*'
TAIL=8 run r3e_plan ./bin/mnv2 plan --gpu h200 --precision fp16 --batch 8 --cuda-pdl late_weights
for pt in ${R3E_SAN_POINTS:-fp16:1 fp32:1 tf32:1}; do
  p=${pt%:*} b=${pt#*:}
  for tool in memcheck racecheck synccheck; do
    TAIL=6 run "r3e_${tool}_${p}_b$b" timeout "${R3E_SAN_TIMEOUT:-120}" compute-sanitizer --tool $tool --error-exitcode 9 \
      ./bin/mnv2 profile --backend cuda --precision "$p" --batch "$b" --cuda-pdl on --warmup 0 --iters 1 --timing event
  done
done
fi
alternate r3e --cuda-pdl "${R3E_MODES:-on late_weights}" "${R3E_PRECISIONS:-fp16 fp32 tf32}" "${R3E_BATCHES:-1,8}" \
  "${R3E_ITERS:-300}" "${R3E_ROUNDS:-3}"
fi
# r3table: issue 32's table in one call, the default plan beside every plan we have, fused cuDNN and PyTorch's best.
if want r3table; then
R3_ITERS=${R3_ITERS:-200}
for p in ${R3_PRECISIONS:-fp16 fp32 tf32}; do
  TAIL=16 run "r3_bench_$p" ./bin/mnv2 bench --backends cuda,cudnn --precision $p --batch 1,8,64,256 \
    --warmup 20 --iters "$R3_ITERS" --json "$work/r3_bench_$p.json"
  for f in none block; do
    TAIL=12 run "r3_bench_${p}_$f" ./bin/mnv2 bench --backends cuda --cuda-fusion $f --precision $p \
      --batch 1,8,64,256 --warmup 20 --iters "$R3_ITERS" --json "$work/r3_bench_${p}_$f.json"
  done
  TAIL=8 run "r3_pdl_off_$p" ./bin/mnv2 bench --backends cuda --precision $p --batch 1,8 --cuda-pdl off --warmup 20 \
    --iters "$R3_ITERS" --json "$work/r3_pdl_off_$p.json"
done
TAIL=60 run r3_anchor python3 "$repo/scripts/pytorch-anchor.py" --model "$MNV2_MODEL" --golden shared/golden \
  --batch 1,8,64,256 --precision "${R3_ANCHOR_PRECISIONS:-fp32,tf32,fp16}" --warmup 20 --iters 100 \
  --compile-budget-s "${MNV2_ANCHOR_COMPILE_BUDGET_S:-100}" --json "$work/r3_anchor.json"
shown=$(ls "$work"/r3_bench_*.json "$work"/r3_anchor.json 2>/dev/null | paste -sd,)
TAIL=80 run r3_table ./bin/mnv2 bench --show "$shown"
fi

# r3fp32: fp32 at batch 1 and 8 as the default plan runs them, PDL on and off in alternating rounds (the PDL auto
# rule), the default beside fused cuDNN, and PyTorch's best at batch 1.
if want r3fp32; then
for round in 1 2 3; do
  for pdl in on off; do
    TAIL=6 run "r3fp32_${pdl}_$round" ./bin/mnv2 bench --backends cuda --precision fp32 --batch 1,8 --cuda-pdl $pdl \
      --warmup 20 --iters 300 --json "$work/r3fp32_${pdl}_$round.json"
  done
done
TAIL=8 run r3fp32_default ./bin/mnv2 bench --backends cuda,cudnn --precision fp32 --batch 1,8 --warmup 20 \
  --iters 200 --json "$work/r3fp32_default.json"
TAIL=30 run r3fp32_anchor python3 "$repo/scripts/pytorch-anchor.py" --model "$MNV2_MODEL" --golden shared/golden \
  --batch 1 --precision fp32 --warmup 20 --iters 100 --compile-budget-s 60 --json "$work/r3fp32_anchor.json"
fi
# r3tiles: the fp32 GEMMs from the measured tile table (gemm_tile_rules.cpp) in the default plan: the backend contract
# (every layer against the CPU reference, the golden logits) and the GEMM kernel tests, and a whole default fp32
# network at batch 8 and 64 (table tiles, split-K) under compute-sanitizer memcheck.
if want r3tiles; then
TAIL=30 run r3tiles_tests ./bin/mnv2_gpu_tests --gtest_brief=1 --gtest_filter="${R3TILES_FILTER:-*GpuBackendContract*:\
CudaBackendTest.*:KernelGemm.*:KernelPointwiseConv.*:KernelSplitK.*}"
TAIL=6 run r3tiles_memcheck compute-sanitizer --tool memcheck --error-exitcode 9 ./bin/mnv2 bench --backends cuda \
  --precision fp32 --batch 8,64 --warmup 1 --iters 2
fi
# r3ncu: Nsight Compute on one default-plan run at each of issue 32's target points, every kernel of every step
# (NVTX ranges name the steps), clocks as they run (--clock-control none), raw metrics in base units as CSV;
# scripts/ncu-summary.py reads them (here and on the files brought back).
if want r3ncu; then
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# R3NCU_METRICS=1: only the metrics scripts/ncu-summary.py reads (a quarter of the replay passes of the sections).
ncu_sections="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats"
ncu_sections+=" --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
if [[ ${R3NCU_METRICS:-0} != 0 ]]; then
  m=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
  m+=,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
  m+=,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct
  m+=,sm__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
  m+=,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active
  for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle not_selected selected \
    lg_throttle no_instruction; do m+=,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio; done
  ncu_sections="--metrics $m"
fi
for pt in ${R3NCU_POINTS:-fp16:1 fp16:8 fp32:1 fp32:8 fp32:64 fp32:256}; do
  p=${pt%:*} b=${pt#*:}
  # shellcheck disable=SC2086 # the section flags are words
  TAIL=4 run "r3ncu_${p}_b$b" timeout 240 "$ncu" --clock-control none --nvtx $ncu_sections --csv --page raw \
    --print-units base --log-file "$work/r3ncu_${p}_b$b.csv" ./bin/mnv2 profile --backend cuda --precision "$p" \
    --batch "$b" --warmup 0 --iters 1 --timing event
done
TAIL=80 run r3ncu_summary python3 "$repo/scripts/ncu-summary.py" "$work"/r3ncu_*.csv
cp "$work"/r3ncu_*.csv "$out/" 2>/dev/null
fi

# ---- deep-dive fixtures (issue 35): one layer's step profiled by the command --ncu-command prints, with
# --clock-control none so its durations match our timings, read back as raw and details CSV by metric name.
# DEEP_POINTS: backend:precision:batch:layer:fusion words.
if want deepdive; then
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$ncu" --version >"$work/deep_ncu_version.txt" 2>&1
cp "$work/deep_ncu_version.txt" "$out/"
for pt in ${DEEP_POINTS:-cuda:fp16:8:block5.expand:block cudnn:fp16:8:block5.expand:auto cuda:fp16:8:block5.expand:none}; do
  IFS=: read -r be p b layer fusion <<<"$pt"
  name="deep_${be}_${p}_b${b}_${layer//./_}_$fusion"
  fusion_flag=()
  [[ $be == cuda ]] && fusion_flag=(--cuda-fusion "$fusion")
  ./bin/mnv2 profile --backend "$be" --precision "$p" --batch "$b" "${fusion_flag[@]}" \
    --tensor shared/golden/cat.input.f32 --ncu-command "$layer" >"$work/$name.cmd" 2>"$work/$name.cmd.err"
  cmd=$(cat "$work/$name.cmd")
  # the printed line, with --clock-control none and the report written into $work
  cmd=${cmd/#ncu /\"$ncu\" --clock-control none }
  cmd=${cmd/ -o mnv2_/ -o $work/$name.mnv2_}
  ( cd /tmp/bundle && TAIL=6 run "$name" timeout 200 bash -c "$cmd" )
  rep=$(ls "$work/$name".mnv2_*.ncu-rep 2>/dev/null | head -1)
  if [[ -n $rep ]]; then
    "$ncu" --import "$rep" --csv --page raw --print-units base >"$out/$name.raw.csv" 2>"$work/$name.import.err"
    "$ncu" --import "$rep" --csv --page details --print-units base >"$out/$name.details.csv" 2>>"$work/$name.import.err"
    xz -9 -k "$rep" && cp "$rep.xz" "$out/"
  fi
  cp "$work/$name.cmd" "$work/$name.log" "$out/" 2>/dev/null
done
fi

# ---- the fused stem + block 1 (issue 17) ---------------------------------------------------------------------
# Its kernel tests under compute-sanitizer (memcheck, racecheck: the phases share shared memory through barriers),
# whole fused networks under memcheck in both precisions, and the SASS of the kernel: how many FFMA take their
# weight from the constant bank (the kernel parameters) against all FFMA.
if want stem; then
TAIL=8 run stem_tests ./bin/mnv2_gpu_tests --gtest_filter='KernelFusedStem*:CudaBackendTest.FusedBlock*:CudaBackendTest.BlockFusion*'
TAIL=6 run stem_memcheck compute-sanitizer --tool memcheck --error-exitcode 9 ./bin/mnv2_gpu_tests \
  --gtest_filter='KernelFusedStem*'
TAIL=6 run stem_racecheck compute-sanitizer --tool racecheck --error-exitcode 9 ./bin/mnv2_gpu_tests \
  --gtest_filter='KernelFusedStem.RefusesWhatItCannotRun'
for p in fp16 fp32; do
  TAIL=6 run "stem_memcheck_net_$p" compute-sanitizer --tool memcheck --error-exitcode 9 \
    ./bin/mnv2 classify --backend cuda --cuda-fusion block --precision $p --tensor shared/golden/cat.input.f32 --top 3
done
stem_sass() {
  local dump=/usr/local/cuda/bin/cuobjdump
  [[ -x $dump ]] || dump=$(command -v cuobjdump) || { echo "cuobjdump not installed: not run"; return 0; }
  "$dump" -sass lib/libmnv2_gpu.so | awk '/Function : .*fused_stem_kernel/ {name=$3; next} /Function :/ {name=""}
    name != "" && /FFMA/ {all[name]++; if ($0 ~ /c\[0x0\]/) cb[name]++; if ($0 ~ /UR[0-9]/) ur[name]++}
    name != "" && /LDC|ULDC/ {ldc[name]++} name != "" && /LDS/ {lds[name]++}
    END {for (n in all) printf "%6d FFMA: %6d with a constant-bank operand, %6d a uniform register; %5d LDC/ULDC, %5d LDS: %s\n",
      all[n], cb[n], ur[n], ldc[n], lds[n], n}'
}
TAIL=20 run stem_sass stem_sass
fi

# ---- the float32 whole-block kernels (issue 17): fused_block_ffma (section ffma), fused_block_tf32 (section tf32) ----
# For each: its kernel tests and the fusion-block backend test, the kernel tests under compute-sanitizer (memcheck
# capped: every variant of every shape under memcheck is slow, the log says how far it got; racecheck and synccheck on
# a small test: the phases share shared memory through barriers), a whole fused network under memcheck, a
# device-resident benchmark of none against block beside the per-layer CUPTI profiles, and the instruction mix of each
# instantiation (SASS opcodes by count: what besides the arithmetic the kernel issues).
sass_mix() {  # sass_mix KERNEL_NAME_PATTERN
  local dump=/usr/local/cuda/bin/cuobjdump
  [[ -x $dump ]] || dump=$(command -v cuobjdump) || { echo "cuobjdump not installed: not run"; return 0; }
  "$dump" -sass lib/libmnv2_gpu.so | awk -v pat="$1" '$0 ~ "Function : .*" pat {name=$3; next} /Function :/ {name=""}
    name != "" && /^ +\/\*[0-9a-f]+\*\/ / {op=$2; if (op ~ /^@/) op=$3; sub(/\..*/, "", op); n[name]++; c[name, op]++}
    END {for (k in c) {split(k, a, SUBSEP); printf "%s\t%d\t%s\n", a[1], c[k], a[2]}}' | sort -t$'\t' -k1,1 -k2,2nr |
    awk -F'\t' '{if ($1 != last) {print ""; print $1; last = $1; shown = 0} if (shown++ < 14) printf "  %7d %s\n", $2, $3}'
}
# block_kernel_section PREFIX PRECISION TESTS KERNEL_TESTS SMALL_TEST MEMCHECK_S BATCHES ITERS PROFILES KERNEL
block_kernel_section() {
  local x=$1 p=$2 tests=$3 kernel_tests=$4 small=$5 memcheck_s=$6 batches=$7 iters=$8 profiles=$9 kernel=${10}
  TAIL=8 run "${x}_tests" ./bin/mnv2_gpu_tests --gtest_filter="$tests"
  TAIL=6 run "${x}_memcheck" timeout "$memcheck_s" compute-sanitizer --tool memcheck --error-exitcode 9 \
    ./bin/mnv2_gpu_tests --gtest_filter="$kernel_tests"
  for tool in racecheck synccheck; do
    TAIL=6 run "${x}_$tool" compute-sanitizer --tool $tool --error-exitcode 9 ./bin/mnv2_gpu_tests --gtest_filter="$small"
  done
  TAIL=6 run "${x}_memcheck_net" compute-sanitizer --tool memcheck --error-exitcode 9 \
    ./bin/mnv2 classify --backend cuda --cuda-fusion block --precision "$p" --tensor shared/golden/cat.input.f32 --top 3
  local f b spec
  for f in none block; do
    TAIL=12 run "${x}_bench_$f" ./bin/mnv2 bench --backends cuda --cuda-fusion "$f" --precision "$p" --warmup 20 \
      --batch "$batches" --iters "$iters" --json "$work/${x}_bench_$f.json"
  done
  for spec in $profiles; do
    IFS=: read -r f b <<<"$spec"
    TAIL=0 run "${x}_profile_${f}_b$b" ./bin/mnv2 profile --backend cuda --cuda-fusion "$f" --precision "$p" \
      --batch "$b" --timing cupti --exec graph --warmup 5 --iters 20 --csv "$work/${x}_profile_${f}_b$b.csv" \
      --json "$work/${x}_profile_${f}_b$b.json"
    grep -E "end to end|per layer|per kind|WARNING" "$work/${x}_profile_${f}_b$b.log" >>"$summary"
  done
  TAIL=0 run "${x}_sass" sass_mix "$kernel"
}
if want ffma; then
  block_kernel_section ffma fp32 'KernelFusedBlockFfma*:CudaBackendTest.BlockFusionRunsInFp32*:CudaBackendTest.FusedBlock*' \
    'KernelFusedBlockFfma*' 'KernelFusedBlockFfma.RefusesWhatItCannotRun' "${FFMA_MEMCHECK_S:-200}" \
    "${FFMA_BATCHES:-1,8,64,256}" "${FFMA_ITERS:-100}" "${FFMA_PROFILES:-block:256}" fused_block_ffma_kernel
fi
if want tf32; then
  block_kernel_section tf32 tf32 'KernelFusedBlockTf32*:KernelFusedBlock.*:CudaBackendTest.BlockFusionRunsInFp32*' \
    'KernelFusedBlockTf32*' 'KernelFusedBlockTf32.MatchesTheReferenceOnOddShapes' "${TF32_MEMCHECK_S:-150}" \
    "${TF32_BATCHES:-1,8,64,256}" "${TF32_ITERS:-100}" "${TF32_PROFILES:-block:256 none:256}" fused_block_tf32_kernel
fi

# ---- the kernel lab (issue 18) ------------------------------------------------------------------------------
# Its GPU tests, then `mnv2 lab` on every example as a user runs it: the good ones pass and are timed beside ours and
# cuDNN, the wrong one names its layer and element (exit 1), the out-of-bounds one is reported by the worker (exit
# 4), the non-compiling one gives its line (exit 3), a kernel for another slot is refused (exit 1); each stdout is
# kept whole (labx_*.log); the summary lists each exit against the expected one. Then compute-sanitizer on the good
# depthwise kernel through the command line the lab prints.
if want lab; then
labx=$PWD/share/mnv2-profiler/lab/examples
export MNV2_CACHE_DIR=$work/cache
[[ -z ${LAB_TEST_FILTER-x} ]] || TAIL=30 run lab_gpu_tests ./bin/mnv2_gpu_tests --gtest_filter="${LAB_TEST_FILTER:-LabGpu.*}" --gtest_brief=1
lab_case() {  # lab_case NAME EXPECTED_EXIT ARGS...
  local name=$1 expected=$2; shift 2
  TAIL=${LAB_TAIL:-16} run "labx_$name" ./bin/mnv2 lab "$@" --timeout 120 --json "$work/labx_$name.json"
  local rc; rc=$(sed -n "s/^-- labx_$name: exit \([0-9]*\).*/\1/p" "$summary" | tail -1)
  echo "   lab $name: exit $rc, expected $expected $([[ $rc == "$expected" ]] && echo ok || echo MISMATCH)" | tee -a "$summary"
}
lab_case dw_naive 0 --slot depthwise --kernel "$labx/dw_naive.cu"
lab_case dw_improved 0 --slot depthwise --kernel "$labx/dw_improved.cu"
lab_case dw_naive_b8 0 --slot depthwise --kernel "$labx/dw_naive.cu" --batch 8
lab_case dw_improved_b8 0 --slot depthwise --kernel "$labx/dw_improved.cu" --batch 8
lab_case dw_improved_fp16_b8 0 --slot depthwise --kernel "$labx/dw_improved.cu" --batch 8 --precision fp16
lab_case dw_wrong 1 --slot depthwise --kernel "$labx/dw_wrong.cu"
lab_case dw_oob 4 --slot depthwise --kernel "$labx/dw_oob.cu"
lab_case dw_syntax 3 --slot depthwise --kernel "$labx/dw_syntax.cu"
lab_case pw_naive 0 --slot pointwise --kernel "$labx/pw_naive.cu"
lab_case stem_naive 0 --slot stem --kernel "$labx/stem_naive.cu"
lab_case pool_naive_fp16_b8 0 --slot pool --kernel "$labx/pool_naive.cu" --precision fp16 --batch 8
lab_case fc_naive 0 --slot classifier --kernel "$labx/fc_naive.cu"
lab_case fc_in_pool_slot 1 --slot pool --kernel "$labx/fc_naive.cu" --no-time
lab_case block_refused 2 --slot block --kernel "$labx/dw_naive.cu"
sanitizer=$(grep -m1 -o "compute-sanitizer .*" "$work/labx_dw_naive.log")
if [[ -n $sanitizer ]]; then
  TAIL=12 run labx_sanitizer_dw_naive bash -c "$sanitizer"
fi
fi

# ---- issue 29 -------------------------------------------------------------------------------------------------
# devices: every GPU by its ordinal (the two-GPU kind shows device 1): mnv2 info's UUIDs and PCI bus ids against
# nvidia-smi's, a profile on each device naming that device's card, NVML's view through CUDA_VISIBLE_DEVICES.
if want devices; then
  nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,clocks.max.sm,clocks.applications.graphics,clocks.mem,power.limit \
    --format=csv >"$work/nvidia-smi-devices.csv" 2>&1
  cat "$work/nvidia-smi-devices.csv" >>"$summary"
  TAIL=40 run devices_tests ./bin/mnv2_gpu_tests --gtest_filter='Devices.*'
  for d in $(seq 0 $(( $(nvidia-smi -L | wc -l) - 1 ))); do
    TAIL=4 run "devices_profile_$d" ./bin/mnv2 profile --backend cuda --device "$d" --batch 8 --warmup 5 --iters 20 \
      --json "$work/devices_profile_$d.json"
    python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['runs'][0]['metadata']; print('device', sys.argv[2], \
'report gpu:', json.dumps(m.get('gpu')), 'options.device:', m['options']['device'], 'sm clock', m['sm_clock_mhz_start'])" \
      "$work/devices_profile_$d.json" "$d" | tee -a "$summary"
  done
  TAIL=12 run devices_visible1_info env CUDA_VISIBLE_DEVICES=1 ./bin/mnv2 info
  TAIL=6 run devices_visible1_profile env CUDA_VISIBLE_DEVICES=1 ./bin/mnv2 profile --backend cudnn --device 0 \
    --warmup 2 --iters 5 --json "$work/devices_visible1.json"
  [[ -f $work/devices_visible1.json ]] && python3 -c "import json,sys; print('CUDA_VISIBLE_DEVICES=1 --device 0 report gpu:', \
json.dumps(json.load(open(sys.argv[1]))['runs'][0]['metadata'].get('gpu')))" "$work/devices_visible1.json" | tee -a "$summary"
  TAIL=4 run devices_bad ./bin/mnv2 profile --backend cuda --device 7
fi
# abab: old and new binaries alternated A B A B A B in this one call, each bench point's medians compared
# (.device/old.tar.xz: bundle/bin/mnv2 and bundle/lib/libmnv2_{engine,gpu}.so of the build before the change; the
# other libraries are the new bundle's, the same packages).
if want abab; then
  mkdir -p /tmp/old && tar -xJf "$repo/.device/old.tar.xz" -C /tmp/old
  points=("cuda fp16 block 1,256" "cuda fp16 none 1,256" "cuda fp32 block 1,256" "cuda fp32 none 1,256"
    "cudnn fp16 - 1,256" "cudnn fp32 - 1,256")
  # ABAB_POINTS="cuda fp16 none 256;cuda fp32 none 256" ABAB_REPS=6: a focused rerun of some points.
  [[ -n ${ABAB_POINTS:-} ]] && IFS=';' read -r -a points <<<"$ABAB_POINTS"
  # ABAB_PLAN_CACHE=shared: cuDNN's engines are tuned once, by the new binary, into one plan cache file that both
  # binaries then read, so that old and new run the same engines and the comparison sees the run path, not the
  # autotuner's pick of the moment (its spread between runs is larger than 2% at batch 1). Default: tuned per run.
  plan_cache=off
  if [[ ${ABAB_PLAN_CACHE:-} == shared ]]; then
    plan_cache=$work/abab_plans.json
    for p in "${points[@]}"; do
      read -r backend prec fusion batches <<<"$p"
      [[ $backend == cudnn ]] || continue
      TAIL=2 run "abab_tune_${prec}" ./bin/mnv2 bench --backend cudnn --precision "$prec" --batch "$batches" \
        --warmup 2 --iters 5 --cudnn-plan-cache "$plan_cache"
    done
    [[ -f $plan_cache ]] && python3 -c "import json,sys; print('shared plan cache:', len(json.load(open(sys.argv[1]))['entries']), 'entries')" \
      "$plan_cache" | tee -a "$summary"
  fi
  for rep in $(seq 1 "${ABAB_REPS:-3}"); do
    for which in new old; do
      if [[ $which == new ]]; then bin=./bin/mnv2 lib=$PWD/lib; else bin=/tmp/old/bundle/bin/mnv2 lib=/tmp/old/bundle/lib:$PWD/lib; fi
      for p in "${points[@]}"; do
        read -r backend prec fusion batches <<<"$p"
        extra=(); [[ $fusion != - ]] && extra=(--cuda-fusion "$fusion")
        name="abab_${which}_${rep}_${backend}_${prec}_${fusion}"
        TAIL=3 run "$name" env LD_LIBRARY_PATH=$lib "$bin" bench --backend "$backend" \
          --precision "$prec" "${extra[@]}" --batch "$batches" --warmup 20 --iters 200 --cudnn-plan-cache "$plan_cache" \
          --json "$work/$name.json"
      done
    done
  done
  python3 - "$work" <<'PY' | tee -a "$summary"
import glob, json, os, statistics, sys
work = sys.argv[1]
fig = {}
for f in glob.glob(os.path.join(work, "abab_new_*.json")) + glob.glob(os.path.join(work, "abab_old_*.json")):
    _, which, rep, backend, prec, fusion = os.path.basename(f)[:-5].split("_", 5)
    for r in json.load(open(f))["results"]:
        for key in ("device_resident_median_ms", "median_ms"):
            if key in r:
                fig.setdefault((backend, prec, fusion, r["batch"], key), {}).setdefault(which, []).append(r[key])
print("ABAB (median of each binary's medians; new vs old)")
worst = 0.0
for k in sorted(fig):
    o, n = fig[k].get("old", []), fig[k].get("new", [])
    if not o or len(o) != len(n): print(k, "incomplete", o, n); continue
    mo, mn = statistics.median(o), statistics.median(n)
    d = 100 * (mn - mo) / mo
    worst = max(worst, abs(d))
    print(f"{k[0]:5} {k[1]} {k[2]:5} b{k[3]:<4} {k[4]:26} old {mo:8.4f} new {mn:8.4f} ms  {d:+6.2f}%   old {o} new {n}")
print(f"largest |difference|: {worst:.2f}%")
PY
fi
# golden_cpu: the CPU-dependent golden CLI cases on this machine's CPU under every oneDNN ISA cap and thread count
# (the bundle has no image codecs: the cases that decode a JPEG are not among these).
if want golden_cpu; then
  grep -m1 "model name" /proc/cpuinfo | tee -a "$summary"
  for isa in default SSE41 AVX2 AVX512_CORE; do
    for threads in 1 2; do
      for case in topology_table bench profile_cpu_batch2 compare memory roofline classify_tensor_json; do
        TAIL=4 run "golden_${isa}_${threads}_$case" env $([[ $isa != default ]] && echo ONEDNN_MAX_CPU_ISA=$isa) \
          python3 "$repo/tests/cli/golden/run_golden.py" --mnv2 ./bin/mnv2 --shared shared --threads "$threads" --only "$case"
      done
    done
  done
  grep -h "^-- golden_" "$summary" | awk '{print $NF, $0}' >/dev/null
  echo "golden_cpu: $(grep -c '^-- golden_.*exit 0' "$summary") passed, $(grep '^-- golden_' "$summary" | grep -vc 'exit 0') failed" | tee -a "$summary"
fi

# cpu_suite: the CPU test programs CI runs, on this machine's CPU (another x86-64 than the build machine's), with
# the GPU hidden as on a CI machine: unit and CLI tests (sharded over the cores, as ctest -j runs them), the
# CPU-dependent tests under every oneDNN ISA cap, the op harness, the golden CLI outputs at 1 and 2 threads under
# every cap, and the promises' own test. Needs a bundle built with MNV2_DEVICE_CPU_TESTS=1. The bundle has no image
# codecs: tests that decode image files skip, saying so; the app and package tests need Qt and are not here.
if want cpu_suite; then
  grep -m1 "model name" /proc/cpuinfo | tee -a "$summary"
  src=$(sed -n 1p build-paths.txt) bld=$(sed -n 2p build-paths.txt)
  # The test programs' compiled-in paths: tests/data in the source tree, the CLI in the build tree.
  [[ -e $src/tests ]] || { mkdir -p "$src" && ln -s "$repo/tests" "$src/tests"; }
  # A copy, not a wrapper: a test compares the path the CLI reports for itself with its compiled-in one.
  [[ -e $bld/app/mnv2 ]] || { mkdir -p "$bld/app" && cp bin/mnv2 "$bld/app/mnv2"; }
  cpuenv=(env -u MNV2_MODEL CUDA_VISIBLE_DEVICES=)
  golden=(python3 "$repo/tests/cli/golden/run_golden.py" --mnv2 "$bld/app/mnv2" --shared shared)
  for i in 0 1 2 3 4 5; do
    GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i TAIL=8 run "cpu_unit_$i" "${cpuenv[@]}" ./bin/mnv2_unit_tests --gtest_brief=1 &
  done
  for i in 0 1 2 3; do
    GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i TAIL=8 run "cpu_cli_$i" "${cpuenv[@]}" ./bin/mnv2_cli_tests --gtest_brief=1 &
  done
  wait
  for isa in AVX512_CORE AVX2 SSE41; do
    TAIL=6 run "cpu_isa_$isa" "${cpuenv[@]}" ONEDNN_MAX_CPU_ISA=$isa ./bin/mnv2_unit_tests \
      --gtest_filter='CpuOps.*:GoldenCpu.*' --gtest_brief=1 &
  done
  TAIL=6 run cpu_op_harness "${cpuenv[@]}" ./bin/mnv2_op_harness --seed 29 &
  TAIL=6 run cpu_op_harness_sse41 "${cpuenv[@]}" ONEDNN_MAX_CPU_ISA=SSE41 ./bin/mnv2_op_harness --seed 29 --backends cpu &
  TAIL=4 run cpu_golden_promises python3 "$repo/tests/cli/golden/test_promises.py" &
  wait
  TAIL=24 run cpu_golden "${cpuenv[@]}" "${golden[@]}" &
  TAIL=24 run cpu_golden_threads1 "${cpuenv[@]}" "${golden[@]}" --threads 1 &
  for isa in SSE41 AVX2 AVX512_CORE; do
    for threads in 1 2; do
      TAIL=24 run "cpu_golden_${isa}_threads$threads" "${cpuenv[@]}" ONEDNN_MAX_CPU_ISA=$isa "${golden[@]}" \
        --threads "$threads" &
    done
  done
  wait
  echo "cpu_suite: $(grep -c '^-- cpu_.*exit 0,' "$summary") programs passed, $(grep '^-- cpu_' "$summary" | grep -vc 'exit 0,') failed" |
    tee -a "$summary"
fi

nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >>"$summary" 2>&1

cp "$summary" "$out/summary.txt"
tar -C "$work" -czf "$out/results.tar.gz" .
ls -la "$out"
