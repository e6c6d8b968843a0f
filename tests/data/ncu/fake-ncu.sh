#!/usr/bin/env bash
# A stand-in for Nsight Compute's ncu (tests/unit/test_deep_dive.cpp), for machines without ncu or a GPU: MODE picks
# what the real ncu does in that case, with its real messages and exit codes (Nsight Compute of CUDA 13.0).
#   fake-ncu.sh MODE FIXTURE_PREFIX LOG [ncu's arguments]
# MODE: ok | perm | fail | empty | nokernels | slow. FIXTURE_PREFIX: PATH.raw.csv.xz and PATH.details.csv.xz hold what
# --import prints. LOG: ncu's arguments are appended to it, one per line, then a line "--"; slow mode writes its
# child's pid to LOG.child.
set -u
mode=$1 fixture=$2 log=$3
shift 3
printf '%s\n' "$@" -- >>"$log"
case "${1:-}" in
--version)
  printf 'NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n'
  printf 'Version 2025.3.1.0 (build 36398880) (public-release)\n'
  exit 0
  ;;
--import)
  page="" prev=""
  for a in "$@"; do
    [[ $prev == --page ]] && page=$a
    prev=$a
  done
  [[ $mode == nokernels ]] && exit 0 # a report with no kernel: the page has no rows at all
  xz -dc "$fixture.$page.csv.xz"
  exit 0
  ;;
esac
out=""
prev=""
for a in "$@"; do
  [[ $prev == -o ]] && out=$a
  prev=$a
done
case $mode in
ok | nokernels)
  echo "==PROF== Connected to process $$ (/opt/mnv2/bin/mnv2)"
  echo "==PROF== Profiling \"fused_block_kernel\" - 0: 0%....50%....100% - 41 passes"
  echo "==PROF== Disconnected from process $$"
  echo "==PROF== Report: $out.ncu-rep"
  : >"$out.ncu-rep"
  ;;
perm)
  echo "==PROF== Connected to process $$ (/opt/mnv2/bin/mnv2)"
  echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
  echo "==PROF== Disconnected from process $$"
  echo "==WARNING== No kernels were profiled."
  ;;
fail)
  echo "==PROF== Connected to process $$ (/opt/mnv2/bin/mnv2)"
  echo "mnv2: backend 'cuda' is not available: no CUDA-capable device is detected" >&2
  echo "==PROF== Disconnected from process $$"
  echo "==ERROR== The application returned an error code (1)."
  echo "==WARNING== No kernels were profiled."
  exit 1
  ;;
empty)
  echo "==PROF== Connected to process $$ (/opt/mnv2/bin/mnv2)"
  echo "==PROF== Disconnected from process $$"
  echo "==WARNING== No kernels were profiled."
  ;;
slow)
  echo "==PROF== Connected to process $$ (/opt/mnv2/bin/mnv2)"
  sleep 300 &
  echo $! >"$log.child"
  wait
  ;;
esac
exit 0
