#!/usr/bin/env bash
# Builds the GPU-machine bundle here (it has no Qt and no OpenCV codecs): a CUDA build without image
# decoding, the CLI, the GPU and unit-free test programs, the libraries they need, the shared model and
# golden inputs, packed into .device/bundle.tar.xz (git-ignored; name `.device` in the device tool's carry).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${MNV2_SHARED_DIR:-$root/../shared}
build=$root/build-device
cd "$root"
cmake --preset device "$@" >/dev/null  # CMakePresets.json: build-device/
cmake --build --preset device -j "$(nproc)"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# MNV2_DEVICE_CPU_TESTS=1 adds the CPU test programs CI runs (unit and CLI tests, built without image codecs), for
# device-run.sh's cpu_suite: the suite on the GPU machine's CPU, another x86-64 than this one.
cpu_tests=()
if [[ ${MNV2_DEVICE_CPU_TESTS:-0} != 0 ]]; then
  cmake --build "$build" -j "$(nproc)" --target mnv2_unit_tests mnv2_cli_tests
  cpu_tests=("$build/tests/mnv2_unit_tests" "$build/tests/mnv2_cli_tests")
fi
bash "$shared/tools/device-bundle.sh" "$stage/bundle" "$build/app/mnv2" "$build/tests/mnv2_gpu_tests" \
  "$build/tests/mnv2_op_harness" "$build/tests/mnv2_gemm_bench" "$build/tests/mnv2_stage_bench" "${cpu_tests[@]}" >/dev/null
# Where the test programs were built: their compiled-in paths (the CLI, tests/data) are remade there from these.
printf '%s\n' "$root" "$build" >"$stage/bundle/build-paths.txt"
# The engine finds the GPU plugin beside itself (ldd resolved both into lib/ above).
[[ -f $stage/bundle/lib/libmnv2_gpu.so && -f $stage/bundle/lib/libmnv2_engine.so ]] || { echo "no plugin in the bundle"; exit 1; }

