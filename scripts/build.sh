#!/usr/bin/env bash
# Configures and builds into build/ (Release). Extra arguments go to cmake, e.g. -DCMAKE_CUDA_ARCHITECTURES="80;90".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=ON
[ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null || cuda=OFF
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNV2_WITH_CUDA=$cuda "$@"
cmake --build "$root/build" -j "$(nproc)"
