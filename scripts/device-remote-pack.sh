#!/usr/bin/env bash
# Packs .device/remote.tar.xz for scripts/device-remote.sh: the device bundle's mnv2 and libraries (after
# scripts/device-bundle.sh), the main model, Debian's ssh, sshd and ssh-keygen with the libraries they need, and a
# report of an earlier call's card to compare against.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${MNV2_SHARED_DIR:-$root/../shared}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tar -xJf "$root/.device/bundle.tar.xz" -C "$stage"
b=$stage/bundle
find "$b/bin" -type f ! -name mnv2 -delete
rm -rf "$b/shared" "$b"/lib[0-9]*
mkdir -p "$b/shared/weights" "$b/old"
cp "$shared/weights/mobilenet_v2_1.0_224.onnx" "$b/shared/weights/"
cp "$root/docs/bench/h200-2026-11-26-round2/r2_profile_fp16_block_b1.json" "$b/old/"
bash "$shared/tools/device-bundle.sh" "$stage/ssh" /usr/bin/ssh /usr/sbin/sshd /usr/bin/ssh-keygen >/dev/null
mv "$stage/ssh/bin" "$b/sshbin" && mv "$stage/ssh/lib" "$b/sshlib"
strip "$b/bin/mnv2" "$b"/lib/*.so* 2>/dev/null || true
tar -C "$stage" -cf - bundle | xz --x86 --lzma2=preset=9e -T2 >"$root/.device/remote.tar.xz"
ls -la "$root/.device/remote.tar.xz"