# Extra GPU plugins of the same sources and commit (so the engine accepts them), each built for one CUDA
# architecture list in build-deviceNAME/ (presets device-ptx75, device-sm80) and packed as
# bundle/libNAME/libmnv2_gpu.so; device-run.sh selects one with LD_LIBRARY_PATH=libNAME:lib
# MNV2_GPU_PLUGIN=libNAME/libmnv2_gpu.so.
extra_plugin() {  # extra_plugin NAME PRESET
  local dir=$root/build-device$1
  cmake --preset "$2" >/dev/null
  cmake --build --preset "$2" -j "$(nproc)"
  mkdir -p "$stage/bundle/lib$1"
  cp -L "$dir/lib/libmnv2_gpu.so" "$stage/bundle/lib$1/"
}
# PTX for compute_75 only (issue 12: the portable code path, JIT-compiled by the driver there).
[[ ${MNV2_DEVICE_PTX75:-1} == 0 ]] || extra_plugin 75 device-ptx75
# Machine code for sm_80 only and no PTX: nothing of it runs on a Hopper GPU, so there `mnv2 info` must say so in
# one line and the cuda backend must be unavailable with that reason (cudnn still runs).
[[ ${MNV2_DEVICE_SM80:-1} == 0 ]] || extra_plugin 80 device-sm80
# The kernel lab's slot headers and templates where an installed program finds them (bin/../share/...), and its
# example kernels beside them for the GPU tests and the closing note's runs.
lab=$stage/bundle/share/mnv2-profiler/lab
mkdir -p "$lab"
cp -r "$root/kernels/lab/include" "$root/kernels/lab/templates" "$lab/"
cp -r "$root/examples/lab" "$lab/examples"
mkdir -p "$stage/bundle/shared/weights" "$stage/bundle/shared/golden"
# MNV2_DEVICE_SLIM=1: the main model only (the second export style is 14 MB; the device tool carries 64 MiB with the
# working tree), for calls whose sections do not read it (not exports, portable).
if [[ ${MNV2_DEVICE_SLIM:-0} != 0 ]]; then
  cp "$shared"/weights/mobilenet_v2_1.0_224.onnx "$shared"/weights/*.txt "$stage/bundle/shared/weights/"
else
  cp "$shared"/weights/*.onnx "$shared"/weights/*.txt "$stage/bundle/shared/weights/"
fi
cp "$shared"/golden/* "$stage/bundle/shared/golden/"
mkdir -p "$stage/bundle/shared/images"
cp "$shared"/images/* "$stage/bundle/shared/images/"  # the app decodes them with QImage there (JPEG: the plugin in app.tar.xz)
mkdir -p "$root/.device"
tar -C "$stage" -cJf "$root/.device/bundle.tar.xz" bundle
echo "bundle: $(du -h "$root/.device/bundle.tar.xz" | cut -f1) in .device/bundle.tar.xz"
# With the CPU test programs the bundle no longer fits beside the working tree in the device tool's 64 MiB:
# .device/cpusuite.tar.xz is the same bundle without mnv2_gpu_tests, stripped, compressed with xz's x86 filter
# (about 37 MB). device-run.sh reads it with MNV2_DEVICE_BUNDLE=.device/cpusuite.tar.xz MNV2_DEVICE_SECTIONS=cpu_suite.
if [[ ${MNV2_DEVICE_CPU_TESTS:-0} != 0 ]]; then
  cpu=$(mktemp -d)
  cp -a "$stage/bundle" "$cpu/bundle"
  rm "$cpu/bundle/bin/mnv2_gpu_tests"
  strip --strip-unneeded "$cpu"/bundle/bin/* "$cpu"/bundle/lib/*.so*
  tar -C "$cpu" -cf - bundle | xz --x86 --lzma2=preset=9e -T"$(nproc)" >"$root/.device/cpusuite.tar.xz"
  rm -rf "$cpu"
  echo "cpu suite: $(du -h "$root/.device/cpusuite.tar.xz" | cut -f1) in .device/cpusuite.tar.xz"
fi

# The desktop app for a live run there (MNV2_DEVICE_APP=1 adds it): a GUI build without OpenCV codecs in
# build-ui-device/ (QImage decodes), packed with Qt's offscreen platform by the shared device-qt-bundle.sh.
if [[ ${MNV2_DEVICE_APP:-0} != 0 ]]; then
  app_build=$root/build-ui-device
  cmake --preset device-app "$@" >/dev/null
  cmake --build --preset device-app -j "$(nproc)"
  bash "$shared/tools/device-qt-bundle.sh" "$stage/app.tar.xz" "$app_build/app/mnv2-profiler" >/dev/null
  # The device tool carries 64 MiB: libraries the CLI bundle already has (OpenBLAS, OpenCV core, ONNX, ...)
  # are dropped from the app's; device-run.sh unpacks both and the app's run.sh keeps bundle/lib on the path.
  mkdir -p "$stage/app" && tar -xJf "$stage/app.tar.xz" -C "$stage/app"
  # QImage reads JPEG through Qt's image-format plugin (the photographs of an eval set): the plugin and the
  # libjpeg it links (the GPU machine's Ubuntu has another soname).
  jpeg_plugin=$(find /usr/lib -path '*qt6/plugins/imageformats/libqjpeg.so' | head -1)
  mkdir -p "$stage/app/qtbundle/plugins/imageformats"
  cp "$jpeg_plugin" "$stage/app/qtbundle/plugins/imageformats/"
  cp -L "$(ldd "$jpeg_plugin" | awk '/libjpeg\.so/ {print $3}')" "$stage/app/qtbundle/lib/"
  for lib in "$stage"/bundle/lib/*; do rm -f "$stage/app/qtbundle/lib/$(basename "$lib")"; done
  tar -C "$stage/app" -cJf "$root/.device/app.tar.xz" qtbundle
  echo "app: $(du -h "$root/.device/app.tar.xz" | cut -f1) in .device/app.tar.xz"
else
  rm -f "$root/.device/app.tar.xz"
fi
