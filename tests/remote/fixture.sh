#!/usr/bin/env bash
# tests/remote/fixture.sh: real daemons for the remote-target integration tests (mnv2 run through
# OpenSSH and Slurm). It starts, as root and without systemd, a throwaway sshd on 127.0.0.1 with a
# throwaway Unix user whose login shell is tcsh, and a single-node Slurm cluster (munged, slurmctld,
# slurmd) on this host. Every instance lives in its own folder DIR, with its own user, keys, ports,
# munge key and cluster, so tests may run it in parallel. Each start takes a second or two.
#
# Usage
#   fixture.sh ssh-start   DIR [USERNAME]   sshd + test user (default name: mnv2rt + 8 hex digits)
#   fixture.sh ssh-stop    DIR              kill sshd and every process of the test user, remove its
#                                           files in /tmp, /var/tmp and /dev/shm, userdel it
#   fixture.sh slurm-start DIR              munged + slurmctld + slurmd, waits until the node is idle
#   fixture.sh slurm-stop  DIR              cancel this cluster's leftover jobs, stop its daemons
# Both fixtures may share one DIR (start Slurm first and pass its SLURM_CONF to ssh-start through
# FIXTURE_SSHD_SETENV) or use sibling folders. Stops are idempotent, safe after a start that failed
# half way, and only ever touch the daemons and the user recorded in DIR/state.
#
# Requirements
#   - root (otherwise: "SKIP: ..." and exit 77), Debian 12's openssh-server, openssh-client, tcsh,
#     slurmctld, slurmd, slurm-client and munge (scripts/install-deps.sh installs them).
#   - DIR is a folder the test made (it is created if missing) and removes afterwards (rm -rf, after
#     the stops). ssh-start makes DIR 0755 and needs every parent of DIR, up to /, to be owned by root,
#     not group/other-writable and searchable by others: sshd's StrictModes checks every parent of the
#     user's home and authorized_keys, and the user must be able to walk down to its home. A folder
#     beneath the CMake build tree (e.g. build/tests/remote/...) is fine; one beneath /tmp (mode 1777)
#     is NOT: ssh-start then fails with a message saying so.
#   - Environment, optional: FIXTURE_SSHD_SETENV="NAME=VALUE NAME2=VALUE2" (space-separated, no
#     spaces or quotes inside a value): environment that sshd gives every session (sshd_config
#     SetEnv), e.g. "SLURM_CONF=DIR/etc/slurm.conf PATH=/usr/local/bin:/usr/bin:/bin".
#     FIXTURE_TTL_S (default 3600, 0: off): a watchdog runs the stop after that many seconds in case
#     the test dies without it (a CTest timeout kills the test, not the daemons: they run in
#     sessions of their own). The stop ends the watchdog.
#
# How: the daemons run in the foreground (sshd -D, munged -F, slurmctld -D, slurmd -D) detached
# with setsid, cwd /, no descriptor of the caller (a pipe the test reads reaches EOF when this
# script exits), their PIDs recorded in DIR/state at once. sshd's own daemonising would exit 0
# before binding, hiding a port clash; here a start waits until that very PID listens on the port
# (bounded) and retries other random ports (20000-60000, outside the kernel's ephemeral range)
# when one was taken. The stops check each recorded PID's command line before signalling it.
# Slurm: SlurmUser=root, auth/munge with its own munged (AuthInfo=socket=...), no cgroup at all
# (proctrack/linuxproc, task/none, jobacct_gather/none: no cgroup.conf needed), select/cons_tres,
# node NodeAddr=127.0.0.1, partitions gpu (Default, UP) and down (State=DOWN), Gres=gpu:h100:1
# with gres.conf File=/dev/null.
#
# Output: KEY=VALUE lines on stdout (progress and diagnostics go to stderr)
#   ssh-start:   SSH_CONFIG=DIR/client/ssh_config  (always pass it: ssh -F "$SSH_CONFIG" ...; OpenSSH
#                                                  reads ~/.ssh from the passwd entry, not from $HOME)
#                SSH_HOST=mnv2-test                (also in SSH_CONFIG: mnv2-test-unknown-hostkey, whose
#                                                  known_hosts is empty, and mnv2-test-wrong-key, whose
#                                                  key DIR/client/wrong_key is not authorized)
#                SSH_PORT=<port>  SSH_USER=<user>  SSH_HOME=DIR/home  SSHD_PID=<pid>
#                SSHD_LOG=DIR/log/sshd.log
#                SSH_CONTROL_DIR=<dir>  an empty 0700 folder for ControlPath=<dir>/%C: DIR/cm, or one
#                                       beneath /run/mnv2-fixture/ when DIR is too long for that (the
#                                       expanded ControlPath must stay within 90 bytes: ssh appends
#                                       a 17-character suffix and a Unix socket path has 107 bytes)
#   slurm-start: SLURM_CONF=DIR/etc/slurm.conf  SLURM_PARTITION=gpu  SLURM_DOWN_PARTITION=down
#                SLURM_GRES=gpu:h100:1  MUNGE_SOCKET=<path>  (DIR/munge/munge.socket.2, or beneath
#                /run/mnv2-fixture/ when DIR is too long for a Unix socket path)
#   Other files: DIR/client/{id_ed25519,wrong_key,known_hosts,empty_known_hosts}, DIR/etc/*,
#                DIR/log/* (sshd.log, munged.log, slurmctld.log, slurmd.log), DIR/state.
#
# Exit codes: 0 ok; 77 skipped ("SKIP: <reason>" on stdout: not root, a package missing);
#             1 failure (message and the daemons' log tails on stderr). Usage errors exit 1 too.
#
# What ssh and srun report (Debian 12: OpenSSH 9.2p1, tcsh 6.24.07, Slurm 22.05.8), for the C++ side:
# see the table at the end of this file.
set -euo pipefail
umask 022

