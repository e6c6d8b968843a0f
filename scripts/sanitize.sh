#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer and UndefinedBehaviorSanitizer (g++, no GUI) in
# build-asan/ and runs it with CTest. Any report (an invalid access, a leak, undefined behaviour) fails the
# test that caused it. GPU tests skip without a CUDA device, as in the normal suite.
#
#   scripts/sanitize.sh [extra cmake arguments]
#   MNV2_SANITIZE_CUDA=OFF   build without the GPU backends (default: ON where nvcc is installed)
#   MNV2_SANITIZE_BUILD_DIR  build somewhere else than build-asan/
#   CTEST_ARGS               extra ctest arguments, e.g. CTEST_ARGS="-R Robust"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MNV2_SANITIZE_BUILD_DIR:-$root/build-asan}
cuda=${MNV2_SANITIZE_CUDA:-ON}
if [ "$cuda" = ON ] && [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then cuda=OFF; fi

# Preset asan (CMakePresets.json): -O1 keeps the run time bearable; UB aborts at once (no recovery) so CTest
# sees the failure.
cd "$root"
cmake --preset asan -B "$build" -DMNV2_WITH_CUDA="$cuda" "$@"
cmake --build "$build" -j "${MNV2_SANITIZE_BUILD_JOBS:-$(nproc)}"

# Leak reports to ignore, one "leak:<library or function>" per line, each with its reason. None is needed
# today: the CPU suite (OpenMP and OpenBLAS included) runs clean. Never suppress our own code.
cat >"$build/lsan.supp" <<'EOF'
# (empty)
EOF

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# The CUDA driver maps memory where ASan puts its shadow gap.
[ "$cuda" = ON ] && ASAN_OPTIONS="$ASAN_OPTIONS:protect_shadow_gap=0"
export LSAN_OPTIONS="suppressions=$build/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export MNV2_CPU_THREADS=${MNV2_CPU_THREADS:-2}
cd "$build"
# Sanitized code runs several times slower: a longer per-test limit than the normal suite.
ctest --output-on-failure -j "$(nproc)" --timeout 1800 ${CTEST_ARGS:-}
