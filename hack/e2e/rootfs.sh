#!/usr/bin/env bash
# Builds the cached Debian root filesystem every e2e machine boots from:
# debootstrap minbase with systemd, containerd, runc and cloud-init. The few
# files that make a systemd-nspawn machine on a cgroup v1 host able to run the
# kubelet live in hack/e2e/rootfs/ and are laid over each machine's copy by
# the harness (test/e2e), so editing them never rebuilds this.
# Idempotent: skipped when $CACHE/rootfs/base/.machineadm-e2e-stamp matches.
source "$(dirname "$0")/lib.sh"

PACKAGES=systemd,systemd-sysv,dbus,containerd,runc,iproute2,iptables,conntrack,ca-certificates,kmod,procps
# curl: the render stub (scenario 2) downloads the agent with it.
# debootstrap's resolver cannot pick providers of virtual packages that
# cloud-init's Python dependencies need; apt inside the chroot installs it.
CHROOT_PACKAGES="cloud-init curl"
# Bump the last word when the steps below change.
STAMP="$DEBIAN_SUITE $PACKAGES $CHROOT_PACKAGES v1"
BASE=$CACHE/rootfs/base

if stamp_ok "$BASE/.machineadm-e2e-stamp" "$STAMP"; then
  log "rootfs: cached ($BASE)"
  exit 0
fi
apt_install debootstrap systemd-container

start=$(date +%s)
tmp=$CACHE/rootfs/base.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
mirror=$(debian_mirror)
log "rootfs: debootstrap $DEBIAN_SUITE from $mirror"
debootstrap --variant=minbase --include="$PACKAGES" "$DEBIAN_SUITE" "$tmp" "$mirror" >"$CACHE/rootfs/debootstrap.log" 2>&1 ||
  { tail -n 30 "$CACHE/rootfs/debootstrap.log" >&2; exit 1; }

log "rootfs: apt-get install $CHROOT_PACKAGES"
mount -t proc proc "$tmp/proc"
trap 'umount "$tmp/proc" 2>/dev/null || true' EXIT
{ chroot "$tmp" apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive chroot "$tmp" apt-get install -y -qq --no-install-recommends $CHROOT_PACKAGES; } \
  >>"$CACHE/rootfs/debootstrap.log" 2>&1 || { tail -n 30 "$CACHE/rootfs/debootstrap.log" >&2; exit 1; }
umount "$tmp/proc"

chroot "$tmp" systemctl enable systemd-networkd.service >/dev/null 2>&1
# Units that would reach outside the harness's bridge or only slow boot.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service \
  cloud-init.service cloud-init-local.service cloud-config.service cloud-final.service; do
  chroot "$tmp" systemctl mask "$u" >/dev/null 2>&1 || true
done
rm -f "$tmp/etc/machine-id" && : >"$tmp/etc/machine-id"
chroot "$tmp" apt-get clean
rm -rf "$tmp/var/lib/apt/lists/"*
echo "$STAMP" >"$tmp/.machineadm-e2e-stamp"
rm -rf "$BASE"
mv "$tmp" "$BASE"
log "rootfs: built in $(($(date +%s) - start))s ($(du -sh "$BASE" | cut -f1))"
