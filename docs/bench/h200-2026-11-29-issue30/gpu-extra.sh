#!/usr/bin/env bash
# Extra runs for issue 30 on the GPU machine after device-run.sh's tests: declared sizes refused from the graph on the
# GPU backends (time, peak), and classify --tensor of 64 and 6,000 images streamed on cuda (peak independent of N).
cd /tmp/bundle && export LD_LIBRARY_PATH=$PWD/lib
M=$PWD/shared/weights/mobilenet_v2_1.0_224.onnx
measure() {  # measure ARGS...: wall seconds and the child's peak resident memory, then the last stderr line
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(["bin/mnv2"] + sys.argv[1:], capture_output=True, text=True)
dt = time.monotonic() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
err = [l for l in p.stderr.splitlines() if l.startswith("error:")]
out = p.stdout.count('"input"')
print(f"mnv2 {' '.join(a.rsplit('/', 1)[-1] for a in sys.argv[1:])}: exit {p.returncode}, {dt:.2f} s, peak {peak} MiB, "
      f"{out} JSON results; {err[0][:220] if err else ''}")
PY
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for b in cudnn cuda; do
  measure memory --model "$M" --backend $b --batch 65536
  measure bench --model "$M" --backend $b --batch 4096 --input-size 8192 --warmup 0 --iters 1
  measure profile --model "$M" --backend $b --batch 2048 --input-size 4096 --warmup 0 --iters 1
done
head -c $((64 * 602112)) /dev/zero > /tmp/t64.f32
head -c $((6000 * 602112)) /dev/zero > /tmp/t6000.f32
for n in 64 6000; do measure classify --model "$M" --backend cuda --precision fp16 --json --tensor /tmp/t$n.f32; done
rm -f /tmp/t64.f32 /tmp/t6000.f32
