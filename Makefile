# machineadm build, test and end-to-end entry points.
# The embedded kubeadm learns its own version only through -ldflags; every
# build and test target below stamps it.

KUBERNETES_VERSION ?= v1.37.2
VERSION            ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT             ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
KMAJOR := $(word 1,$(subst ., ,$(patsubst v%,%,$(KUBERNETES_VERSION))))
KMINOR := $(word 2,$(subst ., ,$(patsubst v%,%,$(KUBERNETES_VERSION))))

LDFLAGS := -s -w \
  -X k8s.io/component-base/version.gitVersion=$(KUBERNETES_VERSION) \
  -X k8s.io/component-base/version.gitMajor=$(KMAJOR) \
  -X k8s.io/component-base/version.gitMinor=$(KMINOR) \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X github.com/machineadm/machineadm/pkg/version.Version=$(VERSION) \
  -X github.com/machineadm/machineadm/pkg/version.GitCommit=$(COMMIT)
# Test binaries keep symbols (no -s -w) so stack traces stay readable.
TEST_LDFLAGS := $(filter-out -s -w,$(LDFLAGS))

GO        ?= go
# PKGS limits test and bench to some packages, e.g. make test PKGS=./pkg/spec/...
PKGS      ?= ./...
PLATFORMS ?= linux/amd64 linux/arm64 windows/amd64
# BUILD_TAGS links optional parts into make build: the cloud KMS recipient
# types of sealed secrets (kms_aws, kms_gcp, kms_azure, kms_vault, or
# kms_all for the four; docs/sealed-secrets.md). Default: none.
BUILD_TAGS ?=
KMS_PKGS   := ./pkg/seal/sealkms/...

.PHONY: build build-kms build-all build-controller image-controller agents capi-manifests deps test doc-test bench vet fmt schema demo demo-kubectl demo-down e2e e2e-no-demo e2e-soak bench-e2e bench-capi bench-upgrade-e2e clean release release-check fuzz-short fuzz

build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags "$(BUILD_TAGS)" -ldflags "$(LDFLAGS)" -o bin/machineadm ./cmd/machineadm

# build-kms: bin/machineadm-kms with all four cloud KMS recipient types.
build-kms:
	CGO_ENABLED=0 $(GO) build -trimpath -tags kms_all -ldflags "$(LDFLAGS)" -o bin/machineadm-kms ./cmd/machineadm

# The Cluster API bootstrap provider (docs/cluster-api.md).
build-controller:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/machineadm-controller ./cmd/machineadm-controller

# image-controller writes the controller's container image as a
# docker-archive tarball (bin/images/machineadm-controller.tar: the static
# binary at /machineadm-controller and the signed agent builds of `make
# agents` under /agents, on an empty base), built without Docker by the
# e2e's image builder; `ctr -n k8s.io images import` or `crane push` take
# it from there.
CONTROLLER_IMAGE ?= ghcr.io/machineadm/machineadm-controller:$(VERSION)
image-controller: build-controller agents
	cd hack/e2e/tools && $(GO) build -o ../../../bin/e2e-images ./cmd/e2e-images
	bin/e2e-images -out bin/images -base $(AGENTS_ROOT) $(CONTROLLER_IMAGE)=bin/machineadm-controller:/machineadm-controller

# agents: the agent builds machineadm-controller serves from the management
# cluster (R10, --agent-dir /agents), as a release signs them: the $(PLATFORMS)
# binaries, SHA256SUMS, BINARY.sig and machineadm-release.pub
# (hack/release -agents-only), in $(AGENTS_ROOT)/agents. Signed with
# SIGNING_KEY; without one, with a throwaway ECDSA P-256 key made once at
# bin/agent-signing.key (development and e2e images only: machines pin
# whatever key the controller serves beside the builds).
AGENTS_ROOT ?= bin/agents-root
agents:
	@mkdir -p $(AGENTS_ROOT)/agents
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "agents: building $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
	    -o $(AGENTS_ROOT)/agents/machineadm-$$os-$$arch$$ext ./cmd/machineadm; \
	done
	@if [ -z "$(SIGNING_KEY)" ] && [ ! -f bin/agent-signing.key ]; then \
	  (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out bin/agent-signing.key); fi
	cd hack/release && CGO_ENABLED=0 $(GO) build -trimpath -o $(CURDIR)/bin/machineadm-release .
	bin/machineadm-release -agents-only -dist $(AGENTS_ROOT)/agents -key $(or $(SIGNING_KEY),bin/agent-signing.key)

