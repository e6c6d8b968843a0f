#!/usr/bin/env bash
# Configures and builds into build/ (Release). Extra arguments go to cmake, e.g. -DCMAKE_CUDA_ARCHITECTURES="80;90".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=release  # CMakePresets.json
[ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null || preset=release-nocuda
cd "$root"
cmake --preset "$preset" "$@"
cmake --build --preset "$preset" -j "$(nproc)"
