#!/usr/bin/env bash
# `make bench-e2e`: plain kubeadm against `machineadm bootstrap` in the e2e
# machines, in one run (test/e2e/bench_test.go, TestBench). BENCH_N samples
# of each tool for control-plane init and for worker join (default 5).
# Like every e2e run it needs the machine to itself: run it as
#   flock /tmp/machineadm-e2e.lock make bench-e2e
source "$(dirname "$0")/../e2e/lib.sh"

cd "$REPO_ROOT"
# Its clean-up below would remove a `make demo` cluster's machines.
hack/e2e/demo.sh check "make bench-e2e"
"$REPO_ROOT/hack/bench/kubeadm.sh"
export MACHINEADM_E2E_CACHE=$CACHE MACHINEADM_E2E_BENCH=1 MACHINEADM_BENCH_N=${BENCH_N:-5}
# As hack/e2e/run.sh: the dependencies compiled for make build are reused.
export CGO_ENABLED=0
rc=0
# BENCH_RUN picks the benchmark: TestBench (bootstrap, the default) or
# TestBenchUpgrade (make bench-upgrade-e2e).
go test -trimpath -tags e2e -count=1 -v -timeout 90m -run "${BENCH_RUN:-^TestBench\$}" ./test/e2e/ || rc=$?
"$REPO_ROOT/hack/e2e/cleanup.sh"
exit $rc
