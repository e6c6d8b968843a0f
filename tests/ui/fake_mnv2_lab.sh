#!/usr/bin/env bash
# A stand-in for `mnv2 lab` in the Kernel lab page's tests (MNV2_CLI points here): no GPU, no NVRTC. It speaks
# the protocol (docs: the lab's result JSON "mnv2.lab" version 1, its exit codes, progress lines on stdout) and
# decides what happened from markers in the kernel source, so that each test states its case in the source:
#   FAKE_COMPILE_ERROR   compile_error (exit 3): an error at every line holding ERROR_HERE, a warning at every
#                        line holding WARN_HERE (column: where the marker starts); a source that uses the
#                        name undefined_scale (what scripts/screenshots.sh types) is an error at those lines too
#   FAKE_WRONG           check_failed (exit 1): the second chosen layer fails at element [0,5,3,4]
#   FAKE_CRASH           crashed (exit 4): an illegal address, with a result file
#   FAKE_NO_RESULT_CRASH exit 4 and no result file (a worker that took the parent's writer with it)
#   FAKE_BAD_FORMAT      a result of version 2 (the app must refuse it by name)
#   FAKE_CLI_SEGV        the fake itself dies on SIGSEGV (mnv2 lab crashing, not the kernel)
#   FAKE_SLEEP           prints a line, then waits a minute (Cancel)
#   otherwise            passed (exit 0); timed unless --no-time: yours FAKE_US=<n> (default 10) + layer/10 µs,
#                        ours 8 + layer/10, cuDNN 12 + layer/10
# Layers: --layers, else 2,5,8. `--template SLOT` prints a template naming the slot. With FAKE_LAB_ARGS=FILE
# the arguments are appended to FILE, one call per line.
set -u
[[ -n ${FAKE_LAB_ARGS:-} ]] && echo "$*" >>"$FAKE_LAB_ARGS"
[[ ${1:-} == lab ]] || { echo "fake mnv2: only 'lab' is faked" >&2; exit 2; }
shift
slot="" kernel="" layers="2,5,8" precision=fp32 batch=1 json="" mode=run template=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --slot) slot=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --arch) shift 2 ;;
    --device) [[ $2 =~ ^[0-9]+$ ]] || { echo "mnv2 lab: --device must be an integer" >&2; exit 2; }; shift 2 ;;
    --model) [[ -f $2 ]] || { echo "mnv2 lab: no model at $2" >&2; exit 2; }; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --compile-only) mode=compile; shift ;;
    --no-time) mode=check; shift ;;
    --template) template=$2; shift 2 ;;
    *) echo "mnv2 lab: unknown option $1" >&2; exit 2 ;;
  esac
done

if [[ -n $template ]]; then
  cat <<EOF
// The $template slot's template ($precision): our simplest correct kernel for it (fake CLI of the UI tests).
#include "mnv2_lab/$template.cuh"
// FAKE_US=10
__global__ void my_${template}_kernel(const float* __restrict__ in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fminf(fmaxf(in[i], 0.0f), 6.0f);
}
EOF
  exit 0
fi
[[ -n $slot && -f $kernel ]] || { echo "mnv2 lab: --slot and an existing --kernel are needed" >&2; exit 2; }
name=$(basename "$kernel")
has() { grep -q -- "$1" "$kernel"; }

write() {  # write STATUS MESSAGE COMPILE_OK DIAGNOSTICS LAYERS END_TO_END
  [[ -n $json ]] || return 0
  cat >"$json.tmp" <<EOF
{"format": "mnv2.lab", "version": ${FAKE_VERSION:-1}, "slot": "$slot", "kernel_file": "$kernel",
 "kernel_name": "my_${slot}_kernel", "source_sha256": "0", "precision": "$precision", "batch": $batch,
 "device": "Fake GPU (sm_90)", "status": "$1", "message": "$2",
 "compile": {"ok": $3, "cached": false, "seconds": 0.25, "options": ["-arch=sm_90", "-lineinfo"],
             "log": "fake nvrtc log", "diagnostics": [$4]},
 "launch": {"block": [256, 1, 1], "grid_rule": "ceil(N*C*H*W / 256)", "shared_bytes": 0},
 "layers": [$5],
 "end_to_end": $6,
 "commands": {"compute_sanitizer": "compute-sanitizer --tool memcheck mnv2 lab --slot $slot --kernel $kernel",
              "ncu": "ncu --set full mnv2 lab --slot $slot --kernel $kernel"},
 "reports": {}}
EOF
  mv "$json.tmp" "$json"
}

echo "compiling $name for the $slot slot (NVRTC, sm_90, $precision)"
if has FAKE_CLI_SEGV; then
  kill -SEGV $$
fi
if has FAKE_SLEEP; then
  trap 'kill $! 2>/dev/null; exit 143' TERM
  sleep 60 &
  wait $!
  exit 0
