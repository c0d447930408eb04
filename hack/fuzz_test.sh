#!/usr/bin/env bash
# Checks hack/fuzz.sh's classification of a failed fuzz run on the logs in
# hack/testdata/fuzzlogs: only a bare "context deadline exceeded" with no
# failing input (Go 1.26's coordinator race, go.dev/issue/75804) is the
# race; a crash, a hung worker, a failing seed and a deadline line beside a
# test's own message all fail. All are logs of real go1.26.8 runs: crash,
# hang and seed of throwaway targets, race of FuzzConfigPatch in a local
# .ci/run (race-and-error is race with a test message added).
set -euo pipefail
cd "$(dirname "$0")/.."
want=(race:race crash:failed hang:failed seed:failed race-and-error:failed)
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