# capi-manifests regenerates deepcopy, CRDs, RBAC, the Deployment,
# metadata.yaml and bootstrap-components.yaml in contrib/cluster-api with
# the controller-gen pinned in hack/tools/go.mod.
capi-manifests:
	cd hack/tools && $(GO) build -o ../../bin/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	bin/controller-gen object 'paths=./pkg/capi/api/...;./pkg/capi/controlplane/api/...'
	$(GO) run ./hack/gen-capi -controller-gen bin/controller-gen -out contrib/cluster-api

build-all:
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "building $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
	    -o bin/machineadm-$$os-$$arch$$ext ./cmd/machineadm; \
	done

# deps installs the Debian packages the tests use (idempotent; apt runs only
# when one is missing).
deps:
	hack/install-deps.sh

# Tests, vet and bench compile as the binaries do (CGO_ENABLED=0,
# -trimpath), so one cold build of the dependencies serves them all; on a
# 2-core machine each separate configuration of k8s.io/kubernetes costs
# several minutes.
TEST_ENV      := CGO_ENABLED=0
TRIM          := -trimpath

# The cloud KMS types build only with their tags: the full run tests them too.
test: deps
	$(TEST_ENV) $(GO) test $(TRIM) -ldflags "$(TEST_LDFLAGS)" $(PKGS) $(TESTFLAGS)
	$(if $(filter ./...,$(PKGS)),$(TEST_ENV) $(GO) test $(TRIM) -tags kms_all -ldflags "$(TEST_LDFLAGS)" $(KMS_PKGS) $(TESTFLAGS))

# doc-test (test/doctest, build tag doctest): runs the README's quick start
# exactly as written, as one session in a copy of the work tree (its first
# block is `make build`), then every shell block of README.md and docs/*.md
# not marked `<!-- doc-test: skip (REASON) -->`, each alone; every session in
# a network namespace of its own (loopback only). Needs root; about a
# minute with a warm build cache.
doc-test:
	$(TEST_ENV) $(GO) test $(TRIM) -tags doctest -ldflags "$(TEST_LDFLAGS)" -count=1 -v -run TestDocsRun ./test/doctest/

bench:
	$(TEST_ENV) $(GO) test $(TRIM) -ldflags "$(TEST_LDFLAGS)" -run '^$$' -bench . -benchmem $(PKGS)

vet:
	$(TEST_ENV) $(GO) vet $(TRIM) ./...
	$(TEST_ENV) $(GO) vet $(TRIM) -tags kms_all $(KMS_PKGS) ./cmd/machineadm
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# Fuzzing (hack/fuzz.sh): every FuzzXxx target under pkg/ in turn.
# fuzz-short gives each FUZZTIME_SHORT seconds (CI); fuzz gives each
# FUZZTIME seconds, FUZZ=REGEX picks targets by package or name. Both
# first check the script's reading of a failed run (hack/fuzz_test.sh).
# fuzz-short starts from the committed seeds; fuzz keeps Go's corpus cache.
FUZZTIME_SHORT ?= 20
FUZZTIME       ?= 600
FUZZ           ?= .

fuzz-short:
	hack/fuzz_test.sh
	FUZZ_LDFLAGS="$(TEST_LDFLAGS)" hack/fuzz.sh $(FUZZTIME_SHORT)

fuzz:
	hack/fuzz_test.sh
	FUZZ_CACHE=go FUZZ_LDFLAGS="$(TEST_LDFLAGS)" hack/fuzz.sh $(FUZZTIME) '$(FUZZ)'