fi
if has FAKE_COMPILE_ERROR || has undefined_scale; then
  diags=""
  while IFS=: read -r line text; do
    word=ERROR_HERE
    [[ $text == *undefined_scale* ]] && word=undefined_scale
    col=$(awk -v t="$text" -v w="$word" 'BEGIN { print index(t, w) }')
    [[ -n $diags ]] && diags+=", "
    diags+="{\"file\": \"$name\", \"line\": $line, \"column\": $col, \"severity\": \"error\", \"message\": \"identifier \\\"$word\\\" is undefined\"}"
    echo "$name($line): error: identifier \"$word\" is undefined"
  done < <(grep -nE 'ERROR_HERE|undefined_scale' "$kernel" | grep -v FAKE_COMPILE_ERROR)
  while IFS=: read -r line text; do
    col=$(awk -v t="$text" 'BEGIN { print index(t, "WARN_HERE") }')
    [[ -n $diags ]] && diags+=", "
    diags+="{\"file\": \"$name\", \"line\": $line, \"column\": $col, \"severity\": \"warning\", \"message\": \"variable \\\"WARN_HERE\\\" was declared but never referenced\"}"
  done < <(grep -n WARN_HERE "$kernel")
  # One message in a header the user did not write: listed, not marked in the editor.
  diags+=", {\"file\": \"mnv2_lab/$slot.cuh\", \"line\": 3, \"column\": 1, \"severity\": \"warning\", \"message\": \"note from the slot header\"}"
  write compile_error "compile error: see the diagnostics" false "$diags" "" null
  echo "mnv2 lab: compile error"
  exit 3
fi
echo "compiled in 0.25 s"
if [[ $mode == compile ]]; then
  write passed "compiled; nothing checked (--compile-only)" true "" "" null
  exit 0
fi
if has FAKE_NO_RESULT_CRASH; then
  echo "checking layer 2"
  echo "mnv2 lab: the worker died (signal 11) and no result was written"
  exit 4
fi
if has FAKE_CRASH; then
  echo "checking layer 2"
  write crashed "illegal address (cudaErrorIllegalAddress) in layer 2; memcheck: see the compute-sanitizer line" true "" \
    "{\"index\": 2, \"name\": \"block1.dw\", \"op\": \"depthwise 3x3 s1\", \"shape\": \"1,32,112,112\", \"check\": null, \"user_us\": null, \"ours_us\": null, \"cudnn_us\": null}" null
  echo "mnv2 lab: crashed: illegal address"
  exit 4
fi
if has FAKE_BAD_FORMAT; then
  FAKE_VERSION=2 write passed "from the future" true "" "" null
  exit 0
fi

us=$(sed -n 's/.*FAKE_US=\([0-9.]*\).*/\1/p' "$kernel" | head -1)
us=${us:-10}
IFS=, read -r -a list <<<"$layers"
entries="" k=0 failed=0 user_total=0
for l in "${list[@]}"; do
  k=$((k + 1))
  echo "checking layer $l"
  [[ -n $entries ]] && entries+=", "
  if has FAKE_WRONG && [[ $k == 2 ]]; then
    failed=1
    check="{\"passed\": false, \"max_abs_vs_reference\": 0.5, \"rel_l2_vs_reference\": 0.31, \"max_abs_vs_ours\": 0.5, \"bound\": 0.0001, \"first_failure\": {\"flat_index\": 1234, \"coords\": [0, 5, 3, 4], \"expected\": 0.5, \"got\": 0.0}}"
  else
    check="{\"passed\": true, \"max_abs_vs_reference\": 1.2e-06, \"rel_l2_vs_reference\": 3e-07, \"max_abs_vs_ours\": 0.0, \"bound\": 0.0001, \"first_failure\": null}"
  fi
  times="\"user_us\": null, \"ours_us\": null, \"cudnn_us\": null"
  if [[ $mode == run ]] && ! has FAKE_WRONG; then
    u=$(awk -v a="$us" -v l="$l" 'BEGIN { printf "%.2f", a + l / 10 }')
    o=$(awk -v l="$l" 'BEGIN { printf "%.2f", 8 + l / 10 }')
    c=$(awk -v l="$l" 'BEGIN { printf "%.2f", 12 + l / 10 }')
    times="\"user_us\": $u, \"ours_us\": $o, \"cudnn_us\": $c"
    echo "timed layer $l: yours $u us, ours $o us, cuDNN $c us"
  fi
  entries+="{\"index\": $l, \"name\": \"layer$l.dw\", \"op\": \"depthwise 3x3 s1\", \"shape\": \"$batch,32,56,56\", \"check\": $check, $times, \"flops\": 1.0e6, \"bytes\": 2.0e6}"
done
if [[ $failed == 1 ]]; then
  write check_failed "check failed at layer ${list[1]}: element [0,5,3,4] expected 0.5, got 0" true "" "$entries" null
  echo "mnv2 lab: check failed at layer ${list[1]}, element [0,5,3,4]: expected 0.5, got 0"
  exit 1
fi
e2e=null
[[ $mode == run ]] && e2e="{\"user_ms\": 0.31, \"ours_unfused_ms\": 0.30, \"ours_default_ms\": 0.27, \"cudnn_ms\": 0.61}"
write passed "every layer within the bound" true "" "$entries" "$e2e"
echo "mnv2 lab: passed"
exit 0
