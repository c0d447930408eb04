#!/usr/bin/env bash
# Checks hack/fuzz.sh's classification of a failed fuzz run on the logs in
# hack/testdata/fuzzlogs: only a bare "context deadline exceeded" with no
# failing input (Go 1.26's coordinator race, go.dev/issue/75804) is the
# race; a crash, a hung worker, a failing seed and a deadline line beside a
# test's own message all fail. crash, hang and seed are logs of real
# go1.26.8 runs of throwaway targets, race of FuzzConfigPatch in a local
# .ci/run. The others are race with one thing changed, each a real failure
# that must not read as the race: a test message inside the block
# (race-and-error) or after it (after), an input being minimized at the
# deadline (race-minimizing), a panic before the block (panic-before), a
# second failing target (two-blocks), a log cut before its closing FAIL
# (race-trunc).
set -euo pipefail
cd "$(dirname "$0")/.."
want=(race:race crash:failed hang:failed seed:failed race-and-error:failed
  race-minimizing:failed panic-before:failed after:failed two-blocks:failed race-trunc:failed)
bad=0
for w in "${want[@]}"; do
  f=${w%%:*} exp=${w#*:}
  got=$(hack/fuzz.sh --classify "hack/testdata/fuzzlogs/$f.log")
  if [ "$got" != "$exp" ]; then
    echo "fuzz_test: $f.log classified $got, want $exp" >&2
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "fuzz_test: ${#want[@]} logs classified as expected"
