#!/usr/bin/env bash
# `make release-check` (CI's release check, issue 15): builds a release with
# a throwaway ECDSA P-256 key in two clones (repro.sh: byte-identical
# artifacts), then runs the release's Go tests against the first clone's
# dist (SHA256SUMS, SBOMs, signatures refused for a second key by the
# sigstore library, openssl and the render stub run for real) and the
# package tests (pkgtest.sh: deb install/purge in a chroot, rpm checks).
#
# RELEASE_CHECK_DIR (default: a new directory under /var/tmp) keeps the
# work; the dist it leaves is $RELEASE_CHECK_DIR/a/dist (the e2e's render
# scenario can take its agent from there: MACHINEADM_E2E_RELEASE_DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { printf '%s [release] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
work=${RELEASE_CHECK_DIR:-$(mktemp -d /var/tmp/machineadm-release-check.XXXXXX)}
mkdir -p "$work"
version=${RELEASE_CHECK_VERSION:-v0.0.0-check}
start=$(date +%s)

key=$work/throwaway-signing-key.pem
(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$key" 2>/dev/null)

t=$(date +%s)
"$here/repro.sh" "$work" "$version" "$key"
repro_s=$(($(date +%s) - t))
dist=$work/a/dist

t=$(date +%s)
(cd "$here" && MACHINEADM_RELEASE_DIST=$dist CGO_ENABLED=0 go test -trimpath -count=1 ./...)
test_s=$(($(date +%s) - t))

t=$(date +%s)
"$here/pkgtest.sh" "$dist"
pkg_s=$(($(date +%s) - t))

rm -f "$key"
log "release check: ok in $(($(date +%s) - start)) s (two releases ${repro_s} s, Go tests ${test_s} s, package tests ${pkg_s} s); dist $dist"
(cd "$dist" && ls -l --time-style=+ | awk 'NR>1 && $NF !~ /\.sig$/ {printf "  %10d  %s\n", $5, $NF}') >&2