readonly SSHD=/usr/sbin/sshd
readonly TCSH=/usr/bin/tcsh
readonly SSHD_WAIT_S=10   # until sshd listens
readonly NODE_WAIT_S=20   # until the Slurm node is idle
GRACE_S=3                 # between SIGTERM and SIGKILL

log() { printf 'fixture: %s\n' "$*" >&2; }
die() { printf 'fixture: error: %s\n' "$*" >&2; exit 1; }
skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
usage() {
  sed -n '/^# Usage/,/^# Both/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 1
}

# Slurm variables from a surrounding job would steer our own sinfo/srun/scancel calls elsewhere.
for name in $(compgen -e); do
  case $name in SLURM_*) unset "$name" ;; esac
done

# ---------------------------------------------------------------------------------------------- util

require_root() {
  [ "$(id -u)" = 0 ] || skip "the remote fixture must run as root (it adds a Unix user and starts sshd, munged, slurmctld, slurmd)"
}

require_cmds() {  # require_cmds PACKAGE CMD...
  local pkg=$1 c
  shift
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || skip "$c not found: install $pkg (bash scripts/install-deps.sh)"
  done
}

now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }

# Sets the global DIR to the absolute physical path of $1, creating it if needed (a stop, given
# "stop", exits quietly instead: nothing to stop).
set_dir() {
  [ -n "${1:-}" ] || usage
  if [ ! -d "$1" ]; then
    [ "${2:-}" = stop ] && exit 0
    mkdir -p -- "$1"
  fi
  DIR=$(cd -- "$1" && pwd -P)
  [ "$DIR" != / ] || die "DIR must not be /"
  case $DIR in *[[:space:]]* | *[\"\\\$\`\'%]*) die "DIR must not contain spaces, quotes, '%' or '\$': $DIR" ;; esac
  STATE=$DIR/state
  touch "$STATE"
}

state_set() { printf '%s=%s\n' "$1" "$2" >>"$STATE"; }  # one short write: safe to append concurrently
state_get() {
  [ -f "$STATE" ] || return 0
  sed -n "s/^$1=//p" "$STATE" | tail -n 1
}

# alive PID: a running (not zombie) process
alive() {
  local st
  [[ ${1:-} =~ ^[0-9]+$ ]] || return 1
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "${st%% *}" != Z ]
}

# ours PID TEXT: alive and its command line contains TEXT (guards against a recycled PID)
ours() {
  local c
  alive "${1:-}" || return 1
  c=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ $c == *"$2"* ]]
}

# stop_pids TEXT PID...: SIGTERM those of the PIDs that are ours, SIGKILL after the grace period.
stop_pids() {
  local text=$1 p left i
  shift
  local pids=()
  for p in "$@"; do ours "$p" "$text" && pids+=("$p"); done
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < GRACE_S * 10; i++)); do
    left=0
    for p in "${pids[@]}"; do alive "$p" && left=1; done
    ((left)) || return 0
    sleep 0.1
  done
  for p in "${pids[@]}"; do
    if alive "$p"; then
      ((GRACE_S == 0)) || log "pid $p ($text) ignored SIGTERM for ${GRACE_S}s: SIGKILL"
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  for ((i = 0; i < 50; i++)); do
    left=0
    for p in "${pids[@]}"; do alive "$p" && left=1; done
    ((left)) || return 0
    sleep 0.1
  done
  log "warning: pids ${pids[*]} still alive after SIGKILL"
}

