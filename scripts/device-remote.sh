#!/usr/bin/env bash
# Runs on the two-GPU machine (device tool, issue 31): the same cuda-backend profile on GPU 0 and GPU 1 through an
# SSH target to this machine's loopback (Debian's sshd and ssh, carried with their libraries; root's login), run
# concurrently, then compared with `mnv2 runs`; and a report saved on another card in an earlier call compared with
# a fresh run of its configuration. Carry .device/remote.tar.xz (scripts/device-remote-pack.sh makes it).
#   run(command="bash scripts/device-remote.sh", carry=[".device/remote.tar.xz"], kind="nvidia-h200-x2")
set -uo pipefail
out=${OUT:-/tmp/mnv2-remote-out}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
rm -rf /tmp/rb && mkdir -p /tmp/rb && tar -xJf .device/remote.tar.xz -C /tmp/rb || exit 1
B=/tmp/rb/bundle
export LD_LIBRARY_PATH=$B/sshlib:$B/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,power.limit --format=csv
echo "user: $(id)"; echo "system ssh: $(command -v ssh || echo none), sshd: $(command -v sshd || echo none)"
# sshd: privilege separation user and folder, a scratch folder with root-owned, not world-writable parents.
mkdir -p /run/sshd && chmod 0755 /run/sshd
id sshd >/dev/null 2>&1 || useradd -r -d /run/sshd -s /usr/sbin/nologin sshd || echo "cannot create the sshd user"
S=/var/lib/mnv2-remote-test
rm -rf "$S" && mkdir -p "$S" && chmod 0755 "$S"
"$B/sshbin/ssh-keygen" -q -t ed25519 -N '' -f "$S/host_key" && "$B/sshbin/ssh-keygen" -q -t ed25519 -N '' -f "$S/id"
cp "$S/id.pub" "$S/authorized_keys" && chmod 0600 "$S/authorized_keys"
port=22022
cat >"$S/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $S/host_key
PidFile $S/sshd.pid
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile $S/authorized_keys
StrictModes yes
SetEnv PATH=$B/bin:/usr/local/bin:/usr/bin:/bin LD_LIBRARY_PATH=$B/lib
CFG
"$B/sshbin/sshd" -t -f "$S/sshd_config" || { echo "sshd -t failed"; }
"$B/sshbin/sshd" -f "$S/sshd_config" -E "$S/sshd.log" || { echo "sshd did not start"; cat "$S/sshd.log"; }
sleep 1
cat >"$S/ssh_config" <<CFG
Host gpuhost
  HostName 127.0.0.1
  Port $port
  User root
  IdentityFile $S/id
  IdentitiesOnly yes
  UserKnownHostsFile $S/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
CFG
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$S/host_key.pub")" >"$S/known_hosts"
mkdir -p "$S/run" && chmod 0700 "$S/run"
export XDG_CONFIG_HOME=$S/cfg XDG_RUNTIME_DIR=$S/run MNV2_SSH=$B/sshbin/ssh
M=$B/bin/mnv2
model=$B/shared/weights/mobilenet_v2_1.0_224.onnx
step() { echo; echo "== $*"; }
step "targets"
$M targets add h200 gpuhost --ssh-config "$S/ssh_config" && $M targets list
step "probe (the bundle's mnv2 on PATH there)"
$M targets probe h200
step "remote install"
$M remote install h200
step "probe (installed)"
$M targets probe h200 --json >"$out/probe.json"; cat "$out/probe.json" | head -60
common=(--backend cuda --model "$model" --precision fp16 --cuda-fusion block --timing cupti --warmup 20 --iters 200)
gpus=$(nvidia-smi -L | grep -c '^GPU')
if [[ $gpus -ge 2 ]]; then
step "GPU 0 and GPU 1 at once through the target, one command (--target h200@0,h200@1), batch 1"
$M profile --target h200@0,h200@1 "${common[@]}" --json "$out/h200_both_b1.json" 2>&1 | grep -v '^\[h200@' | tail -20
step "GPU 0 and GPU 1 at once through the target (batch 1 and 256), two commands"
for b in 1 256; do
  $M profile --target h200 "${common[@]}" --batch $b --device 0 --json "$out/h200_dev0_b$b.json" >"$out/dev0_b$b.txt" 2>&1 &
  p0=$!
  $M profile --target h200 "${common[@]}" --batch $b --device 1 --json "$out/h200_dev1_b$b.json" >"$out/dev1_b$b.txt" 2>&1 &
  p1=$!
  wait $p0; echo "device 0 batch $b: exit $?"; wait $p1; echo "device 1 batch $b: exit $?"
  tail -12 "$out/dev0_b$b.txt"; tail -4 "$out/dev1_b$b.txt"
  $M runs "$out/h200_dev0_b$b.json" "$out/h200_dev1_b$b.json" | tee "$out/runs_dev0_vs_dev1_b$b.txt" | head -60
done
else
step "one GPU here: the same profile through the target and on this machine (batch 1 and 256), one after the other"
for b in 1 256; do
  $M profile --target h200 "${common[@]}" --batch $b --device 0 --json "$out/target_dev0_b$b.json" >"$out/target_b$b.txt" 2>&1
  echo "through the target, batch $b: exit $?"; tail -14 "$out/target_b$b.txt"
  $M profile "${common[@]}" --batch $b --device 0 --json "$out/local_dev0_b$b.json" >"$out/local_b$b.txt" 2>&1
  echo "here, batch $b: exit $?"; tail -6 "$out/local_b$b.txt"
  $M runs "$out/local_dev0_b$b.json" "$out/target_dev0_b$b.json" | tee "$out/runs_local_vs_target_b$b.txt" | head -40
done
step "a device the target does not have"
$M profile --target h200 "${common[@]}" --device 1 --json "$out/nodev.json"; echo "exit $?"
fi
step "a report of an earlier call (another card) against a fresh run of its configuration"
$M profile --target h200 --backend cuda --model "$model" --precision fp16 --cuda-fusion block --timing cupti --exec graph \
  --warmup 5 --iters 20 --json "$out/h200_fresh_r2_b1.json" >"$out/fresh_r2.txt" 2>&1; echo "fresh: exit $?"
$M runs "$B/old/r2_profile_fp16_block_b1.json" "$out/h200_fresh_r2_b1.json" | tee "$out/runs_earlier_vs_fresh.txt" | head -60
step "cancel through the target: SIGINT after 5 s"
$M profile --target h200 --backend cuda --model "$model" --warmup 20 --iters 1000000 --json "$out/cancelled.json" \
  >"$out/cancel.txt" 2>&1 &
pc=$!; sleep 8; echo "on the target before: $(pgrep -fc 'mnv2.bin profile' || true)"; kill -INT $pc; wait $pc; echo "cancel: exit $? (report written: $([ -e "$out/cancelled.json" ] && echo yes || echo no))"
tail -3 "$out/cancel.txt"; sleep 2; echo "mnv2 processes left: $(pgrep -fc 'mnv2.bin profile' || true)"
kill "$(cat "$S/sshd.pid")" 2>/dev/null
echo done
# The device tool brings back 8 files: everything in one archive, the log beside it.
tar -C "$out" -czf /tmp/results.tar.gz --exclude=log.txt . && mv /tmp/results.tar.gz "$out/"
find "$out" -mindepth 1 ! -name results.tar.gz ! -name log.txt -delete
