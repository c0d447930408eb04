#!/usr/bin/env bash
# Removes whatever an e2e run left behind when its test binary could not
# clean up (killed, timed out): systemd-nspawn machines started from the
# e2e work directory, their overlay mounts and cgroups, and the bridge.
# The test cleans up after itself; this is the safety net. Idempotent.
source "$(dirname "$0")/lib.sh"

WORK=${MACHINEADM_E2E_WORK:-/var/tmp/machineadm-e2e}
[ -d "$WORK" ] || { ip link del mae2e0 2>/dev/null || true; exit 0; }
for pidfile in "$WORK"/*/*/nspawn.pid; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if grep -qs "$(dirname "$pidfile")" "/proc/$pid/cmdline"; then
    log "cleanup: killing machine $(basename "$(dirname "$pidfile")") (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
  fi
done
sleep 1
awk -v w="$WORK/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null || true
done
for d in "$WORK"/*/*/; do
  name=$(basename "$d")
  find /sys/fs/cgroup -depth -type d -path "*machineadm-e2e-$name*" -exec rmdir {} + 2>/dev/null || true
done
rm -rf "${WORK:?}"/*
ip link del mae2e0 2>/dev/null || true
