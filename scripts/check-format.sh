#!/usr/bin/env bash
# Fails (exit 1) where a tracked C++/CUDA source is not as .clang-format wants it, naming each file; run by
# scripts/test.sh (so .ci/run) before the build. `scripts/check-format.sh --fix` formats them in place.
# clang-format 14 (Debian 12's) is the reference: other versions may disagree on a few constructs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (apt-get install -y clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.cuh' '*.hpp')
if [[ ${1:-} == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} file(s) not clang-formatted (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1)):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "run: bash scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clean"
