#!/usr/bin/env bash
# The include rule of docs/ARCHITECTURE.md, checked: run by scripts/test.sh (so .ci/run) before the build.
# Prints each violation as FILE:LINE: the include, and why it is not allowed; exits 1 if there is any.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0
# rule DESCRIPTION FILE-REGEX INCLUDE-REGEX [EXCEPT-FILE-REGEX [ALLOWED-INCLUDE-REGEX]]: no file matching
# FILE-REGEX (and not EXCEPT-FILE-REGEX) may have an #include line matching INCLUDE-REGEX (unless it also
# matches ALLOWED-INCLUDE-REGEX).
rule() {
  local why=$1 files=$2 includes=$3 except=${4:-'^$'} allowed=${5:-'^$'} hits
  hits=$(git ls-files -co --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.cuh' | grep -E "$files" | grep -Ev "$except" |
    xargs -r grep -HnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($includes)" | grep -Ev "$allowed" || true)
  if [[ -n $hits ]]; then
    status=1
    while IFS= read -r h; do echo "$h  -- $why"; done <<<"$hits"
  fi
}
# The engine knows nothing of Qt or of the front ends.
rule "engine/ includes no Qt and no front end" '^engine/' 'Q[A-Za-z]+[>"]|qcustomplot|ui/|app/|models/|widgets/|run_controller'
# Kernels know nothing of the network or the engine: CUDA and kernels/ only.
# (mnv2/error.h, the error type every layer throws, is the one engine header they may use.)
rule "kernels/ include only CUDA, the standard library, kernels/ and mnv2/error.h" '^kernels/' \
  'mnv2/|backends/|profile/|gpu/|model/|report/|studies/' '^$' 'include "mnv2/error\.h"'
# Front ends see the engine's public API only (engine/include/mnv2/), never its internals.
rule "app/ and ui/ include only the public engine API (mnv2/...)" '^(app|ui)/' 'backends/|profile/|gpu/|report/|studies/|model/|util/|kernels/|remote/'
# Remote targets run studies as the program's own commands: the public API and engine/util/ only.
rule "engine/remote/ includes only the public API, engine/util/ and itself" '^engine/remote/' 'backends/|profile/|gpu/|report/|studies/|model/|kernels/'
# A backend never includes another backend's files, nor the profiler (what it needs comes through StepObserver).
rule "the cpu backend includes no other backend" '^engine/backends/cpu/' 'backends/(cuda|cudnn)/'
rule "the cudnn backend includes no other backend" '^engine/backends/cudnn/' 'backends/(cuda|cpu)/'
rule "the cuda backend includes no other backend" '^engine/backends/cuda/' 'backends/(cudnn|cpu)/'
rule "no backend knows the profiler" '^engine/backends/' 'profile/|mnv2/profiler\.h|mnv2/timing\.h'
# Reports are written from the profiler's data; the profiler never knows how they are written.
rule "engine/profile/ does not include the report writers" '^engine/profile/' 'report/|mnv2/[a-z_]*report[a-z_]*\.h|mnv2/csv\.h'
rule "engine/util/ is below everything else" '^engine/util/' 'profile/|backends/|report/|studies/|mnv2/profiler\.h'
# The core engine library has no CUDA: only the GPU plugin's folders and the kernels include the toolkit.
rule "CUDA headers only in engine/gpu, the GPU backends, engine/profile/gpu and kernels/" '^engine/' \
  'cuda[a-z_]*\.h|cuda\.h|cudnn|cublas|cupti|nvtx|nvrtc|cuda_runtime' '^engine/(gpu|backends/(cuda|cudnn)|profile/gpu)/'
# Front ends are thin: a comparison is the engine's compare study, never a diff of their own.
if hits=$(git ls-files -co --exclude-standard -- 'app/*' 'ui/*' | xargs -r grep -HnE '\bdiff_backends\s*\(' 2>/dev/null); then
  status=1
  while IFS= read -r h; do echo "$h  -- front ends call the compare study (mnv2/studies.h), not diff_backends"; done <<<"$hits"
fi
((status == 0)) && echo "check-includes: clean"
exit $status
