#!/usr/bin/env bash
# Runs every Go fuzz target of the repository (each func FuzzXxx(f *testing.F)
# in a _test.go file under pkg/) one after the other, each for SECONDS, and
# prints the executions per target and in total.
#
#   hack/fuzz.sh [SECONDS] [TARGET-REGEX]
#
# make fuzz-short runs it with 20 s per target (CI). A crash fails the run;
# Go then keeps the failing input as a regression seed in
# pkg/<package>/testdata/fuzz/<target>/, which `go test` replays from then
# on. Environment: FUZZ_PARALLEL (workers per target, default 1: the build
# machines have 2 shared cores), FUZZ_LDFLAGS (-ldflags of the test binary),
# FUZZ_MINIMIZE (-fuzzminimizetime, default 100x: 100 executions; Go's
# default of 60 s per new input would eat a short run, since early on
# nearly every input brings new coverage), FUZZ_LOG (directory for the
# per-target logs, default a temporary one), FUZZ_CACHE (the generated
# corpus: "fresh", the default, starts every run from the committed seeds
# in a temporary directory; "go" keeps Go's cache in GOCACHE, where inputs
# pile up from run to run: make fuzz uses it).
#
# A fresh corpus makes a short run the same on every machine: with Go's
# cache, a target's baseline over inputs kept by earlier runs can take its
# whole budget before the first mutation (FuzzKubeletRanges did 0 execs in
# 20 s that way).
#
# Go 1.26's fuzzing coordinator can fail a run that found nothing: when the
# -fuzztime deadline fires, a worker's stop can be reported as the bare
# error "context deadline exceeded" (go.dev/issue/75804, fixed in Go 1.27).
# A run whose only failure is that line, with no failing input written,
# counts as the run it was once the target's committed corpus (its f.Add
# seeds and testdata/fuzz) replays clean; its row says so. Any other failure
# fails the run, and so does a target that never got past the baseline
# (0 executions). hack/fuzz_test.sh checks the classification on real logs.
set -euo pipefail

# deadline_race LOG: true when the only failure LOG reports is the
# coordinator's bare "context deadline exceeded" at the deadline: the log is
# the engine's progress lines ("fuzz: ...", "warning: ..."), then exactly
# one "--- FAIL:" block closed by "FAIL" and holding only that line, then
# go test's "exit status N" and "FAIL<TAB>package" lines; nothing else.
# A failing input is never the race: one being minimized when the deadline
# came is written without the "Failing input written to" line, hence no
# "minimizing" line either (and fuzz.sh also compares testdata/fuzz).
deadline_race() {
  [ -f "$1" ] || return 1
  grep -qE 'Failing input written to|minimizing' "$1" && return 1
  awk '
    state == 0 && /^--- FAIL: / { state = 1; next }
    state == 0 && (/^fuzz: / || /^warning: / || /^[ \t]*$/) { next }
    state == 1 && /^FAIL$/ { state = 2; next }
    state == 1 { sub(/^[ \t]+/, ""); sub(/[ \t\r]+$/, ""); if ($0 == "") next
                 if ($0 == "context deadline exceeded" && !seen) { seen = 1; next } }
    state == 2 && (/^exit status [0-9]+$/ || /^FAIL\t/ || /^[ \t]*$/) { next }
    { bad = 1; exit }
    END { exit !(state == 2 && seen && !bad) }
  ' "$1"
}

# "--classify LOG" prints race or failed for one log (hack/fuzz_test.sh);
# LOG is read from the caller's directory.
if [ "${1:-}" = --classify ]; then
  [ $# -eq 2 ] && [ -f "$2" ] || { echo "usage: hack/fuzz.sh --classify LOG (a readable file)" >&2; exit 2; }
  if deadline_race "$2"; then echo race; else echo failed; fi
  exit 0
fi

# FUZZ_LOG relative to the caller's directory, then work from the repo root.
if [ -n "${FUZZ_LOG:-}" ]; then FUZZ_LOG=$(realpath -m -- "$FUZZ_LOG"); fi
cd "$(dirname "$0")/.."

secs=${1:-20}
only=${2:-.}
parallel=${FUZZ_PARALLEL:-1}
minimize=${FUZZ_MINIMIZE:-100x}
logdir=${FUZZ_LOG:-$(mktemp -d)}
mkdir -p "$logdir"
# an interrupt ends the whole run (and so runs the EXIT trap), not only
# the target that was running.
trap 'exit 130' INT
trap 'exit 143' TERM
cacheargs=()
case ${FUZZ_CACHE:-fresh} in
  fresh)
    cachedir=$(mktemp -d)
    trap 'rm -rf "$cachedir"' EXIT
    cacheargs=(-args "-test.fuzzcachedir=$cachedir") ;;
  go) ;;
  *) echo "FUZZ_CACHE must be fresh or go, got ${FUZZ_CACHE}" >&2; exit 2 ;;
esac

# inputs DIR: how many files a target's testdata/fuzz directory holds (0
# without one); Go writes a failing input there.
inputs() {
  if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi
}

# package directory and target name of every fuzz target, sorted.
mapfile -t targets < <(grep -rHoE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' --include='*_test.go' pkg \
  | sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | grep -E "$only" | sort)
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets match $only" >&2; exit 1; }

total=0 failed=0 start=$(date +%s)
printf '%-28s %-32s %12s  %s\n' package target execs result
for t in "${targets[@]}"; do
  pkg=${t% *} name=${t#* }
  log="$logdir/$name.log"
  rc=0
  seeds_before=$(inputs "$pkg/testdata/fuzz/$name")
  CGO_ENABLED=0 go test -trimpath -ldflags "${FUZZ_LDFLAGS:-}" -run '^$' -fuzz "^$name\$" -fuzztime "${secs}s" \
    -fuzzminimizetime "$minimize" -parallel "$parallel" "./$pkg" "${cacheargs[@]}" >"$log" 2>&1 || rc=$?
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
  total=$((total + execs))
  result=ok
  seeds_after=$(inputs "$pkg/testdata/fuzz/$name")
  if [ $rc -ne 0 ] && [ "$seeds_after" -eq "$seeds_before" ] && deadline_race "$log"; then
    # Go's deadline race (above): the run found nothing; replay the corpus.
    if CGO_ENABLED=0 go test -trimpath -ldflags "${FUZZ_LDFLAGS:-}" -run "^$name\$" "./$pkg" >>"$log" 2>&1; then
      rc=0 result="ok (Go's deadline race at the end, go.dev/issue/75804; corpus replayed)"
    else
      rc=1
    fi
  fi
  if [ $rc -eq 0 ] && [ "$execs" -eq 0 ]; then
    # a pass that never mutated an input tested only the corpus.
    echo "$name: 0 executions in ${secs} s: the baseline over the corpus took the whole budget" >&2
    rc=1
  fi
  if [ $rc -ne 0 ]; then
    result="FAILED (log $log)"
    failed=$((failed + 1))
    # the failure's own lines: the test's messages and any failing input.
    awk '/^--- FAIL: /{on=1} on{print} on && /^FAIL$/{exit}' "$log" >&2
    grep -q -- '--- FAIL' "$log" || tail -20 "$log" >&2
  fi
  printf '%-28s %-32s %12d  %s\n' "$pkg" "$name" "$execs" "$result"
done
printf '%-28s %-32s %12d  %d target(s), %d s\n' total '' "$total" "${#targets[@]}" $(( $(date +%s) - start ))
[ $failed -eq 0 ]
