#!/usr/bin/env bash
# Installs the Debian 12 packages the build and the tests need (idempotent; apt runs only when one is missing).
set -euo pipefail
packages=(
  build-essential cmake ninja-build git pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev  # JSON reports (find_package(nlohmann_json 3.11))
  libopencv-dev libgtest-dev
  libcli11-dev  # the mnv2 command line
  libssl-dev  # libcrypto's SHA-256: model and external data checksums, the kernel lab's cache keys
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN; its CMake config asks for OpenCL (Debian's build has the OpenCL GPU runtime)
  qt6-base-dev qt6-base-dev-tools libqcustomplot-dev libqcustomplot2.1-qt6 libgl-dev
  xvfb xauth
  python3  # tests/cli/golden/run_golden.py, tests/docs/*.py (README tour, links), scripts/cli-reference.py
  python3-jsonschema  # scripts/validate-reports.py: every report the tests write against resources/schemas
  dpkg-dev desktop-file-utils
  clang-format  # scripts/check-format.sh, run by scripts/test.sh
  time  # GNU time: the tests that measure a run's peak memory (tests/cli/test_cli_budgets.cpp)
  openssh-server openssh-client  # tests/remote/fixture.sh: a throwaway sshd on 127.0.0.1 for the remote-target tests
  tcsh  # the remote test user's login shell (our commands must survive a csh-family shell)
  procps  # pgrep, pkill, ps: the remote tests' fixture and checks (not in a minimal container)
  slurmctld slurmd slurm-client munge  # tests/remote/fixture.sh: a single-node Slurm cluster (srun, squeue, scancel, sinfo)
  man-db groff-base bsdextrautils zsh  # tests/cli/test_completion_man.sh: man -l, groff's warnings, col, zsh -n
  xz-utils  # xz -dc: the Nsight Compute fixtures of the deep-dive tests (tests/data/ncu/*.xz)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "note: no CUDA toolkit found (/usr/local/cuda): building without the GPU backends" >&2
fi
