#!/usr/bin/env bash
# `mnv2 completion bash|zsh` and `mnv2 man` (app/cli/cmd_docs.cpp), as a user meets them: the bash script sourced in
# `bash --norc` gives the expected COMPREPLY (commands, each command's flags as --help lists them, a choice
# option's values from the option table, file names for a file option); the zsh script parses in zsh; the page
# renders with `man -l` without a groff warning and has its sections; a shell it does not know is a usage error;
# every command's --help ends with two examples whose flags the command takes.
# Usage: test_completion_man.sh MNV2
set -euo pipefail
mnv2=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$mnv2" completion bash >"$scratch/mnv2.bash"
# complete WORD...: the candidates bash offers for the last word, one per line, sorted
complete() {
  bash --norc --noprofile -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _mnv2
                              printf "%s\n" "${COMPREPLY[@]}"' _ "$scratch/mnv2.bash" "$@" | sort
}
expect() {  # expect WHAT GOT WANT
  [[ $2 == "$3" ]] || fail "$1: got [$(tr '\n' ' ' <<<"$2")], want [$(tr '\n' ' ' <<<"$3")]"
}
expect "command" "$(complete mnv2 prof)" "profile"
expect "commands starting with r" "$(complete mnv2 r)" "$(printf '%s\n' remote roofline runs)"
expect "precision values" "$(complete mnv2 profile --precision f)" "$(printf '%s\n' fp16 fp32)"
expect "fusion values" "$(complete mnv2 bench --cuda-fusion '')" "$(printf '%s\n' auto block block_split expand_dw none | sort)"
expect "a flag" "$(complete mnv2 profile --cuda-fus)" "--cuda-fusion"
mkdir "$scratch/d" && touch "$scratch/d/model.onnx" "$scratch/d/other.txt"
expect "a file option" "$(cd "$scratch/d" && complete mnv2 profile --model mo)" "model.onnx"
# Every command: the flags offered are the flags its --help lists (both from the same declarations).
for cmd in info topology classify plan bench profile roofline memory eval compare runs lab targets remote; do
  listed=$("$mnv2" "$cmd" --help | sed -nE 's/^  (-[a-zA-Z],)?(--[a-z0-9][a-z0-9-]*).*/\2/p' | sort -u)
  offered=$(complete mnv2 "$cmd" -- | grep -v '^--$' | sort -u)
  expect "$cmd's flags" "$offered" "$listed"
done
expect "an unknown command" "$(complete mnv2 nosuch --)" ""
# Every command's --help ends with two examples of that command, whose flags are flags it takes.
for cmd in info topology classify plan bench profile roofline memory eval compare runs lab targets remote completion man; do
  help=$("$mnv2" "$cmd" --help)
  examples=$(sed -n '/^Examples:$/,$p' <<<"$help" | sed -n 's/^  //p')
  [[ $(grep -c "^mnv2 $cmd\b" <<<"$examples") == 2 ]] || fail "$cmd --help has no two examples of mnv2 $cmd: [$examples]"
  listed=$(sed -nE 's/^  (-[a-zA-Z],)?(--[a-z0-9][a-z0-9-]*).*/\2/p' <<<"$help")
  for flag in $(grep -oE -- '--[a-z0-9][a-z0-9-]*' <<<"$examples"); do
    grep -qx -- "$flag" <<<"$listed" || fail "an example of $cmd uses $flag, which $cmd does not take"
  done
done

"$mnv2" completion zsh >"$scratch/_mnv2"
head -1 "$scratch/_mnv2" | grep -qx '#compdef mnv2' || fail "the zsh script does not start with #compdef mnv2"
zsh -n "$scratch/_mnv2" || fail "the zsh script does not parse"
grep -q -- "--cuda-fusion\[.*\]:cuda-fusion:(auto none expand_dw block block_split)" "$scratch/_mnv2" ||
  fail "the zsh script does not offer --cuda-fusion's values"

set +e
"$mnv2" completion fish >/dev/null 2>"$scratch/err"
rc=$?
set -e
[[ $rc == 2 ]] || fail "completion fish: exit $rc, want 2"
grep -q "bash or zsh" "$scratch/err" || fail "completion fish says: $(cat "$scratch/err")"

"$mnv2" man >"$scratch/mnv2.1"
warnings=$(groff -man -ww -z "$scratch/mnv2.1" 2>&1)
[[ -z $warnings ]] || fail "groff warns: $warnings"
page=$(MANWIDTH=100 man -l "$scratch/mnv2.1" 2>"$scratch/man.err" | col -b)
# man's only allowed remark: a locale the machine lacks (a minimal container); anything else is the page's fault.
if grep -v "can't set the locale" "$scratch/man.err" | grep -q .; then fail "man -l: $(cat "$scratch/man.err")"; fi
for section in NAME SYNOPSIS DESCRIPTION COMMANDS ENVIRONMENT "EXIT STATUS" EXAMPLES FILES; do
  grep -qx "$section" <<<"$page" || fail "the page has no $section section"
done
for cmd in info topology classify plan bench profile roofline memory eval compare runs lab targets remote completion; do
  grep -q "^   mnv2 $cmd\$" <<<"$page" || fail "the page has no section for mnv2 $cmd"
done
environment=$(sed -n '/^ENVIRONMENT$/,/^EXIT STATUS$/p' <<<"$page")
for variable in MNV2_CUDA_FUSE MNV2_GPU_PLUGIN MNV2_SSH; do
  grep -q "$variable" <<<"$environment" || fail "the page's ENVIRONMENT lacks $variable"
done
# Every exit code, lab's 3 and 4 too, in the page's EXIT STATUS and in mnv2 --help (mnv2/exit_codes.h).
status=$(sed -n '/^EXIT STATUS$/,/^EXAMPLES$/p' <<<"$page")
help=$("$mnv2" --help)
for code in 0 1 2 3 4; do
  grep -qE "^[[:space:]]+$code[[:space:]]+[a-z]" <<<"$status" || fail "the page's EXIT STATUS lacks $code"
  grep -qE "Exit codes:.*[ ;]$code [a-z]" <<<"${help//$'\n'/ }" || fail "mnv2 --help's exit codes lack $code"
done
grep -q -- "--cuda-fusion WORD" <<<"$page" || fail "the page lacks --cuda-fusion"
[[ $(grep -cE "^[[:space:]]+mnv2 plan --gpu t4 --code-arch 75 --cuda-fusion block$" <<<"$page") == 1 ]] ||
  fail "the page lacks plan's examples"
echo "completion and man: ok"
