#!/usr/bin/env bash
# The quick start: installs what the build needs, builds, points weights/ at the shared model, then runs
# the main job: the machine's backends, the topology summary, and the top-5 of every shared photograph.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
shared=${MNV2_SHARED_DIR:-$root/../shared}
if [ -f "$shared/weights/mobilenet_v2_1.0_224.onnx" ]; then
  "$root/weights/link-shared-model.sh" "$shared"
fi
mnv2="$root/build/app/mnv2"
"$mnv2" info
"$mnv2" topology | tail -n 1
if [ -d "$shared/images" ]; then
  "$mnv2" classify --backend "${MNV2_BACKEND:-cpu}" "$shared"/images/*
fi
"$mnv2" bench --backend "${MNV2_BACKEND:-cpu}" --batch 1,8 --warmup 5 --iters 30
