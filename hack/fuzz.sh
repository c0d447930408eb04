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
# per-target logs, default a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-20}
only=${2:-.}
parallel=${FUZZ_PARALLEL:-1}
minimize=${FUZZ_MINIMIZE:-100x}
logdir=${FUZZ_LOG:-$(mktemp -d)}
mkdir -p "$logdir"

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
  CGO_ENABLED=0 go test -trimpath -ldflags "${FUZZ_LDFLAGS:-}" -run '^$' -fuzz "^$name\$" -fuzztime "${secs}s" \
    -fuzzminimizetime "$minimize" -parallel "$parallel" "./$pkg" >"$log" 2>&1 || rc=$?
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
  total=$((total + execs))
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED (log $log)"
    failed=$((failed + 1))
    grep -E -- '--- FAIL|Failing input written to|testdata/fuzz' "$log" >&2 || tail -20 "$log" >&2
  fi
  printf '%-28s %-32s %12d  %s\n' "$pkg" "$name" "$execs" "$result"
done
printf '%-28s %-32s %12d  %d target(s), %d s\n' total '' "$total" "${#targets[@]}" $(( $(date +%s) - start ))
[ $failed -eq 0 ]
