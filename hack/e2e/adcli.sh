#!/usr/bin/env bash
# Builds the cached adcli overlay: adcli and the libraries the base root
# filesystem (rootfs.sh) lacks for it, unpacked (dpkg -x) into
# $CACHE/adcli/root. The harness copies it into the one Cluster API machine
# that joins the e2e's samba AD domain (test/e2e/adjoin.go), so the base
# root filesystem and its stamp stay as they are.
# The package set is what apt would install on top of the base's own dpkg
# status, so it follows the base. Idempotent: skipped when
# $CACHE/adcli/.machineadm-e2e-stamp matches.
source "$(dirname "$0")/lib.sh"

# libsasl2-modules-gssapi-mit: adcli binds to LDAP with SASL GSSAPI.
PACKAGES="adcli libsasl2-modules-gssapi-mit"
BASE=$CACHE/rootfs/base
# Bump the last word when the steps below change.
STAMP="$DEBIAN_SUITE $PACKAGES $(cat "$BASE/.machineadm-e2e-stamp") v1"
OUT=$CACHE/adcli

if stamp_ok "$OUT/.machineadm-e2e-stamp" "$STAMP"; then
  log "adcli overlay: cached ($OUT)"
  exit 0
fi
[ -f "$BASE/var/lib/dpkg/status" ] || { log "adcli overlay: no base root filesystem ($BASE); run rootfs.sh first"; exit 1; }

start=$(date +%s)
tmp=$OUT.tmp
rm -rf "$tmp"
mkdir -p "$tmp/debs/partial" "$tmp/root"
# The host's package lists name the packages (the host and the machines
# are both $DEBIAN_SUITE); the base's status decides what is missing.
apt_get() {
  apt-get -qq -o Dir::State::status="$BASE/var/lib/dpkg/status" -o Dir::Cache::archives="$tmp/debs" \
    -o Debug::NoLocking=1 --no-install-recommends "$@"
}
apt_get -s install $PACKAGES >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get update -qq
apt_get -y --download-only install $PACKAGES >"$CACHE/adcli.log" 2>&1 ||
  { tail -n 30 "$CACHE/adcli.log" >&2; exit 1; }
for deb in "$tmp"/debs/*.deb; do
  dpkg -x "$deb" "$tmp/root"
  basename "$deb" >>"$tmp/packages"
done
rm -rf "$tmp/debs" "$tmp/root/usr/share/doc" "$tmp/root/usr/share/man" "$tmp/root/usr/share/locale"
"$tmp/root/usr/sbin/adcli" --version >/dev/null 2>&1 || true
echo "$STAMP" >"$tmp/.machineadm-e2e-stamp"
rm -rf "$OUT"
mv "$tmp" "$OUT"
log "adcli overlay: built in $(($(date +%s) - start))s ($(wc -l <"$OUT/packages") packages, $(du -sh "$OUT/root" | cut -f1))"