schema:
	$(GO) run ./hack/gen-schema

clean:
	rm -rf bin dist

# End-to-end (issue 6): real machines (systemd-nspawn, systemd, containerd,
# runc), real etcd, control plane and kubelet, all offline. Needs root.
# e2e-prepare builds or finds cached components, images and the Debian root
# filesystem in $(MACHINEADM_E2E_CACHE), outside the repository.
MACHINEADM_E2E_CACHE ?= /var/cache/machineadm-e2e
export MACHINEADM_E2E_CACHE

e2e-prepare:
	hack/e2e/prepare.sh

# e2e refuses to start while a demo cluster is up (or being made, or left
# behind): its clean-up would remove the demo's machines. `make demo-down`
# first. TestClusterAPI runs machineadm-controller from image-controller's
# image in its management cluster.
e2e: e2e-no-demo build image-controller e2e-prepare
	hack/e2e/run.sh

e2e-no-demo:
	@hack/e2e/demo.sh check "make e2e"

# e2e-soak runs the whole e2e suite N times in a row (default 10) and prints
# "P passed, F failed"; SOAK_DEMO=1 runs `make demo` and `make demo-down`
# before each run.
N ?= 10
e2e-soak: e2e-no-demo build image-controller e2e-prepare
	hack/e2e/soak.sh $(N)

# bench-e2e (hack/bench): plain kubeadm (built from the same
# k8s.io/kubernetes module, cached) against `machineadm bootstrap` in the
# e2e machines, BENCH_N samples each (default 5) of control-plane init and
# worker join, in one run; prints the medians, their ratios and the targets
# (test/e2e/bench_test.go). Refuses while a demo is up. Like every e2e run:
#   flock /tmp/machineadm-e2e.lock make bench-e2e
BENCH_N ?= 5
bench-e2e: e2e-no-demo build e2e-prepare
	BENCH_N=$(BENCH_N) hack/bench/run.sh

# bench-capi (pkg/capi/controller/scalebench, build tag scalebench): the
# side-by-side scale benchmark of the bootstrap provider. SCALE_N worker
# configs (default 1000) reconciled by machineadm-controller, then as many
# KubeadmConfigs by Cluster API's kubeadm bootstrap manager (built from
# the Cluster API module, hack/e2e/tools/capi-kubeadm; once as shipped,
# once without its client-side rate limits), each binary alone
# against a fresh envtest API server (kube-apiserver and etcd from
# $(MACHINEADM_E2E_CACHE)/bin: make e2e-prepare) with the same CRDs and
# Cluster; prints time to every data Secret, peak RSS, API requests per
# config (the API server's audit log) and their ratios. Loopback only.
# SCALE_SIDES=machineadm SCALE_PPROF_DIR=DIR: that side alone, with its
# heap and allocation profiles written into DIR.
SCALE_N ?= 1000
bench-capi: build-controller
	cd hack/e2e/tools/capi-kubeadm && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(CURDIR)/bin/capi-kubeadm-bootstrap sigs.k8s.io/cluster-api/bootstrap/kubeadm
	KUBEBUILDER_ASSETS=$(MACHINEADM_E2E_CACHE)/bin \
	  CAPI_MODULE_DIR=$$(cd hack/e2e/tools/capi && $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api) \
	  MACHINEADM_CONTROLLER=$(CURDIR)/bin/machineadm-controller CAPI_KUBEADM_BOOTSTRAP=$(CURDIR)/bin/capi-kubeadm-bootstrap \
	  SCALE_N=$(SCALE_N) $(TEST_ENV) $(GO) test $(TRIM) -tags scalebench -ldflags "$(TEST_LDFLAGS)" -count=1 -timeout 60m -v \
	  -run TestScaleSideBySide ./pkg/capi/controller/scalebench/
