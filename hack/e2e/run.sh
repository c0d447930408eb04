#!/usr/bin/env bash
# `make e2e`: runs the e2e scenarios (test/e2e, build tag e2e) against
# bin/machineadm, then makes sure nothing of the run is left behind even if
# the test binary was killed (machines, bridge, mounts, cgroups). Refuses
# to start while a `make demo` cluster is up (demo.sh check): the clean-up
# would remove its machines. (`make demo` is demo.sh.)
source "$(dirname "$0")/lib.sh"

cd "$REPO_ROOT"
"$(dirname "$0")/demo.sh" check "make e2e"
export MACHINEADM_E2E_CACHE=$CACHE
# CGO_ENABLED=0 -trimpath: the dependencies compiled for make build and
# make test are reused.
export CGO_ENABLED=0
args=(-trimpath -tags e2e -count=1 -v -timeout 50m)
# MACHINEADM_E2E_RUN=REGEXP runs only the matching tests (go test -run),
# for example TestSealed.
if [ -n "${MACHINEADM_E2E_RUN:-}" ]; then
  args+=(-run "$MACHINEADM_E2E_RUN")
fi
# MACHINEADM_E2E_CORE=1 leaves out the long scenarios that have a cluster
# lifecycle of their own (EXTENDED_TESTS below: each 10 minutes or more),
# as .ci/run does to keep a cold run under an hour; `make e2e` without it
# runs them too. MACHINEADM_E2E_SKIP=REGEXP leaves out more (go test -skip).
EXTENDED_TESTS='^(TestUpgrade|TestUpgradeSystemd|TestBenchUpgrade|TestControlPlaneProvider)$'
skip=${MACHINEADM_E2E_SKIP:-}
if [ "${MACHINEADM_E2E_CORE:-}" = 1 ]; then
  skip=${skip:+$skip|}$EXTENDED_TESTS
fi
if [ -n "$skip" ]; then
  args+=(-skip "$skip")
fi
rc=0
go test "${args[@]}" ./test/e2e/ || rc=$?
"$(dirname "$0")/cleanup.sh"
exit $rc
