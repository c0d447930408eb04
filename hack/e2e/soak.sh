#!/usr/bin/env bash
# `make e2e-soak N=10`: runs the whole e2e suite (run.sh, every scenario)
# N times in a row and prints "P passed, F failed". Each run starts from
# whatever the previous one left; with SOAK_DEMO=1 a `make demo` run
# (scenario 1 only, its cluster kept) and a `make demo-down` go before each
# suite run, so every suite run follows a demo and its removal. Each run's output is kept in $SOAK_LOGS (default
# /var/tmp/machineadm-e2e-soak/<start time>), one file per run; the
# failed runs' files are listed at the end. Exit code 0 only when all
# passed.
source "$(dirname "$0")/lib.sh"

n=${1:-${N:-10}}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: soak.sh N (a positive count)" >&2; exit 2; }
logs=${SOAK_LOGS:-/var/tmp/machineadm-e2e-soak/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$logs"
passed=0 failed=0 failures=()
for i in $(seq 1 "$n"); do
  if [ "${SOAK_DEMO:-0}" = 1 ]; then
    "$(dirname "$0")/demo.sh" up >"$logs/run-$i-demo.log" 2>&1 ||
      log "soak: run $i: demo failed ($logs/run-$i-demo.log)"
    "$(dirname "$0")/demo.sh" down >>"$logs/run-$i-demo.log" 2>&1 ||
      log "soak: run $i: demo-down failed ($logs/run-$i-demo.log)"
  fi
  start=$(date +%s)
  if "$(dirname "$0")/run.sh" >"$logs/run-$i.log" 2>&1; then
    passed=$((passed + 1))
    log "soak: run $i/$n passed in $(($(date +%s) - start))s"
  else
    failed=$((failed + 1))
    failures+=("$logs/run-$i.log")
    log "soak: run $i/$n FAILED in $(($(date +%s) - start))s: $(grep -m1 -E -- '--- FAIL|^FAIL|e2e setup:|panic:' "$logs/run-$i.log" || echo see log)"
  fi
done
echo "$passed passed, $failed failed"
for f in "${failures[@]}"; do echo "failed: $f"; done
[ "$failed" -eq 0 ]
