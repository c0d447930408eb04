#!/usr/bin/env bash
# Reproducibility test (issue 15): `make release` of the same commit in two
# clones at different paths must give byte-identical artifacts (all but the
# signatures, which ECDSA randomises).
#
#   repro.sh WORK VERSION KEY
#
# Clones HEAD into WORK/a and WORK/b/deeper/clone and releases VERSION in
# both. REPRO_FRESH_CACHE=1 builds the second clone with an empty Go build
# cache (a second builder; minutes more), otherwise both share the cache,
# whose keys include every build input (flags, environment, sources) but no
# directory — a directory leaking into the build would miss it and show up
# as differing bytes. WORK/a/dist stays for the other release tests; the
# second clone is removed after a success.
set -euo pipefail
work=$1 version=$2 key=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
rev=$(git -C "$repo" rev-parse HEAD)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
	echo "repro: note: uncommitted changes are not part of the test; it releases $rev" >&2
fi
log() { printf '%s [release] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

release() { # DIR [ENV...]
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	git clone -q --no-hardlinks "$repo" "$dir"
	git -C "$dir" checkout -q --detach "$rev"
	local t=$(date +%s)
	env "$@" make -C "$dir" --no-print-directory release VERSION="$version" SIGNING_KEY="$key" >"$dir.log" 2>&1 ||
		{ tail -n 40 "$dir.log" >&2; echo "repro: make release failed in $dir" >&2; exit 1; }
	log "make release in $dir: $(($(date +%s) - t)) s"
}

release "$work/a"
if [ "${REPRO_FRESH_CACHE:-0}" = 1 ]; then
	release "$work/b/deeper/clone" GOCACHE="$work/gocache-b"
else
	release "$work/b/deeper/clone"
fi

a=$work/a/dist b=$work/b/deeper/clone/dist
list() { (cd "$1" && find . -type f ! -name '*.sig' | sort); }
if ! diff <(list "$a") <(list "$b") >&2; then
	echo "repro: FAIL: the two releases hold different files" >&2
	exit 1
fi
n=0 bad=0
while read -r f; do
	n=$((n + 1))
	if ! cmp -s "$a/$f" "$b/$f"; then
		echo "repro: FAIL: $f differs between $a and $b" >&2
		bad=$((bad + 1))
	fi
done < <(list "$a")
[ "$n" -ge 12 ] || { echo "repro: FAIL: only $n artifacts" >&2; exit 1; }
[ "$bad" -eq 0 ] || exit 1
# The signatures differ, yet both verify (checked by the Go tests for a);
# the public key is the same. The second clone is no longer needed.
rm -rf "$work/b" "$work/gocache-b"
log "repro: ok: $n files byte-identical in two clones of $rev"
