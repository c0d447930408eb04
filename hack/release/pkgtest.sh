#!/usr/bin/env bash
# Package tests (issue 15) of a release in DIST:
#   - deb: installs and purges cleanly with dpkg in a fresh copy of the e2e's
#     Debian root filesystem (hack/e2e/rootfs.sh, $MACHINEADM_E2E_CACHE),
#     in a chroot; after install `machineadm version` runs there and the
#     unit passes `systemd-analyze verify`; after purge the tree is what it
#     was, apart from dpkg's own records.
#   - rpm: `rpm -qip` metadata, the file list with modes and owners, and
#     the package digests (`rpm -K`), with Debian's rpm tools.
#
#   pkgtest.sh DIST
set -euo pipefail
dist=$(cd "$1" && pwd)
cache=${MACHINEADM_E2E_CACHE:-/var/cache/machineadm-e2e}
base=$cache/rootfs/base
log() { printf '%s [release] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { echo "pkgtest: FAIL: $*" >&2; exit 1; }

version=$(cd "$dist" && ls machineadm-v*-windows-amd64.zip | sed 's/^machineadm-\(v.*\)-windows-amd64.zip$/\1/')
pv=${version#v}
arch=$(dpkg --print-architecture)
deb=$dist/machineadm_${pv//-/\~}_${arch}.deb
[ -f "$deb" ] || fail "$deb missing"

# The files both packages install (besides directories).
repo=$(cd "$(dirname "$0")/../.." && pwd)
docs=$(cd "$repo" && ls docs/*.md | sed 's|^docs/||')
expect_common() {
	echo /usr/bin/machineadm
	echo /usr/lib/systemd/system/machineadm.service
	echo /usr/share/doc/machineadm/README.md
	for d in $docs; do echo "/usr/share/doc/machineadm/$d"; done
}

# ---- deb in a chroot of the e2e root filesystem
[ -f "$base/.machineadm-e2e-stamp" ] || fail "no e2e root filesystem at $base (make e2e-prepare builds it)"
work=$(mktemp -d /var/tmp/machineadm-pkgtest.XXXXXX)
root=$work/root
cleanup() {
	umount "$root/proc" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
t=$(date +%s)
cp -a "$base" "$root"
log "pkgtest: root filesystem copied in $(($(date +%s) - t)) s"
mount -t proc proc "$root/proc"
# Everything but dpkg's database and logs and /run (a tmpfs at boot; systemd-analyze
# writes there), with type, mode, owner, size and
# content digest: what an install followed by a purge must leave unchanged.
snapshot() {
	(cd "$root" && find . -xdev \( -path ./proc -o -path ./run -o -path ./var/lib/dpkg -o -path ./var/log -o -path ./tmp \
		-o -path ./var/cache/debconf \) -prune -o -printf '%y %m %u:%g %s %p\n' | sort) >"$1"
	(cd "$root" && find . -xdev \( -path ./proc -o -path ./run -o -path ./var/lib/dpkg -o -path ./var/log -o -path ./tmp \
		-o -path ./var/cache/debconf \) -prune -o -type f -print0 | sort -z | xargs -0 sha256sum) >>"$1"
}
snapshot "$work/before"
cp "$deb" "$root/tmp/machineadm.deb"
chroot "$root" dpkg -i /tmp/machineadm.deb >"$work/dpkg-install.log" 2>&1 || { cat "$work/dpkg-install.log" >&2; fail "dpkg -i"; }
chroot "$root" dpkg -s machineadm | grep -qx "Status: install ok installed" || fail "dpkg -s: not installed"
chroot "$root" dpkg-query -W -f='${Version} ${Architecture} ${Maintainer}\n' machineadm | grep -q "^${pv//-/\~} $arch " ||
	fail "dpkg-query: $(chroot "$root" dpkg-query -W machineadm)"
diff <({ expect_common; echo /usr/share/doc/machineadm/copyright; } | sort) \
	<(chroot "$root" dpkg -L machineadm | while read -r p; do [ -d "$root$p" ] || echo "$p"; done | sort) >&2 ||
	fail "dpkg -L: the deb's files differ from the expected list"
out=$(chroot "$root" /usr/bin/machineadm version) || fail "machineadm version: exit $?"
grep -q "$version" <<<"$out" || fail "machineadm version does not name $version: $out"
[ "$(stat -c %a "$root/usr/bin/machineadm")" = 755 ] || fail "/usr/bin/machineadm mode"
cmp -s "$root/usr/bin/machineadm" "$dist/machineadm-linux-$arch" || fail "/usr/bin/machineadm differs from machineadm-linux-$arch"
grep -qx 'ExecStart=/usr/bin/machineadm bootstrap -f /etc/machineadm/spec.yaml' "$root/usr/lib/systemd/system/machineadm.service" ||
	fail "the unit does not start /usr/bin/machineadm"
verify=$(chroot "$root" systemd-analyze verify /usr/lib/systemd/system/machineadm.service 2>&1) ||
	{ echo "$verify" >&2; fail "systemd-analyze verify"; }
[ -z "$verify" ] || { echo "$verify" >&2; fail "systemd-analyze verify printed warnings"; }
chroot "$root" dpkg --purge machineadm >"$work/dpkg-purge.log" 2>&1 || { cat "$work/dpkg-purge.log" >&2; fail "dpkg --purge"; }
if chroot "$root" dpkg -s machineadm >/dev/null 2>&1; then fail "still known to dpkg after purge"; fi
rm -f "$root/tmp/machineadm.deb"
snapshot "$work/after"
diff "$work/before" "$work/after" >&2 || fail "the purge left the root filesystem changed"
log "pkgtest: deb: installed, ran machineadm version, verified the unit, purged cleanly ($(($(date +%s) - t)) s)"

# ---- rpm, with Debian's rpm tools
command -v rpm >/dev/null || fail "rpm not installed (hack/install-deps.sh installs it)"
rpmdb=$work/rpmdb
mkdir -p "$rpmdb"
# nfpm's rpm version: X.Y.Z, then "~PRE" for a pre-release (with "-" as "_").
rv=${pv%%-*}
if [[ $pv == *-* ]]; then pre=${pv#*-}; rv="$rv~${pre//-/_}"; fi
for rarch in x86_64 aarch64; do
	rpmf=$(ls "$dist"/machineadm-*."$rarch".rpm)
	info=$(rpm --dbpath "$rpmdb" -qip "$rpmf" 2>&1) || { echo "$info" >&2; fail "rpm -qip $rpmf"; }
	for want in "Name *: machineadm" "Version *: $rv" "Architecture: $rarch" "License *: Apache-2.0" "Build Host *: reproducible"; do
		grep -Eq "^$want\$" <<<"$info" || { echo "$info" >&2; fail "rpm -qip $rpmf: no line '$want'"; }
	done
	diff <({ expect_common; echo /usr/share/licenses/machineadm/LICENSE; } | sort) \
		<(rpm --dbpath "$rpmdb" -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpmf" | grep -v '^d' | cut -d' ' -f2 | sort) >&2 ||
		fail "rpm -qlp $rpmf: the files differ from the expected list"
	modes=$(rpm --dbpath "$rpmdb" -qp --qf '[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME}\n]' "$rpmf")
	grep -qx '/usr/bin/machineadm -rwxr-xr-x root:root' <<<"$modes" || { echo "$modes" >&2; fail "rpm: /usr/bin/machineadm mode or owner"; }
	rpm --dbpath "$rpmdb" -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpmf" | grep -q '^d /usr/share/doc/machineadm/README.md$' ||
		fail "rpm: README.md is not marked %doc"
	rpm --dbpath "$rpmdb" -K --nosignature "$rpmf" >"$work/rpmk" 2>&1 || { cat "$work/rpmk" >&2; fail "rpm -K $rpmf"; }
done
log "pkgtest: rpm: metadata, file lists, modes and digests ok"