# bench-upgrade-e2e: per node, `machineadm upgrade` against plain kubeadm's
# `upgrade apply` / `upgrade node` (plus the kubelet binary and restart),
# v1.36.3 -> v1.37.2, on clusters of their own in one run; BENCH_UPGRADE_N
# samples each (default 1): time, peak RSS, API server unavailability
# (test/e2e/bench_upgrade_test.go). Each cluster is cp1, w1 and w2; w2 is
# a reference beside the targets ("worker-checked"): its kubeadm arm
# checks the new kubelet's sha256 and syncs it into place, as machineadm
# does, where w1's installs it unchecked. Like every e2e run:
#   flock /tmp/machineadm-e2e.lock make bench-upgrade-e2e
# Each control plane's sample logs when its control-plane containers
# started and ended; bench-upgrade-timeline.log in its machine's run
# directory adds the kubelet's journal about them. Diagnostic only:
# MACHINEADM_BENCH_HEAP_PROFILE=1 has machineadm write heap profiles
# (heap.prof, heap.prof.peak beside the log), which raise the figures.
BENCH_UPGRADE_N ?= 1
bench-upgrade-e2e: e2e-no-demo build e2e-prepare
	BENCH_N=$(BENCH_UPGRADE_N) BENCH_RUN='^TestBenchUpgrade$$' hack/bench/run.sh

# The README's "run the main job" (hack/e2e/demo.sh): builds machineadm and
# the components, boots cp1 and w1, creates the cluster on cp1 and joins w1
# (e2e scenario 1), narrating each step; then both outcome reports and
# `kubectl get nodes -o wide`. Go test output only when something fails
# (all of it in /var/tmp/machineadm-demo/demo.log). The cluster keeps
# running: demo-kubectl runs kubectl on it (ARGS="get pods -A"), inside its
# network namespace; demo-down removes it. A second demo while one is up
# says so and changes nothing.
demo:
	@MAKE="$(MAKE)" hack/e2e/demo.sh up

demo-kubectl:
	@hack/e2e/demo.sh kubectl $(ARGS)

demo-down:
	@hack/e2e/demo.sh down

# Release (issue 15): make release VERSION=vX.Y.Z SIGNING_KEY=key.pem writes
# $(DIST)/: static, reproducible binaries (no build ID, no paths, no VCS
# stamp; SOURCE_DATE_EPOCH, the commit time, in every archive), deb and rpm
# packages, the Windows zip, an SPDX SBOM per binary, SHA256SUMS and a
# signature of each (hack/release, its own Go module). docs/install.md.
DIST              ?= dist
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
RELEASE_LDFLAGS   := $(LDFLAGS) -buildid=

release:
	@case "$(VERSION)" in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "make release: VERSION=vX.Y.Z is required (got $(VERSION))" >&2; exit 2;; esac
	@test -n "$(SIGNING_KEY)" || { echo "make release: SIGNING_KEY=path of the PEM signing key (ECDSA P-256) is required" >&2; exit 2; }
	@test -z "$$(git status --porcelain --untracked-files=no)" || [ "$(ALLOW_DIRTY)" = 1 ] || \
	  { echo "make release: the work tree has uncommitted changes; a release is built from a commit (ALLOW_DIRTY=1 to build anyway)" >&2; exit 2; }
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "release: building $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOAMD64=v1 GOARM64=v8.0 $(GO) build -trimpath -buildvcs=false \
	    -ldflags "$(RELEASE_LDFLAGS)" -o $(DIST)/machineadm-$$os-$$arch$$ext ./cmd/machineadm; \
	done
	cd hack/release && CGO_ENABLED=0 $(GO) build -trimpath -o $(CURDIR)/bin/machineadm-release .
	bin/machineadm-release -repo . -dist $(DIST) -version $(VERSION) -source-date-epoch $(SOURCE_DATE_EPOCH) -key $(SIGNING_KEY)

# release-check: make release with a throwaway key, then the release tests
# (signatures, reproducibility in two clones, package install/purge).
release-check:
	hack/release/check.sh
