#!/usr/bin/env bash
# Builds the Debian packages of this build tree with CPack, unpacks them into scratch roots (dpkg -x, no root
# needed, nothing installed on the machine) and runs the installed programs from there:
#   1. mnv2-profiler alone: `mnv2 info` and `mnv2 classify` on the CPU backend, with the dynamic loader's cache
#      off (ld.so --inhibit-cache), so that nothing under /usr/local/cuda can be found: the programs must
#      start, classify, and say the GPU backends are not installed.
#   2. with mnv2-profiler-cuda beside it, NVIDIA's libraries still hidden: `mnv2 info` names each missing one.
#   3. the packages' metadata: Debian dependencies from dpkg-shlibdeps, none of NVIDIA's in the main package,
#      NVIDIA's package names in the -cuda one; the desktop entry, icon and labels installed; no weights; the
#      manual page (rendered by man -l) and the bash and zsh completions (sourced, parsed) installed; every
#      report format's JSON Schema installed, and a report of the installed mnv2 valid against them.
# Usage: test_installed_package.sh BUILD_DIR SHARED_DIR
set -euo pipefail
build=$1
shared=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -B "$scratch/packages" >"$scratch/cpack.log" 2>&1 || { cat "$scratch/cpack.log"; fail "cpack"; }
core=$(ls "$scratch"/packages/mnv2-profiler_*.deb)
echo "built: $(cd "$scratch/packages" && ls *.deb | tr '\n' ' ')"

# ---- metadata -------------------------------------------------------------------------------------------
depends=$(dpkg-deb -f "$core" Depends)
echo "mnv2-profiler Depends: $depends"
[[ $depends == *libc6* && $depends == *libonnx* ]] || fail "the main package's Depends lack Debian's libraries: $depends"
[[ $depends != *cuda* && $depends != *cudnn* && $depends != *cublas* && $depends != *nvidia* ]] ||
  fail "the main package depends on NVIDIA: $depends"
contents=$(dpkg-deb -c "$core" | awk '{print $6}')
for f in ./usr/bin/mnv2 ./usr/share/applications/mnv2-profiler.desktop \
         ./usr/share/icons/hicolor/256x256/apps/mnv2-profiler.png ./usr/share/mnv2-profiler/imagenet_labels_1001.txt \
         ./usr/share/doc/mnv2-profiler/copyright ./usr/share/mnv2-profiler/lab/include/mnv2_lab/depthwise.h \
         ./usr/share/mnv2-profiler/lab/templates/depthwise.cu ./usr/share/man/man1/mnv2.1.gz \
         ./usr/share/bash-completion/completions/mnv2 ./usr/share/zsh/vendor-completions/_mnv2; do
  grep -qx "$f" <<<"$contents" || fail "$f is not in $core"
