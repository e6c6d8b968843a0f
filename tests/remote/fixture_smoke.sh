#!/usr/bin/env bash
# tests/remote/fixture_smoke.sh [PARENT]: checks tests/remote/fixture.sh end to end. Starts the Slurm
# and the ssh fixtures in one fresh folder beneath PARENT (default: $PWD/remote-fixture-smoke; its
# parents must suit sshd's StrictModes, so not /tmp), runs the checks the remote-target tests rely
# on, prints PASS/FAIL for each, and always stops both fixtures. The folder is removed when every
# check passed and kept (for its logs) otherwise. Exit: 0 all passed, 1 a failure, 77 skipped
# (fixture.sh said SKIP, e.g. not root). Several instances may run at once.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
fixture=$here/fixture.sh
parent=${1:-$PWD/remote-fixture-smoke}
mkdir -p -- "$parent"
parent=$(cd -- "$parent" && pwd -P)
D=$(mktemp -d "$parent/run.XXXXXX")
passed=0
failed=0
bg_pids=()

cleanup() {
  local rc=$? p
  trap - EXIT
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  bash "$fixture" ssh-stop "$D" || rc=1
  bash "$fixture" slurm-stop "$D" || rc=1
  if ((failed == 0 && rc == 0)); then
    rm -rf -- "$D"
    rmdir -- "$parent" 2>/dev/null || true
  else
    echo "kept $D for its logs (log/, state)" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1: $2"; failed=$((failed + 1)); }
ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }

