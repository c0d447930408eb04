#!/usr/bin/env bash
# Removes whatever an e2e run left behind when its test binary could not
# clean up (killed, timed out): systemd-nspawn machines started from the
# e2e work directory, their overlay mounts and cgroups, and the bridge.
# (The Cluster API e2e's management cluster is a machine like the others:
# cp1, with its controllers as pods.)
# The test cleans up after itself; this is the safety net. Idempotent.
source "$(dirname "$0")/lib.sh"

WORK=${MACHINEADM_E2E_WORK:-/var/tmp/machineadm-e2e}
# Every process of a machine (systemd-nspawn's child and all below it) is in
# the machine's own cgroups, named machineadm-e2e-<run>-<machine>: kill them
# all. A machine whose systemd-nspawn died keeps running otherwise.
machine_pids() {
  find /sys/fs/cgroup/*/ -type d -name 'machineadm-e2e-*' -prune -exec find {} -name cgroup.procs \; 2>/dev/null |
    xargs -r cat 2>/dev/null | sort -u
}
for try in 1 2 3 4 5; do
  pids=$(machine_pids)
  [ -n "$pids" ] || break
  log "cleanup: killing $(echo "$pids" | wc -w) leftover machine processes"
  kill -KILL $pids 2>/dev/null || true
  sleep 1
done
for pidfile in "$WORK"/*/*/nspawn.pid; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if grep -qs "$(dirname "$pidfile")" "/proc/$pid/cmdline"; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
done
awk -v w="$WORK/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null || true
done
# Killed processes leave their cgroups asynchronously (reaped after their
# PID namespace is gone): retry, bounded, until no machine cgroup is left.
for try in $(seq 1 20); do
  find /sys/fs/cgroup/*/ -depth -type d -path '*/machineadm-e2e-*' -exec rmdir {} + 2>/dev/null || true
  left=$(find /sys/fs/cgroup/*/ -type d -name 'machineadm-e2e-*' -prune 2>/dev/null)
  [ -n "$left" ] || break
  [ "$try" -lt 20 ] || { log "cleanup: machine cgroups still busy: $(echo $left) (processes: $(echo $(machine_pids)))"; exit 1; }
  kill -KILL $(machine_pids) 2>/dev/null || true
  sleep 0.5
done
[ -d "$WORK" ] && rm -rf "${WORK:?}"/*
# A veth whose machine is gone normally vanishes with it; delete any port
# still on the bridge, then the bridge.
for port in $(ip -o link show master mae2e0 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
  ip link del "$port" 2>/dev/null || true
done
ip link del mae2e0 2>/dev/null || true