# TCP ports, from /proc/net/tcp{,6}: no ss/netstat needed.
tcp_tables() { local f; for f in /proc/net/tcp /proc/net/tcp6; do [ -r "$f" ] && echo "$f"; done; return 0; }
port_bound() {  # any socket on local port $1
  local hex files
  hex=$(printf ':%04X' "$1")
  mapfile -t files < <(tcp_tables)
  awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }' "${files[@]}"
}
pid_listens() {  # pid_listens PID PORT: PID holds a listening socket on local port PORT
  local hex files inodes fd l
  hex=$(printf ':%04X' "$2")
  mapfile -t files < <(tcp_tables)
  inodes=$(awk -v h="$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == h { print $10 }' "${files[@]}")
  [ -n "$inodes" ] || return 1
  for fd in /proc/"$1"/fd/*; do
    l=$(readlink "$fd" 2>/dev/null) || continue
    case $l in socket:\[*\]) l=${l#socket:[}; grep -qxF "${l%]}" <<<"$inodes" && return 0 ;; esac
  done
  return 1
}

# pick_port [EXCLUDED...]: a random free port in 20000-60000, outside the kernel's ephemeral range
# where possible (an outgoing connection could take it meanwhile). A race with another process is
# still possible: the callers retry when the daemon cannot bind.
pick_port() {
  local lo=20000 hi=60000 elo ehi p i x
  read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range || { elo=0; ehi=0; }
  if ((elo - 1 - lo >= 2000)); then
    hi=$((elo - 1 < hi ? elo - 1 : hi))
  elif ((hi - ehi - 1 >= 2000)); then
    lo=$((ehi + 1))
  fi
  for ((i = 0; i < 200; i++)); do
    p=$(((RANDOM << 15 | RANDOM) % (hi - lo + 1) + lo))
    for x in "$@"; do [ "$x" = "$p" ] && continue 2; done
    port_bound "$p" && continue
    echo "$p"
    return 0
  done
  die "no free TCP port found in $lo-$hi"
}

tail_logs() {  # tail_logs FILE...: the last lines of each to stderr
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    printf -- '----- last lines of %s -----\n' "$f" >&2
    tail -n 25 "$f" >&2 || true
  done
}

# After a start has begun to make things, a failure stops what it made (the logs stay in DIR).
cleanup_on_failure() {  # cleanup_on_failure ssh|slurm
  trap 'rc=$?; if ((rc != 0 && rc != 77)); then log "'"$1"'-start failed: stopping what it started"; ('"$1"'_stop "$DIR") || true; fi' EXIT
}

# launch OUTFILE CMD...: runs CMD detached: in a session of its own (out of the caller's process
# group, which a CTest timeout kills), cwd /, stdin /dev/null, stdout+stderr appended to OUTFILE,
# and no other descriptor of the caller (a pipe the test reads would otherwise never see EOF).
# Sets LAUNCHED to its pid (setsid does not fork here: a background subshell leads no group).
launch() {
  local out=$1
  shift
  (
    cd /
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      if ((fd > 2 && fd < 255)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@" </dev/null >>"$out" 2>&1
  ) &
  LAUNCHED=$!
  disown "$LAUNCHED"
}

# A watchdog per fixture: if the test dies without its stop (a CTest timeout kills only the test's
# process group; the daemons live in sessions of their own), the stop runs after FIXTURE_TTL_S
# seconds (default 3600; 0: none). The stop kills the watchdog.
start_watchdog() {  # start_watchdog ssh|slurm
  local ttl=${FIXTURE_TTL_S:-3600} self
  [[ $ttl =~ ^[0-9]+$ ]] || die "FIXTURE_TTL_S must be a number of seconds: $ttl"
  ((ttl > 0)) || return 0
  self=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/$(basename -- "${BASH_SOURCE[0]}")
  # shellcheck disable=SC2016  # expanded by that bash
  launch /dev/null bash -c 'sleep "$1" && exec bash "$2" "$3-stop" "$4"' \
    fixture-watchdog "$ttl" "$self" "$1" "$DIR" "$1-watchdog-end"
  local wpid=$LAUNCHED
  state_set "WATCHDOG_$1" "$wpid"
}
stop_watchdog() {  # stop_watchdog ssh|slurm: the watchdog and its sleep (its own process group)
  local p
  for p in $(sed -n "s/^WATCHDOG_$1=//p" "$STATE" | xargs); do
    if ours "$p" "$DIR $1-watchdog-end"; then kill -TERM -- "-$p" 2>/dev/null || true; fi
  done
}

rand_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# Retries a command that fails while another useradd/userdel holds the passwd/group locks.
with_pw_lock_retry() {
  local i rc out
  for ((i = 0; i < 20; i++)); do
    rc=0
    out=$("$@" 2>&1) || rc=$?
    if ((rc == 0)); then return 0; fi
    case $out in *lock* | *"try again"*) sleep 0.$((RANDOM % 5 + 1)) ;; *) printf '%s\n' "$out" >&2; return "$rc" ;; esac
  done
  printf '%s\n' "$out" >&2
  return "$rc"
}

# ----------------------------------------------------------------------------------------------- ssh

# Every parent of DIR, up to /, must be root's, not writable by group/other, and searchable by others.
check_parents() {
  local d uid mode m
  d=$(dirname -- "$DIR")
  while :; do
    read -r uid mode < <(stat -c '%u %a' -- "$d")
    m=$((8#$mode))
    if ((uid != 0)); then
      die "DIR's parent $d is owned by uid $uid, not root: sshd's StrictModes refuses a home or authorized_keys below it (DIR=$DIR). Use a folder beneath the build tree."
    fi
    if ((m & 8#022)); then
      die "DIR's parent $d is group/other-writable (mode $mode): sshd's StrictModes refuses a home or authorized_keys below it (DIR=$DIR). Do not use /tmp; use a folder beneath the build tree."
    fi
    if ! ((m & 8#001)); then
      die "DIR's parent $d is not searchable by others (mode $mode): the test user could not reach its home (DIR=$DIR)"
    fi
    [ "$d" = / ] && break
    d=$(dirname -- "$d")
  done
  [ "$(stat -c %u -- "$DIR")" = 0 ] || die "DIR must be owned by root: $DIR"
}

openssh_at_least() {  # openssh_at_least MAJOR MINOR
  local v
  v=$("$SSHD" -V 2>&1 || ssh -V 2>&1 || true)
  [[ $v =~ OpenSSH_([0-9]+)\.([0-9]+) ]] || return 1
  ((BASH_REMATCH[1] > $1 || (BASH_REMATCH[1] == $1 && BASH_REMATCH[2] >= $2)))
}

sshd_setenv_line() {
  local pair out="" pairs=()
  read -r -a pairs <<<"${FIXTURE_SSHD_SETENV:-}"
  ((${#pairs[@]})) || return 0
  for pair in "${pairs[@]}"; do
    [[ $pair =~ ^[A-Za-z_][A-Za-z0-9_]*=[^\"\\]*$ ]] || die "FIXTURE_SSHD_SETENV: not NAME=VALUE (or a quote/backslash in it): $pair"
    out+=" \"$pair\""
  done
  echo "SetEnv$out"
}

ssh_start() {
  [ -n "${1:-}" ] || usage
  require_root
  set_dir "${1:-}"
  require_cmds openssh-server "$SSHD"
  require_cmds openssh-client ssh ssh-keygen
  require_cmds tcsh "$TCSH"
  require_cmds passwd useradd userdel
  local user=${2:-mnv2rt$(rand_hex 4)}
  [[ $user =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "bad user name '$user' (lower case, digits, '-', '_'; at most 32 characters)"
  if alive "$(state_get SSHD_PID)"; then die "an sshd of this fixture already runs in $DIR: run ssh-stop first"; fi
  [ -z "$(state_get SSH_USER)" ] || [ -n "$(state_get SSH_STOPPED)" ] || die "$DIR/state already names a test user: run ssh-stop first"
  local setenv
  setenv=$(sshd_setenv_line)
  cleanup_on_failure ssh

  chmod 0755 "$DIR"
  check_parents
  local t0 home=$DIR/home etc=$DIR/etc client=$DIR/client
  t0=$(now_ms)
  mkdir -p "$etc" "$client" "$DIR/log" "$DIR/run"
  chmod 0755 "$etc" "$DIR/log" "$DIR/run"
  chmod 0700 "$client"
  if [ ! -d /run/sshd ]; then mkdir -p /run/sshd; chmod 0755 /run/sshd; fi  # sshd's privilege separation folder

  # The user. Recorded before useradd, so a stop after a half-done start still finds it; the stop
  # only deletes a user whose home is this DIR/home, so it can never delete anyone else.
  getent passwd "$user" >/dev/null && die "user $user exists already: refusing to reuse it"
  state_set SSH_STOPPED ""
  state_set SSH_USER "$user"
  state_set SSH_HOME "$home"
  rm -rf -- "$home"
  # -p '*': no password but not locked: with UsePAM no, sshd refuses a locked ('!') account.
  with_pw_lock_retry useradd -M -d "$home" -s "$TCSH" -p '*' -U -l -c "mnv2 remote-test user (tests/remote/fixture.sh)" "$user" ||
    die "useradd $user failed"
  local group
  group=$(id -gn "$user")
  install -d -m 0700 -o "$user" -g "$group" "$home" "$home/.ssh"

  # Keys
  rm -f "$etc/ssh_host_ed25519_key"{,.pub} "$client/id_ed25519"{,.pub} "$client/wrong_key"{,.pub}
  ssh-keygen -q -t ed25519 -N '' -C "mnv2-fixture-host" -f "$etc/ssh_host_ed25519_key"
  ssh-keygen -q -t ed25519 -N '' -C "$user@mnv2-fixture" -f "$client/id_ed25519"
  ssh-keygen -q -t ed25519 -N '' -C "unauthorized@mnv2-fixture" -f "$client/wrong_key"
  install -m 0600 -o "$user" -g "$group" "$client/id_ed25519.pub" "$home/.ssh/authorized_keys"
  : >"$client/empty_known_hosts"
  chmod 0644 "$client/empty_known_hosts"

  local extra="" port="" pid="" attempt rc cfg=$etc/sshd_config logf=$DIR/log/sshd.log
  # OpenSSH >= 9.8 penalises addresses whose logins fail: the wrong-key tests would lock 127.0.0.1 out.
  if openssh_at_least 9 8; then extra="PerSourcePenalties no"; fi
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$(pick_port)
    cat >"$cfg" <<EOF
# Written by tests/remote/fixture.sh for a throwaway sshd; do not edit.
ListenAddress 127.0.0.1
Port $port
AddressFamily inet
HostKey $etc/ssh_host_ed25519_key
PidFile $DIR/run/sshd.pid
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthenticationMethods publickey
AuthorizedKeysFile .ssh/authorized_keys
PermitRootLogin no
StrictModes yes
AllowUsers $user
PermitUserEnvironment no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
MaxStartups 64:30:128
MaxSessions 64
LoginGraceTime 30
LogLevel VERBOSE
Subsystem sftp internal-sftp
$setenv
$extra
EOF
    chmod 0644 "$cfg"
    rc=0
    "$SSHD" -t -f "$cfg" >&2 || rc=$?
    ((rc == 0)) || die "sshd -t -f $cfg rejected the configuration (exit $rc)"
    printf -- '--- fixture: starting sshd on 127.0.0.1:%s (attempt %s)\n' "$port" "$attempt" >>"$logf"
    # -D, backgrounded here: sshd's own daemonising exits 0 before it binds, hiding a port clash.
    launch /dev/null "$SSHD" -D -f "$cfg" -E "$logf"
    pid=$LAUNCHED
    state_set SSHD_PID "$pid"
    local i ok=0
    for ((i = 0; i < SSHD_WAIT_S * 20; i++)); do
      if ! alive "$pid"; then break; fi
      if pid_listens "$pid" "$port"; then ok=1; break; fi
      sleep 0.05
    done
    ((ok)) && break
    if alive "$pid"; then
      stop_pids "$cfg" "$pid"
      tail_logs "$logf"
      die "sshd did not listen on 127.0.0.1:$port within ${SSHD_WAIT_S}s"
    fi
    if [[ $(tail -n 5 "$logf") == *"Address already in use"* ]]; then
      log "port $port taken meanwhile: trying another"
      continue
    fi
    tail_logs "$logf"
    die "sshd exited at start"
  done
  ((ok)) || die "sshd could not bind a port after $attempt attempts"
  state_set SSHD_PORT "$port"

  # Client side
  printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$etc/ssh_host_ed25519_key.pub")" >"$client/known_hosts"
  chmod 0644 "$client/known_hosts"
  local h kh key
  {
    echo "# Written by tests/remote/fixture.sh. Use it with ssh -F $client/ssh_config HOST."
    for h in mnv2-test mnv2-test-unknown-hostkey mnv2-test-wrong-key; do
      kh=$client/known_hosts key=$client/id_ed25519
      [ "$h" = mnv2-test-unknown-hostkey ] && kh=$client/empty_known_hosts
      [ "$h" = mnv2-test-wrong-key ] && key=$client/wrong_key
      cat <<EOF

Host $h
  HostName 127.0.0.1
  Port $port
  User $user
  IdentityFile $key
  IdentitiesOnly yes
  IdentityAgent none
  PreferredAuthentications publickey
  UserKnownHostsFile $kh
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  CheckHostIP no
  BatchMode yes
  ConnectTimeout 10
  LogLevel ERROR
EOF
    done
  } >"$client/ssh_config"
  chmod 0644 "$client/ssh_config"

  # End to end, so that a broken fixture fails here and not as a puzzling test failure.
  local err
  if ! err=$(timeout 20 ssh -F "$client/ssh_config" mnv2-test true 2>&1 </dev/null); then
    tail_logs "$logf"
    die "ssh -F $client/ssh_config mnv2-test true failed: $err"
  fi
  # A folder for ControlPath sockets: ssh needs "DIR/%C" (40 hex digits) plus a 17-character
  # temporary suffix to fit a Unix socket path (107 bytes), so a long DIR gets one beneath /run.
  local cm=$DIR/cm
  if ((${#cm} + 1 + 40 + 17 > 107)); then
    cm=/run/mnv2-fixture/ssh-$user
    state_set SSH_CONTROL_DIR "$cm"
  fi
  mkdir -p "$cm"
  chmod 0700 "$cm"
  start_watchdog ssh
  log "ssh-start: $user@127.0.0.1:$port ready in $(($(now_ms) - t0)) ms"

  echo "SSH_CONFIG=$client/ssh_config"
  echo "SSH_HOST=mnv2-test"
  echo "SSH_PORT=$port"
  echo "SSH_USER=$user"
  echo "SSH_HOME=$home"
  echo "SSHD_PID=$pid"
  echo "SSHD_LOG=$logf"
  echo "SSH_CONTROL_DIR=$cm"
}

ssh_stop() {
  [ -n "${1:-}" ] || usage
  require_root
  set_dir "${1:-}" stop
  local user home pid p uid entry i
  user=$(state_get SSH_USER)
  home=$(state_get SSH_HOME)
  stop_watchdog ssh
  # 1. sshd: the listener first (no new logins), then its per-connection children.
  local cfg=$DIR/etc/sshd_config pids=()
  for pid in $(sed -n 's/^SSHD_PID=//p' "$STATE") $(cat "$DIR/run/sshd.pid" 2>/dev/null || true); do
    ours "$pid" "$cfg" && pids+=("$pid")
  done
  if ((${#pids[@]})); then
    local children=()
    for p in "${pids[@]}"; do
      mapfile -t -O "${#children[@]}" children < <(pgrep -P "$p" || true)
    done
    stop_pids "$cfg" "${pids[@]}"
    for p in "${children[@]}"; do
      if alive "$p"; then kill -TERM "$p" 2>/dev/null || true; fi
    done
  fi
  rm -f "$DIR/run/sshd.pid"
  # 2. The user: every process, then the account. Only a user whose home is this DIR/home.
  if [ -n "$user" ] && entry=$(getent passwd "$user"); then
    if [ "$(echo "$entry" | cut -d: -f6)" != "$home" ] || [ "$home" != "$DIR/home" ]; then
      log "user $user's home is not $DIR/home: leaving that user alone"
    else
      uid=$(echo "$entry" | cut -d: -f3)
      pkill -TERM -U "$uid" 2>/dev/null || true
      for ((i = 0; i < GRACE_S * 10; i++)); do
        [ -n "$(user_pids "$uid")" ] || break
        sleep 0.1
      done
      for ((i = 0; i < 50; i++)); do
        [ -n "$(user_pids "$uid")" ] || break
        pkill -KILL -U "$uid" 2>/dev/null || true
        sleep 0.1
      done
      [ -z "$(user_pids "$uid")" ] || log "warning: processes of $user are still alive: $(user_pids "$uid")"
      # What the user left outside DIR (e.g. /tmp/mnv2-agent-*), while the uid is still its own.
      local leftovers
      leftovers=$(find /tmp /var/tmp /dev/shm -xdev -mindepth 1 -maxdepth 1 -user "$uid" -printf "%p " 2>/dev/null || true)
      if [ -n "$leftovers" ]; then
        log "ssh-stop: removing $user's files: $leftovers"
        find /tmp /var/tmp /dev/shm -xdev -mindepth 1 -maxdepth 1 -user "$uid" -exec rm -rf -- {} + 2>/dev/null || true
      fi
      # -f: zombies (a PID 1 may reap late, or never) still make plain userdel refuse with "user
      # ... is currently used by process N". Without -r, -f removes the account only, no files.
      with_pw_lock_retry userdel -f "$user" || die "userdel -f $user failed"
      [ -f "/var/mail/$user" ] && [ "$(stat -c %u "/var/mail/$user")" = "$uid" ] && rm -f "/var/mail/$user"
      log "ssh-stop: removed user $user"
    fi
  fi
  local cm
  cm=$(state_get SSH_CONTROL_DIR)
  case $cm in /run/mnv2-fixture/ssh-mnv2rt* | /run/mnv2-fixture/ssh-"$user") rm -rf -- "$cm" ;; esac
  state_set SSH_STOPPED 1
}

# --------------------------------------------------------------------------------------------- slurm

slurm_runtime_dir() {  # where the Unix sockets go: DIR, unless its path is too long for sun_path
  local node=$1 id=$2
  if (( ${#DIR} + 25 <= 100 && ${#DIR} + 12 + ${#node} + 22 <= 100 )); then
    echo "$DIR"
  else
    echo "/run/mnv2-fixture/$id"
  fi
}

port_clash() {  # port_clash LOG OFFSET: the log says, past OFFSET, that a port was taken
  [[ $(tail -c +$(($2 + 1)) "$1" 2>/dev/null) == *"Address already in use"* ]]
}

munge_ok() { timeout 5 munge -n -S "$1" 2>/dev/null | timeout 5 unmunge -S "$1" >/dev/null 2>&1; }

slurm_start() {
  [ -n "${1:-}" ] || usage
  require_root
  set_dir "${1:-}"
  require_cmds munge munged munge unmunge
  require_cmds slurmctld slurmctld
  require_cmds slurmd slurmd
  require_cmds slurm-client srun sinfo squeue scancel scontrol
  if alive "$(state_get MUNGED_PID)" || alive "$(state_get SLURMCTLD_PID)" || alive "$(state_get SLURMD_PID)"; then
    die "a Slurm fixture already runs in $DIR: run slurm-stop first"
  fi
  cleanup_on_failure slurm
  local t0
  t0=$(now_ms)
  chmod go-w "$DIR"
  chmod go+rx "$DIR"  # the test user reads slurm.conf and reaches the munge socket

  # The node as slurmd sees it; memory kept small (it is not enforced: CR_Core).
  local cfgline node host cpus topo mem id
  cfgline=$(slurmd -C 2>/dev/null | sed -n 1p) || true
  [[ $cfgline =~ ^NodeName=([^[:space:]]+)[[:space:]](.*)$ ]] || die "slurmd -C printed no NodeName line: '$cfgline'"
  node=${BASH_REMATCH[1]}
  host=$(hostname -s)
  [ "$node" = "$host" ] || log "note: slurmd -C says NodeName=$node, hostname -s says $host"
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$cfgline")
  topo=$(grep -o 'Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' <<<"$cfgline" || true)
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$cfgline")
  mem=${mem:-1000}
  ((mem > 1000)) && mem=1000
  id=mnv2rt$(rand_hex 4)

  local rt etc=$DIR/etc sdir=$DIR/slurm logd=$DIR/log rund=$DIR/run mdir spool sock
  rt=$(slurm_runtime_dir "$node" "$id")
  mdir=$rt/munge
  spool=$rt/slurmd
  [ "$rt" = "$DIR" ] || { log "DIR is long: Unix sockets go to $rt"; state_set SLURM_RUNTIME_DIR "$rt"; }
  sock=$mdir/munge.socket.2
  mkdir -p "$etc" "$sdir/ctld" "$logd" "$rund" "$mdir" "$spool"
  chmod 0755 "$etc" "$sdir" "$logd" "$rund" "$mdir" "$spool" "$rt"
  chmod 0700 "$sdir/ctld"

  # munge: its own key, socket and daemon (root, hence --force)
  rm -f "$mdir/munge.key"
  if command -v mungekey >/dev/null 2>&1; then
    mungekey --create --keyfile="$mdir/munge.key" >/dev/null
  else
    dd if=/dev/urandom of="$mdir/munge.key" bs=1024 count=1 status=none
  fi
  chmod 0400 "$mdir/munge.key"
  # (in the foreground, -F, munged logs to stderr only)
  launch "$logd/munged.log" munged -F --force --key-file="$mdir/munge.key" --socket="$sock" \
    --pid-file="$mdir/munged.pid" --seed-file="$mdir/munged.seed"
  local mpid=$LAUNCHED i
  state_set MUNGED_PID "$mpid"
  state_set MUNGE_SOCKET "$sock"
  for ((i = 0; i < 100; i++)); do
    alive "$mpid" || break
    [ -S "$sock" ] && munge_ok "$sock" && break
    sleep 0.05
  done
  if ! munge_ok "$sock"; then
    tail_logs "$logd/munged.log"
    die "munged did not come up on $sock"
  fi

  echo "NodeName=$node Name=gpu Type=h100 File=/dev/null" >"$etc/gres.conf"
  chmod 0644 "$etc/gres.conf"

  local attempt ctld_port d_port cpid dpid ok off_c off_d state conf=$etc/slurm.conf
  for attempt in 1 2 3 4 5; do
    ctld_port=$(pick_port)
    d_port=$(pick_port "$ctld_port")
    rm -rf "${sdir:?}/ctld/"* "${spool:?}/"*
    cat >"$conf" <<EOF
# Written by tests/remote/fixture.sh: a throwaway single-node cluster; do not edit.
ClusterName=$id
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$sdir/ctld
SlurmdSpoolDir=$spool
SlurmctldPidFile=$rund/slurmctld.pid
SlurmdPidFile=$rund/slurmd.pid
SlurmctldLogFile=$logd/slurmctld.log
SlurmdLogFile=$logd/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
GresTypes=gpu
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=2
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node CPUs=$cpus $topo RealMemory=$mem Gres=gpu:h100:1 State=UNKNOWN
PartitionName=gpu Nodes=$node Default=YES State=UP MaxTime=INFINITE
PartitionName=down Nodes=$node State=DOWN MaxTime=INFINITE
EOF
    chmod 0644 "$conf"
    off_c=$(stat -c %s "$logd/slurmctld.log" 2>/dev/null || echo 0)
    off_d=$(stat -c %s "$logd/slurmd.log" 2>/dev/null || echo 0)
    launch "$logd/slurmctld.stderr" slurmctld -D -f "$conf"
    cpid=$LAUNCHED
    state_set SLURMCTLD_PID "$cpid"
    launch "$logd/slurmd.stderr" slurmd -D -f "$conf" -N "$node"
    dpid=$LAUNCHED
    state_set SLURMD_PID "$dpid"
    ok=0
    for ((i = 0; i < NODE_WAIT_S * 10; i++)); do
      if ! alive "$cpid" || ! alive "$dpid"; then break; fi
      # slurmd keeps retrying a port that is taken: do not wait for it
      if port_clash "$logd/slurmd.log" "$off_d"; then break; fi
      # (sinfo waits for a controller that is not up yet: ask only once slurmctld listens)
      if pid_listens "$cpid" "$ctld_port"; then
        state=$(SLURM_CONF=$conf timeout 5 sinfo -h -p gpu -n "$node" -o %t 2>/dev/null || true)
        if [ "$state" = idle ]; then ok=1; break; fi
      fi
      sleep 0.1
    done
    ((ok)) && break
    # A failed attempt: no state worth saving, and slurmd ignores SIGTERM while it cannot register.
    GRACE_S=0 stop_pids "$conf" "$dpid" "$cpid"
    if port_clash "$logd/slurmctld.log" "$off_c" || port_clash "$logd/slurmd.log" "$off_d"; then
      log "port $ctld_port or $d_port taken meanwhile: trying others"
      continue
    fi
    tail_logs "$logd/slurmctld.log" "$logd/slurmctld.stderr" "$logd/slurmd.log" "$logd/slurmd.stderr" "$logd/munged.log"
    die "the Slurm node did not become idle within ${NODE_WAIT_S}s (last state: '${state:-none}')"
  done
  ((ok)) || die "Slurm could not bind its ports after $attempt attempts"

  # End to end: one tiny job (also proves the GRES).
  local out
  if ! out=$(cd / && SLURM_CONF=$conf timeout 30 srun -p gpu --gres=gpu:h100:1 -t 1 -J fixture-check printenv SLURM_STEP_GPUS 2>&1 </dev/null); then
    tail_logs "$logd/slurmctld.log" "$logd/slurmd.log"
    die "srun -p gpu --gres=gpu:h100:1 failed: $out"
  fi
  start_watchdog slurm
  log "slurm-start: cluster $id (slurmctld :$ctld_port, slurmd :$d_port) ready in $(($(now_ms) - t0)) ms"

  echo "SLURM_CONF=$conf"
  echo "SLURM_PARTITION=gpu"
  echo "SLURM_DOWN_PARTITION=down"
  echo "SLURM_GRES=gpu:h100:1"
  echo "MUNGE_SOCKET=$sock"
}

# The slurmstepd processes of this cluster: those holding a Unix socket in its slurmd spool folder.
stepd_pids() {
  local spool=$1 inodes p fd
  inodes=$(awk -v s="$spool/" 'index($NF, s) == 1 { print $7 }' /proc/net/unix 2>/dev/null | sort -u)
  [ -n "$inodes" ] || return 0
  for p in $(pgrep -x slurmstepd || true); do
    for fd in /proc/"$p"/fd/*; do
      case $(readlink "$fd" 2>/dev/null) in
        socket:\[*\])
          local ino
          ino=$(readlink "$fd")
          ino=${ino#socket:[}
          ino=${ino%]}
          if grep -qx "$ino" <<<"$inodes"; then echo "$p"; break; fi
          ;;
      esac
    done
  done
}

user_pids() {  # user_pids UID: that user's live (not zombie) processes
  local p
  for p in $(pgrep -U "$1" || true); do
    if alive "$p"; then echo "$p"; fi
  done
}

descendants() {  # descendants PID: all processes below PID
  local c
  for c in $(pgrep -P "$1" || true); do
    echo "$c"
    descendants "$c"
  done
}

slurm_stop() {
  [ -n "${1:-}" ] || usage
  require_root
  set_dir "${1:-}" stop
  local conf=$DIR/etc/slurm.conf rt spool pid i
  rt=$(state_get SLURM_RUNTIME_DIR)
  spool=${rt:-$DIR}/slurmd
  stop_watchdog slurm
  # This cluster's own leftover jobs first, so that no job process outlives the fixture.
  if [ -f "$conf" ] && alive "$(state_get SLURMCTLD_PID)"; then
    local jobs
    jobs=$(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null | xargs || true)
    if [ -n "$jobs" ]; then
      log "slurm-stop: cancelling this cluster's leftover jobs: $jobs"
      # shellcheck disable=SC2086
      SLURM_CONF=$conf timeout 5 scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [ -z "$(SLURM_CONF=$conf timeout 5 squeue -h -t R,CG,PD -o %i 2>/dev/null || true)" ] && break
        sleep 0.1
      done
    fi
  fi
  local d
  for d in slurmd slurmctld; do
    local up
    up=$(echo "$d" | tr '[:lower:]' '[:upper:]')
    # shellcheck disable=SC2046
    stop_pids "$conf" $(sed -n "s/^${up}_PID=//p" "$STATE" 2>/dev/null) $(cat "$DIR/run/$d.pid" 2>/dev/null || true)
  done
  # Job steps whose slurmstepd outlived slurmd (e.g. slurmd was SIGKILLed): kill them and their tasks.
  for pid in $(stepd_pids "$spool"); do
    local tree
    tree=$(descendants "$pid" | xargs)
    log "slurm-stop: killing a leftover slurmstepd $pid and its tasks ${tree:-}"
    # shellcheck disable=SC2086
    kill -KILL "$pid" $tree 2>/dev/null || true
  done
  local mdir
  mdir=$(dirname -- "$(state_get MUNGE_SOCKET)")
  # shellcheck disable=SC2046
  stop_pids "--key-file=$mdir/munge.key" $(sed -n 's/^MUNGED_PID=//p' "$STATE" 2>/dev/null) $(cat "$mdir/munged.pid" 2>/dev/null || true)
  case $rt in /run/mnv2-fixture/mnv2rt*) rm -rf -- "$rt" ;; esac
  rm -f "$DIR/run/slurmd.pid" "$DIR/run/slurmctld.pid"
  state_set SLURM_STOPPED 1
}

# ---------------------------------------------------------------------------------------------- main

case ${1:-} in
  ssh-start) shift; ssh_start "$@" ;;
  ssh-stop) shift; ssh_stop "$@" ;;
  slurm-start) shift; slurm_start "$@" ;;
  slurm-stop) shift; slurm_stop "$@" ;;
  *) usage ;;
esac
exit 0

# What the tools report, measured on Debian 12 (OpenSSH 9.2p1, tcsh 6.24.07, Slurm 22.05.8) with
# this fixture (tests/remote/fixture_smoke.sh checks most of it), for the C++ side to map:
#
# ssh -F CFG mnv2-test-unknown-hostkey true      exit 255, stderr (LogLevel ERROR):
#     No ED25519 host key is known for [127.0.0.1]:PORT and you have requested strict checking.
#     Host key verification failed.
# ssh with a known_hosts line holding another key for [127.0.0.1]:PORT      exit 255, stderr:
#     @@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ banner, fingerprint, "Offending
#     ED25519 key in FILE:1", then
#     Host key for [127.0.0.1]:PORT has changed and you have requested strict checking.
#     Host key verification failed.
# ssh -F CFG mnv2-test-wrong-key true             exit 255, stderr:
#     USER@127.0.0.1: Permission denied (publickey).
# ssh -F CFG -o Port=1 mnv2-test true (nothing listening)          exit 255, stderr:
#     ssh: connect to host 127.0.0.1 port 1: Connection refused
# ssh -F CFG no-such-alias true                   exit 255, stderr:
#     ssh: Could not resolve hostname no-such-alias: Name or service not known
# ssh -F CFG mnv2-test nosuchcmd (tcsh)           exit 1, stderr:
#     nosuchcmd: Command not found.
# ssh -F CFG mnv2-test 'exit 3'                   exit 3 (the remote status passes through)
# sshd stopped during a session                   exit 255, stderr:
#     Connection to 127.0.0.1 closed by remote host.
# ControlPath too long                            exit 255, stderr, either
#     ControlPath too long ('PATH' >= 108 bytes)
#     unix_listener: path "PATH.XXXXXXXXXXXXXXXX" too long for Unix domain socket
# tcsh: inside double quotes a backslash does not protect '$' ("\$X" still expands, and an unset
#     X gives "X: Undefined variable.", exit 1); single quotes do.
# Sessions get PATH=/usr/local/bin:/usr/bin:/bin:/usr/games unless FIXTURE_SSHD_SETENV sets PATH,
#     HOME=DIR/home, SHELL=/usr/bin/tcsh, cwd DIR/home.
#
# srun -p down -t 1 hostname (partition State=DOWN): srun blocks; stderr at once:
#     srun: Partition in DOWN state
#     srun: job N queued and waiting for resources
#   squeue -h -o '%i %T %r'  ->  "N PENDING PartitionDown"   (squeue's default column: (PartitionDown))
#   after scancel N, srun exits 1 with:
#     srun: Job has been cancelled
#     srun: error: Unable to allocate resources: Job/step already completing or completed
# srun -p gpu sleep 100, then scancel N: the job leaves squeue within ~0.1-0.3 s; srun exits 143:
#     srun: Job step aborted: Waiting up to 4 seconds for job step to finish.   (2 x KillWait)
#     slurmstepd-HOST: error: *** STEP N.0 ON HOST CANCELLED AT 2026-...T... ***
#     srun: error: HOST: task 0: Terminated
# srun --gres=gpu:1 / gpu:h100:1: the task gets CUDA_VISIBLE_DEVICES=0, SLURM_STEP_GPUS=0,
#     GPU_DEVICE_ORDINAL=0 (gres.conf File=/dev/null is accepted; no GPU is needed).
# srun with no slurm.conf at all (SLURM_CONF unset, no /etc/slurm/slurm.conf): exit 1 at once:
#     srun: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
#     srun: error: fetch_config: DNS SRV lookup failed
#     srun: error: _establish_config_source: failed to fetch config
#     srun: fatal: Could not establish a configuration source
# srun with SLURM_CONF set but not readable (e.g. empty): it retries for 60 s, then exit 1:
#     srun: error: s_p_parse_file: cannot stat file : No such file or directory, retrying in 1sec up to 60sec
#     srun: error: ClusterName needs to be specified
#     srun: fatal: Unable to process configuration file