done
here=$(cd "$(dirname "$0")" && pwd)
for schema in "$here"/../../resources/schemas/*.schema.json; do
  f=./usr/share/mnv2-profiler/schemas/$(basename "$schema")
  grep -qx "$f" <<<"$contents" || fail "$f is not in $core"
done
grep -qx ./usr/share/doc/mnv2-profiler/REPORTS.md <<<"$contents" || fail "docs/REPORTS.md is not in $core"
grep -Eq '^./usr/lib/(.*/)?mnv2-profiler/libmnv2_engine.so$' <<<"$contents" || fail "no engine library in $core"
grep -q 'libmnv2_gpu\|cudnn\|cublas\|cudart\|\.onnx$' <<<"$contents" && fail "GPU plugin, NVIDIA library or weights in $core"
# ---- 1: the main package alone, no CUDA findable ----------------------------------------------------------
root1=$scratch/root1
dpkg -x "$core" "$root1"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$root1/usr/share/applications/mnv2-profiler.desktop" || fail "the desktop entry is invalid"
fi
loader=$(readlink -f /lib64/ld-linux-x86-64.so.2)
# No LD_LIBRARY_PATH, no loader cache: the system's default folders and the programs' own RUNPATH only.
run() { env -u LD_LIBRARY_PATH "$loader" --inhibit-cache "$@"; }
for exe in "$root1"/usr/bin/*; do
  run --list "$exe" >"$scratch/ldd.txt" 2>&1 || { cat "$scratch/ldd.txt"; fail "$(basename "$exe") does not load without CUDA"; }
  grep -E 'lib(cudart|cudnn|cublas|cublasLt|cupti|cuda|nvrtc)[._]|not found' "$scratch/ldd.txt" && fail "$(basename "$exe") needs a CUDA library or misses one"
done
info=$(run "$root1/usr/bin/mnv2" info)
echo "$info"
grep -q "cpu: available" <<<"$info" || fail "cpu backend unavailable in the installed program"
# A CUDA build's core package names the plugin package; a build without CUDA says it has no plugin at all.
grep -q -e "mnv2-profiler-cuda" -e "configured with MNV2_WITH_CUDA=OFF" <<<"$info" ||
  fail "info does not say where the GPU backends are (the mnv2-profiler-cuda package)"
out=$(run "$root1/usr/bin/mnv2" classify --model "$shared/weights/mobilenet_v2_1.0_224.onnx" --top 3 \
      "$shared/images/cat.bmp")
echo "$out"
grep -q "Egyptian cat" <<<"$out" || fail "the installed mnv2 does not classify the cat"
# What the installed mnv2 writes is valid against the installed schemas.
run "$root1/usr/bin/mnv2" topology --model "$shared/weights/mobilenet_v2_1.0_224.onnx" --format json >"$scratch/topology.json"
run "$root1/usr/bin/mnv2" bench --backend cpu-ref --iters 1 --warmup 0 --model "$shared/weights/mobilenet_v2_1.0_224.onnx" \
  --json "$scratch/bench.json" --csv "$scratch/bench.csv" >/dev/null
python3 "$here/../../scripts/validate-reports.py" --schemas "$root1/usr/share/mnv2-profiler/schemas" \
  "$scratch/topology.json" "$scratch/bench.json" "$scratch/bench.csv" ||
  fail "a report of the installed mnv2 is not valid against the installed schemas"
# The kernel lab finds its slot headers and templates installed beside the program (no GPU needed); started
# directly (not through the loader, which would make /proc/self/exe the loader's path).
env -u LD_LIBRARY_PATH "$root1/usr/bin/mnv2" lab --template depthwise | grep -q 'mnv2_lab/depthwise.h' ||
  fail "the installed mnv2 does not find the kernel lab's templates"
# The manual page renders with man, and the installed bash completion completes (`bash --norc`: no system setup).
page=$(MANWIDTH=100 man -l "$root1/usr/share/man/man1/mnv2.1.gz" 2>&1 | col -b)
grep -q "^   mnv2 profile$" <<<"$page" && grep -q "^EXIT STATUS$" <<<"$page" ||
  fail "man -l does not render the installed page: $(head -5 <<<"$page")"
completed=$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(mnv2 profile --precision f); COMP_CWORD=3; _mnv2
                                        printf "%s " "${COMPREPLY[@]}"' _ "$root1/usr/share/bash-completion/completions/mnv2")
[[ $completed == "fp32 fp16 " ]] || fail "the installed bash completion offers [$completed] for --precision f"
zsh -n "$root1/usr/share/zsh/vendor-completions/_mnv2" || fail "the installed zsh completion does not parse"
# No weights in the package: a model placed in the user's data folder is found without --model.
mkdir -p "$scratch/xdg/mnv2-profiler"
cp "$shared/weights/mobilenet_v2_1.0_224.onnx" "$scratch/xdg/mnv2-profiler/"
found=$(XDG_DATA_HOME=$scratch/xdg run "$root1/usr/bin/mnv2" classify --top 1 "$shared/images/cat.bmp")
grep -q "Egyptian cat" <<<"$found" || fail "a model in \$XDG_DATA_HOME/mnv2-profiler/ is not found: $found"
XDG_DATA_HOME=$scratch/xdg run "$root1/usr/bin/mnv2" info | grep -q "model: .*xdg/mnv2-profiler/mobilenet_v2_1.0_224.onnx" ||
  fail "info does not show the model found in \$XDG_DATA_HOME"
if run "$root1/usr/bin/mnv2" classify --backend cudnn --model "$shared/weights/mobilenet_v2_1.0_224.onnx" \
     "$shared/images/cat.bmp" >"$scratch/gpu.txt" 2>&1; then
  fail "the cudnn backend ran without the GPU package"
fi
grep -q "not installed" "$scratch/gpu.txt" || { cat "$scratch/gpu.txt"; fail "no clear message for the missing GPU package"; }

# ---- 2: with the GPU plugin, NVIDIA's libraries hidden ------------------------------------------------------
cuda_pkg=$(ls "$scratch"/packages/mnv2-profiler-cuda_*.deb 2>/dev/null || true)
if [[ -n $cuda_pkg ]]; then
  cuda_depends=$(dpkg-deb -f "$cuda_pkg" Depends)
  echo "mnv2-profiler-cuda Depends: $cuda_depends"
  for name in "mnv2-profiler (=" libcudnn9-cuda- libcublas- cuda-cudart- cuda-cupti-; do
    [[ $cuda_depends == *"$name"* ]] || fail "mnv2-profiler-cuda does not depend on $name"
  done
  dpkg-deb -c "$cuda_pkg" | awk '{print $6}' | grep -Eq 'libcudnn|libcublas|libcudart|libcupti' &&
    fail "NVIDIA libraries bundled in $cuda_pkg"
  root2=$scratch/root2
  dpkg -x "$core" "$root2"
  dpkg -x "$cuda_pkg" "$root2"
  info2=$(run "$root2/usr/bin/mnv2" info)
  echo "$info2"
  if [[ -n $(ldconfig -p | grep libcudnn.so.9) ]]; then
    # The machine has them, but the cache is off and the plugin carries no path to /usr/local/cuda.
    grep -q "need NVIDIA libraries that are not installed: .*libcudart.so.13" <<<"$info2" ||
      fail "info does not name the missing NVIDIA libraries"
    grep -q "libcudnn.so.9 (cuDNN)" <<<"$info2" || fail "info does not name cuDNN"
  fi
  run "$root2/usr/bin/mnv2" classify --model "$shared/weights/mobilenet_v2_1.0_224.onnx" --top 1 \
    "$shared/images/cat.bmp" | grep -q "Egyptian cat" || fail "cpu classify with the plugin present but unloadable"
fi
echo "package test: ok"
