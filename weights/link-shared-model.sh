#!/usr/bin/env bash
# Links the shared pretrained model into this weights/ folder, where mnv2 finds it by default
# (the weight files themselves are never committed). Usage: weights/link-shared-model.sh [SHARED_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${1:-$here/../../shared}
src="$shared/weights/mobilenet_v2_1.0_224.onnx"
[ -f "$src" ] || { echo "error: $src not found" >&2; exit 1; }
ln -sf "$(cd "$(dirname "$src")" && pwd)/$(basename "$src")" "$here/mobilenet_v2_1.0_224.onnx"
echo "weights/mobilenet_v2_1.0_224.onnx -> $src"