# start_fixture WHAT VAR: runs fixture.sh WHAT-start, puts its KEY=VALUE lines into this shell.
start_fixture() {
  local what=$1 out rc=0 t0 line
  t0=$(ms)
  out=$(bash "$fixture" "$what-start" "$D") || rc=$?
  if ((rc == 77)); then
    echo "$out"
    exit 77
  fi
  ((rc == 0)) || { fail "$what-start" "exit $rc"; exit 1; }
  echo "time: $what-start took $(($(ms) - t0)) ms"
  while IFS= read -r line; do
    [[ $line =~ ^[A-Z_]+= ]] || { fail "$what-start" "unexpected output line: $line"; exit 1; }
    printf -v "${line%%=*}" '%s' "${line#*=}"
  done <<<"$out"
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s
wait_for() {
  local n=$(($1 * 10)) i
  shift
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}
gone() {  # our background child has exited (a zombie until we wait for it)
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
  [ "${st%% *}" = Z ]
}
job_state_is() { [ "$(squeue -h -j "$1" -o '%T %r' 2>/dev/null)" = "$2" ]; }
job_gone() { [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]; }
has_job_of() { [ -n "$(first_job_of "$1")" ]; }
no_cm_socket() { ! compgen -G "$SSH_CONTROL_DIR/*" >/dev/null; }
first_job_of() { squeue -h -t PENDING,RUNNING -u "$1" -o %i 2>/dev/null | sed -n 1p; }

SLURM_CONF="" SSH_CONFIG="" SSH_USER="" SSH_CONTROL_DIR=""
start_fixture slurm
export SLURM_CONF
FIXTURE_SSHD_SETENV="SLURM_CONF=$SLURM_CONF" start_fixture ssh
cfg=$SSH_CONFIG
host=$(hostname)
cd "$D"

# 1. a command through ssh, in the user's tcsh
out=$(ssh -F "$cfg" mnv2-test 'echo $SHELL; echo ok' 2>&1) || true
if [ "$out" = $'/usr/bin/tcsh\nok' ]; then pass "ssh runs a command in a tcsh login shell"; else fail "ssh tcsh" "got '$out'"; fi

# 2. the key that is not authorized
rc=0
err=$(ssh -F "$cfg" mnv2-test-wrong-key true 2>&1 </dev/null) || rc=$?
if ((rc == 255)) && [[ $err == *"Permission denied (publickey)."* ]]; then pass "wrong key: exit 255, Permission denied (publickey)."; else fail "wrong key" "exit $rc: $err"; fi

# 3. a host key that is not known
rc=0
err=$(ssh -F "$cfg" mnv2-test-unknown-hostkey true 2>&1 </dev/null) || rc=$?
if ((rc == 255)) && [[ $err == *"Host key verification failed."* ]]; then pass "unknown host key: exit 255, Host key verification failed."; else fail "unknown host key" "exit $rc: $err"; fi

# 4. nothing listening (port 1, tcpmux, is not served anywhere)
rc=0
err=$(ssh -F "$cfg" -o Port=1 -o ConnectTimeout=5 mnv2-test true 2>&1 </dev/null) || rc=$?
if ((rc == 255)) && [[ $err == *"Connection refused"* ]]; then pass "nothing listening: exit 255, Connection refused"; else fail "connection refused" "exit $rc: $err"; fi

# 5. a command that does not exist, in tcsh
rc=0
err=$(ssh -F "$cfg" mnv2-test nosuchcmd 2>&1 </dev/null) || rc=$?
if ((rc == 1)) && [ "$err" = "nosuchcmd: Command not found." ]; then pass "tcsh: nosuchcmd: Command not found., exit 1"; else fail "command not found" "exit $rc: $err"; fi

# 6. a ControlMaster connection
cp="$SSH_CONTROL_DIR/%C"
if ssh -F "$cfg" -o ControlMaster=auto -o ControlPath="$cp" -o ControlPersist=60 mnv2-test true </dev/null &&
  ssh -F "$cfg" -o ControlPath="$cp" -O check mnv2-test 2>/dev/null &&
  [ "$(ssh -F "$cfg" -o ControlPath="$cp" -o ControlMaster=no mnv2-test 'echo muxed' </dev/null)" = muxed ] &&
  ssh -F "$cfg" -O exit -o ControlPath="$cp" mnv2-test 2>/dev/null &&
  wait_for 5 no_cm_socket; then
  pass "ControlMaster: start, check, reuse, exit"
else
  fail "ControlMaster" "see above"
fi

# 7. srun as root, with the GPU GRES
out=$(srun -p gpu --gres=gpu:1 -t 1 hostname 2>&1 </dev/null) || true
if [ "$out" = "$host" ]; then pass "srun -p gpu --gres=gpu:1 as root"; else fail "srun as root" "got '$out'"; fi

# 8. srun through ssh, as the test user
# (tcsh: a backslash does not protect '$' inside double quotes; single quotes do)
out=$(ssh -F "$cfg" mnv2-test "srun -p gpu --gres=gpu:h100:1 -t 1 sh -c 'hostname; id -un; echo CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES'" 2>&1 </dev/null) || true
if [ "$out" = "$host"$'\n'"$SSH_USER"$'\nCUDA_VISIBLE_DEVICES=0' ]; then pass "srun --gres=gpu:h100:1 through ssh, as $SSH_USER"; else fail "srun through ssh" "got '$out'"; fi

# 9. stdin through srun, locally and through ssh
out=$(echo hello | srun -p gpu -t 1 cat 2>&1) || true
out2=$(echo hello | ssh -F "$cfg" mnv2-test srun -p gpu -t 1 cat 2>&1) || true
if [ "$out" = hello ] && [ "$out2" = hello ]; then pass "stdin passes through srun (and ssh + srun)"; else fail "stdin through srun" "got '$out' and '$out2'"; fi

# 10. a DOWN partition: the job pends with reason PartitionDown; scancel ends srun
ssh -F "$cfg" mnv2-test srun -p down -t 1 hostname >"$D/down.out" 2>"$D/down.err" </dev/null &
sp=$!
bg_pids+=("$sp")
job=""
wait_for 10 has_job_of "$SSH_USER" && job=$(first_job_of "$SSH_USER")
if [ -n "$job" ] && wait_for 10 job_state_is "$job" "PENDING PartitionDown"; then
  reason=$(squeue -h -j "$job" -o '%T %r')
  scancel "$job"
  rc=0
  wait_for 10 gone "$sp" && { wait "$sp" || rc=$?; }
  if gone "$sp" && grep -q "queued and waiting for resources" "$D/down.err"; then
    pass "DOWN partition: squeue '$reason', scancel ends srun (exit $rc)"
  else
    fail "DOWN partition" "srun still running or no 'queued' line: $(cat "$D/down.err")"
  fi
else
  fail "DOWN partition" "job '$job' not PENDING PartitionDown: $(squeue -h -o '%i %T %r' 2>&1)"
  [ -z "$job" ] || scancel "$job" || true
fi

# 11. a running job killed with scancel leaves squeue within seconds
ssh -F "$cfg" mnv2-test srun -p gpu -t 2 sleep 100 >"$D/sleep.out" 2>"$D/sleep.err" </dev/null &
sp=$!
bg_pids+=("$sp")
job=""
wait_for 10 has_job_of "$SSH_USER" && job=$(first_job_of "$SSH_USER")
if [ -n "$job" ] && wait_for 10 job_state_is "$job" "RUNNING None"; then
  t0=$(ms)
  scancel "$job"
  if wait_for 10 job_gone "$job"; then
    gone_ms=$(($(ms) - t0))
    rc=0
    wait_for 10 gone "$sp" && { wait "$sp" || rc=$?; }
    if gone "$sp"; then pass "scancel: running job left squeue after $gone_ms ms, srun exited $rc"; else fail "scancel" "srun still running"; fi
  else
    fail "scancel" "job $job still in squeue 10 s after scancel"
  fi
else
  fail "scancel" "job '$job' not RUNNING: $(squeue -h -o '%i %T %r' 2>&1)"
fi

echo "$passed passed, $failed failed"
((failed == 0))
