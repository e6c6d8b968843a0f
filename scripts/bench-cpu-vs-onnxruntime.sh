#!/usr/bin/env bash
# mnv2's cpu backends against ONNX Runtime's CPU execution provider on the same model, the same pinned cores
# and the same thread count, measured in one session with interleaved repeats. Not part of CI: timings go in
# benchmarks, never in pass/fail tests.
#
# usage: scripts/bench-cpu-vs-onnxruntime.sh            (after a build: build/app/mnv2)
# settings (environment):
#   MNV2=build/app/mnv2  MODEL=../shared/weights/mobilenet_v2_1.0_224.onnx
#   CPUS=0,1 (taskset list; default: the first THREADS CPUs)  THREADS=2 (mnv2's OpenMP team, ORT's intra-op
#   threads; ORT's inter-op threads are 1)  BATCHES="1 8"  ROUNDS=5  WARMUP=10  ITERS=50
#   IMPLS="onnxruntime cpu cpu-ref"  ORT_VERSION=1.30.0
#   ORT_CACHE=${XDG_CACHE_HOME:-~/.cache}/mnv2-profiler/onnxruntime-node-$ORT_VERSION (npm installs there once)
# Each run prints its median over ITERS timed runs (after WARMUP); the table gives, per batch and
# implementation, the median of the ROUNDS run medians and their range. The order of the implementations
# is reversed every other round, so a drift in the machine's load does not favour one of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
MNV2=${MNV2:-$root/build/app/mnv2}
MODEL=${MODEL:-$root/../shared/weights/mobilenet_v2_1.0_224.onnx}
THREADS=${THREADS:-2}
CPUS=${CPUS:-$(seq -s, 0 $((THREADS - 1)))}
BATCHES=${BATCHES:-"1 8"}
ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-10}
ITERS=${ITERS:-50}
IMPLS=${IMPLS:-"onnxruntime cpu cpu-ref"}
ORT_VERSION=${ORT_VERSION:-1.30.0}
ORT_CACHE=${ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mnv2-profiler/onnxruntime-node-$ORT_VERSION}

command -v node >/dev/null || { echo "error: node is needed (ONNX Runtime runs through onnxruntime-node)" >&2; exit 1; }
[[ -x $MNV2 ]] || { echo "error: $MNV2 not found: build first (cmake --build build --target mnv2)" >&2; exit 1; }
[[ -f $MODEL ]] || { echo "error: model $MODEL not found" >&2; exit 1; }
if [[ " $IMPLS " == *" onnxruntime "* && ! -d $ORT_CACHE/node_modules/onnxruntime-node ]]; then
  # --ignore-scripts: the package carries libonnxruntime.so and the binding; its install script only fetches
  # GPU extras.
  echo "installing onnxruntime-node@$ORT_VERSION into $ORT_CACHE" >&2
  mkdir -p "$ORT_CACHE"
  npm install --prefix "$ORT_CACHE" --ignore-scripts --no-audit --no-fund "onnxruntime-node@$ORT_VERSION" >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.tsv  # batch, impl, round, median_ms

# One run of one implementation; appends "batch impl round median_ms" to $results.
run_one() {
  local impl=$1 batch=$2 round=$3 median
  if [[ $impl == onnxruntime ]]; then
    median=$(NODE_PATH=$ORT_CACHE/node_modules taskset -c "$CPUS" node "$root/scripts/bench-onnxruntime.js" \
      "$MODEL" "$batch" "$WARMUP" "$ITERS" "$THREADS" 1 | node -e \
      'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).median_ms))')
  else
    MNV2_CPU_THREADS=$THREADS taskset -c "$CPUS" "$MNV2" bench --model "$MODEL" --backends "$impl" --batch "$batch" \
      --warmup "$WARMUP" --iters "$ITERS" --json "$work/run.json" >/dev/null 2>"$work/run.err" ||
      { cat "$work/run.err" >&2; exit 1; }
    median=$(node -e 'console.log(require(process.argv[1]).results[0].median_ms)' "$work/run.json")
  fi
  printf '%s\t%s\t%s\t%s\n' "$batch" "$impl" "$round" "$median" >>"$results"
  printf '  round %d, batch %s, %-12s %8.3f ms\n' "$round" "$batch" "$impl" "$median" >&2
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
read -ra impls <<<"$IMPLS"
for ((round = 1; round <= ROUNDS; ++round)); do
  order=("${impls[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((i = ${#impls[@]} - 1; i >= 0; --i)); do order+=("${impls[i]}"); done
  fi
  for batch in $BATCHES; do
    for impl in "${order[@]}"; do run_one "$impl" "$batch" "$round"; done
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
ort_version=$(node -e 'try{console.log(require(process.argv[1]+"/node_modules/onnxruntime-node/package.json").version)}catch(e){console.log("-")}' "$ORT_CACHE")
echo "# bench-cpu-vs-onnxruntime, $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
echo "# machine: $cpu_model, $(nproc) CPUs online; runs pinned to CPUs $CPUS (taskset); load average at start $load_start, at end $load_end"
head=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
echo "# mnv2: $(MNV2_CPU_THREADS=$THREADS "$MNV2" info --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);const c=j.backends.find(b=>b.name==="cpu");console.log("build stamped "+j.commit+" (the commit at configure time), worktree at '"$head"'; cpu = "+c.description)})')"
echo "# onnxruntime-node $ort_version: CPU execution provider, intra-op threads $THREADS, inter-op 1, sequential, graph optimisation all"
echo "# model $(basename "$MODEL"); $ROUNDS rounds, order reversed every other round; each run: $WARMUP warm-up + $ITERS timed runs, its median"
node - "$results" <<'EOF'
const fs = require('fs');
const rows = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => l.split('\t'));
const med = (v) => { const s = v.slice().sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const groups = new Map();
for (const [batch, impl, , ms] of rows) {
  const key = batch + '\t' + impl;
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(Number(ms));
}
const label = (impl) => (impl === 'onnxruntime' ? 'onnxruntime' : 'mnv2 ' + impl);
console.log(['batch', 'implementation'.padEnd(16), 'median_ms', 'min_ms', 'max_ms', 'spread', 'images/s', 'vs_ort'].join('  '));
for (const [key, values] of groups) {
  const [batch, impl] = key.split('\t');
  const m = med(values), lo = Math.min(...values), hi = Math.max(...values);
  const ort = groups.get(batch + '\tonnxruntime');
  const ratio = ort ? (m / med(ort)).toFixed(2) + 'x' : '-';
  console.log([batch.padStart(5), label(impl).padEnd(16), m.toFixed(3).padStart(9), lo.toFixed(3).padStart(6),
               hi.toFixed(3).padStart(6), (((hi - lo) / m) * 100).toFixed(0).padStart(5) + '%',
               (Number(batch) * 1000 / m).toFixed(1).padStart(8), ratio.padStart(6)].join('  '));
}
console.log('(median_ms: median of the rounds\' medians; spread: (max - min) / median over rounds; vs_ort: median_ms / ONNX Runtime\'s, below 1 is faster)');
EOF
