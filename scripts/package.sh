#!/usr/bin/env bash
# Builds the Debian packages: installs what the build needs, builds into build/ (Release, the default CUDA
# architecture list where CUDA is installed), then CPack writes build/packages/mnv2-profiler_*.deb (CLI, app,
# CPU backend) and, in a CUDA build, mnv2-profiler-cuda_*.deb (the GPU plugin). Extra arguments go to cmake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$@"
cd "$root/build"
cpack --config CPackConfig.cmake
ls -l "$root"/build/packages/*.deb
