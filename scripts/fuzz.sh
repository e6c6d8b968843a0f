#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (AddressSanitizer + UndefinedBehaviorSanitizer) in build-fuzz/
# and runs each for SECONDS (default 300) from its seed corpus in tests/fuzz/corpus/<target>/. Inputs that
# crash, leak, hang or blow the memory limit land in tests/fuzz/regressions/<target>/: fix the cause and
# keep the file (git add it); the unit tests replay every file there and in the corpora.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      TARGET: onnx_import image_decode report_reader output_set eval_list (default all)
#   MNV2_FUZZ_KEEP_GOING=1   keep fuzzing after a finding (libFuzzer fork mode) and collect them all
#   MNV2_FUZZ_BUILD_DIR=DIR  build somewhere else than build-fuzz/
#
# Needs clang-14 and libclang-rt-14-dev (apt-get install -y clang-14 libclang-rt-14-dev libomp-14-dev).
# The main build stays g++; only this separate build uses clang. New interesting inputs are kept in
# build-fuzz/corpus/<target>/ (not in git), so later runs continue where earlier ones stopped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(onnx_import image_decode report_reader output_set eval_list)
build=${MNV2_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${MNV2_FUZZ_BUILD_JOBS:-$(nproc)}

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (apt-get install -y clang-14 libclang-rt-14-dev)" >&2; exit 2; }
done

# The engine is instrumented for coverage (fuzzer-no-link) and checked by both sanitizers; UB aborts at once
# instead of printing and carrying on, so libFuzzer sees it.
# (preset fuzz in CMakePresets.json)
(cd "$root" && cmake --preset fuzz -B "$build" >/dev/null)
ninja -C "$build" -j "$jobs" $(printf 'fuzz_%s ' "${targets[@]}")

# One thread everywhere: the fuzzer runs inputs one at a time, and thread start-up would dominate.
export MNV2_CPU_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

mkdir -p "$build/logs"
failed=()
for t in "${targets[@]}"; do
  seeds=$root/tests/fuzz/corpus/$t
  work=$build/corpus/$t
  crashes=$root/tests/fuzz/regressions/$t
  mkdir -p "$work" "$crashes"
  case $t in
    image_decode) max_len=8192 ;;
    output_set) max_len=64 ;;  # a layout of at most 6 entries and 4 targets: longer inputs add nothing
    *) max_len=16384 ;;
  esac
  # -rss_limit_mb also caps any single allocation: an input that makes the engine ask for gigabytes is a
  # finding (an allocation sized by an untrusted number), not a slow success.
  args=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -max_len="$max_len"
        -artifact_prefix="$crashes/" -print_final_stats=1)
  [ -f "$root/tests/fuzz/$t.dict" ] && args+=(-dict="$root/tests/fuzz/$t.dict")  # output_set's bytes are opcodes
  if [ "${MNV2_FUZZ_KEEP_GOING:-0}" = 1 ]; then
    args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  echo "== fuzz_$t for ${seconds} s (log: $build/logs/$t.log)"
  if "$build/tests/fuzz/fuzz_$t" "${args[@]}" "$work" "$seeds" >"$build/logs/$t.log" 2>&1; then
    status=ok
  else
    status="FAILED (exit $?)"
    failed+=("$t")
  fi
  grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)" "$build/logs/$t.log" | tail -n 3 || true
  echo "-- fuzz_$t: $status; corpus $(find "$work" -type f | wc -l) inputs; findings in $crashes: $(find "$crashes" -type f | wc -l)"
done
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in: ${failed[*]} (see the logs and tests/fuzz/regressions/)" >&2
  exit 1
fi
