#!/usr/bin/env bash
# `make e2e-prepare`: installs the host packages the e2e needs and builds,
# or finds cached, everything the machines run: the Debian root filesystem
# (rootfs.sh), the components (components.sh) and, from both, the container
# images (images.sh). Safe to run
# again: whatever is cached and current is skipped.
source "$(dirname "$0")/lib.sh"

start=$(date +%s)
# debootstrap + systemd-nspawn build and boot the machines; iproute2 makes
# the bridge; util-linux has nsenter and unshare (the harness's own network
# namespace); ignition is the real Ignition binary scenario 5 runs, and
# policycoreutils has the setfiles its files stage relabels with.
apt_install debootstrap systemd-container iproute2 util-linux ca-certificates ignition policycoreutils
mkdir -p "$CACHE"

# The root filesystem is mostly downloads, the components mostly compiling:
# build both at once.
"$(dirname "$0")/rootfs.sh" &
rootfs_pid=$!
t=$(date +%s)
components_rc=0
"$(dirname "$0")/components.sh" || components_rc=$?
components_s=$(($(date +%s) - t))
rootfs_rc=0
wait "$rootfs_pid" || rootfs_rc=$?
[ "$components_rc" -eq 0 ] || { log "prepare: components failed"; exit 1; }
[ "$rootfs_rc" -eq 0 ] || { log "prepare: root filesystem failed"; exit 1; }
# The adcli overlay (the domain-joining Cluster API machine) is what apt
# adds to the root filesystem.
"$(dirname "$0")/adcli.sh" || { log "prepare: adcli overlay failed"; exit 1; }
# The kube-proxy image takes its iptables from the root filesystem.
t=$(date +%s)
"$(dirname "$0")/images.sh" || { log "prepare: images failed"; exit 1; }
images_s=$(($(date +%s) - t))
log "prepare: done in $(($(date +%s) - start))s (components ${components_s}s, root filesystem in parallel, images ${images_s}s); cache $CACHE ($(du -sh "$CACHE" | cut -f1))"
