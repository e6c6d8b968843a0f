#!/usr/bin/env bash
# Issue 30's sixteen findings, each measured on this machine: the hostile input through the real `mnv2` under GNU
# time where one command shows it (exit status, seconds, peak resident memory, the first error line), and the
# test that covers it, also under GNU time (a CLI test's peak is its largest `mnv2` child's or its own). Writes
# findings.txt beside itself. Usage, from the repository root after scripts/build.sh (as root, as CI runs):
#   bash docs/bench/limits-2026-11-29/findings.sh [BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
shared=${MNV2_SHARED_DIR:-$root/../shared}
mnv2=$build/app/mnv2
model=$shared/weights/mobilenet_v2_1.0_224.onnx
out=$here/findings.txt
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cd "$work" || exit 1
: >"$out"

# cmd FINDING WHAT [shell lines before] -- ARGS...: one run of mnv2 under GNU time.
cmd() {
  local finding=$1 what=$2 pre=$3
  shift 4
  rm -f "$work/t.txt"
  bash -c "${pre:-:}; exec /usr/bin/time -f '%e %M' -o '$work/t.txt' \"\$0\" \"\$@\"" "$mnv2" "$@" >"$work/o.txt" 2>"$work/e.txt" </dev/null
  local rc=$? seconds kib
  read -r seconds kib < <(tail -n 1 "$work/t.txt" 2>/dev/null || echo "-1 -1024")
  local said
  said=$(grep -m1 '^error: ' "$work/e.txt" | cut -c1-170)
  printf '%-3s mnv2 %-44s exit %d, %6.2f s, peak %4d MiB  %s\n' "$finding" "$what" "$rc" "$seconds" $((kib / 1024)) \
    "${said:-(no error line)}" | tee -a "$out"
}

# tst FINDING PROGRAM FILTER: the covering tests under GNU time.
tst() {
  local finding=$1 program=$2 filter=$3
  rm -f "$work/t.txt"
  /usr/bin/time -f '%e %M' -o "$work/t.txt" "$build/tests/$program" --gtest_filter="$filter" >"$work/g.txt" 2>&1
  local rc=$? seconds kib
  read -r seconds kib < <(tail -n 1 "$work/t.txt" 2>/dev/null || echo "-1 -1024")
  local passed
  passed=$(grep -c '^\[       OK \]' "$work/g.txt")
  printf '%-3s test %-60s exit %d, %6.2f s, peak %4d MiB, %d passed\n' "$finding" "$filter" "$rc" "$seconds" \
    $((kib / 1024)) "$passed" | tee -a "$out"
}

{
  echo "# $(date -u '+%F %T UTC'), commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores," \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), user $(id -un)"
} | tee -a "$out"

# 1. External data read while a sub-folder is swapped for a link outside (hundreds of rounds).
tst 1 mnv2_unit_tests 'ExternalDataHostile.SwappingAFolderForALinkOutsideNeverReadsOutside:ContainedOpen.*'
# 2. No shared cache folder; one open to others is not used; a planted CUBIN is no hit.
mkdir -p home
cmd 2 "roofline --backend cpu (no HOME, no XDG_CACHE_HOME)" "unset HOME XDG_CACHE_HOME" -- roofline --model "$model" \
  --backend cpu --iters 3
