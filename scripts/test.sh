#!/usr/bin/env bash
# Installs what the build needs, checks the code is clang-formatted, builds, and runs the whole test suite
# with CTest. GPU tests skip with a message where there is no CUDA device. Tests read ../shared (or $MNV2_SHARED_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/check-format.sh"
"$root/scripts/check-includes.sh"  # the include rule of docs/ARCHITECTURE.md
"$root/scripts/build.sh"
cd "$root/build"
export QT_QPA_PLATFORM=offscreen
ctest --output-on-failure -j "$(nproc)" --timeout 600
