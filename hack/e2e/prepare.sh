#!/usr/bin/env bash
# `make e2e-prepare`: installs the host packages the e2e needs and builds,
# or finds cached, everything the machines run: the Debian root filesystem
# (rootfs.sh) and the components and images (components.sh). Safe to run
# again: whatever is cached and current is skipped.
source "$(dirname "$0")/lib.sh"

start=$(date +%s)
# debootstrap + systemd-nspawn build and boot the machines; iproute2 makes
# the bridge; util-linux has nsenter.
apt_install debootstrap systemd-container iproute2 util-linux ca-certificates
mkdir -p "$CACHE"

t=$(date +%s)
"$(dirname "$0")/rootfs.sh"
rootfs_s=$(($(date +%s) - t))
t=$(date +%s)
"$(dirname "$0")/components.sh"
components_s=$(($(date +%s) - t))
log "prepare: done in $(($(date +%s) - start))s (root filesystem ${rootfs_s}s, components and images ${components_s}s); cache $CACHE ($(du -sh "$CACHE" | cut -f1))"