tst 2 mnv2_unit_tests 'PrivateCache.*'
tst 2 mnv2_cli_tests 'CliRoofline.ACacheFolderNotPrivateIsNotUsed'
# 3. Outputs that are the command's inputs.
cp "$model" mine.onnx && cp "$shared/images/cat.bmp" p.bmp && chmod u+w mine.onnx p.bmp
printf 'p.bmp 285\n' >l.txt
cmd 3 "profile --csv MODEL --json IMAGE" "" -- profile --model mine.onnx --image p.bmp --csv mine.onnx --json p.bmp
cmd 3 "eval --list l.txt --json l.txt" "" -- eval --model mine.onnx --images . --list l.txt --json l.txt
tst 3 mnv2_cli_tests 'CliHardening.AnOutputThatIsAnInputIsRefusedBeforeAnyWork'
# 4. A read-only target, as root too.
echo '{}' >ro.json && chmod 0444 ro.json
cmd 4 "profile --json ro.json (mode 0444)" "" -- profile --model "$model" --backend cpu-ref --iters 1 --json ro.json
tst 4 mnv2_cli_tests 'CliHardening.AReadOnlyTargetIsRefusedAlsoAsRoot'
# 5. An eval list naming /etc/shadow, a '..', a BOM, a class folder named like two classes.
printf 'p.bmp 285\n/etc/shadow 1\n' >abs.txt
cmd 5 "eval --list (naming /etc/shadow)" "" -- eval --model "$model" --images . --list abs.txt
tst 5 mnv2_unit_tests 'EvalSet.*'
# 6. Two processes writing the same report set at once (300 rounds).
tst 6 mnv2_unit_tests 'OutputFiles.ConcurrentSetsEndAsOneProcesssWholeSet'
# 7. Roofline and plan cache writers at once; a denormal cached bandwidth.
tst 7 mnv2_unit_tests 'PrivateCache.Concurrent*:PrivateCache.ADenormalCachedBandwidthIsMeasuredAgain:PrivateCache.UnbelievableCeilingsAreRefused'
# 8. A file-size limit (ulimit -f 10).
cmd 8 "profile --json o.json --csv o.csv (ulimit -f 10)" "ulimit -f 10" -- profile --model "$model" --backend cpu-ref \
  --iters 2 --json o.json --csv o.csv
tst 8 mnv2_cli_tests 'CliHardening.AFileSizeLimitIsACleanErrorWithNoTemporaryLeft'
# 9. Standard output that cannot be written.
cmd 9 "classify cat.bmp > /dev/full" "exec >/dev/full" -- classify --model "$model" p.bmp
tst 9 mnv2_cli_tests 'CliHardening.AStandardOutputThatCannotBeWrittenFailsTheCommand'
# 10. A process limit (ulimit -u, as another user: root ignores it).
tst 10 mnv2_cli_tests 'CliHardening.AThreadLimitIsOurErrorLine'
# 11. eval of 20,000 images at --batch 4096 --threads 256 (the queue inside the memory the process may take).
tst 11 mnv2_cli_tests 'CliBudgets.EvalLoaderQueueIsCutToTheMemoryTheProcessMayTake'
tst 11 mnv2_unit_tests 'EvalLoaderQueue.*'
# 12. classify of many files (also measure.sh: 64, 2,000 and 6,000 photographs with the real model).
tst 12 mnv2_cli_tests 'CliBudgets.ClassifyStreamsManyFilesInBoundedBatches:CliBudgets.StreamedBatchesGiveTheSameResults'
# 13. A JPEG of 5,000 empty scans over 16384x16384; TIFF sides as SSHORT / SLONG.
tst 13 mnv2_cli_tests 'CliBudgets.ImagesWhoseWorkHidesInTheirHeadersAreRefusedBeforeDecoding'
tst 13 mnv2_unit_tests 'RobustImages.*'
# 14. Sizes a model, its metadata or the command line declares.
cmd 14 "bench --batch 65536" "" -- bench --model "$model" --batch 65536 --warmup 0 --iters 1
cmd 14 "profile --batch 512 --input-size 8192x8192" "" -- profile --model "$model" --batch 512 --input-size 8192x8192 \
  --iters 1
tst 14 mnv2_cli_tests 'CliBudgets.ModelDeclaredSizesAreRefusedFromTheGraphBeforeAnyWork'
tst 14 mnv2_unit_tests 'ModelMain.ActivationFloorFromTheShapes'
# 15. Names from files reach the terminal escaped.
cp p.bmp "$(printf 'cat\033[2J\r\nEVIL.bmp')"
cmd 15 "classify 'cat<ESC>[2J<CR><LF>EVIL.bmp' (missing twin)" "" -- classify --model "$model" \
  "$(printf 'cat\033[2J\r\nEVIL-absent.bmp')"
tst 15 mnv2_cli_tests 'CliHardening.NamesFromFilesReachTheTerminalEscaped'
# 16. Messages that say what happened.
cmd 16 "lab --slot depthwise --kernel /dev/null" "" -- lab --slot depthwise --kernel /dev/null --model "$model"
tst 16 mnv2_cli_tests 'CliLab.UsageErrorsExit2AndWriteNoResult'
tst 16 mnv2_unit_tests 'RobustImages.DecodingOutOfMemoryIsSaidAsSuch:OnnxImport.PreprocessMetadataOutOfRangeIsTheModelsFault:ExporterOps.SixteenBitAndDoubleInitializersDecode:ExternalDataHostile.DirectoriesAndDevicesAreRefused'
