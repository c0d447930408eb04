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

.PHONY: build build-all deps test bench vet fmt schema demo e2e e2e-soak clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/machineadm ./cmd/machineadm

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

test: deps
	CGO_ENABLED=1 $(GO) test -ldflags "$(TEST_LDFLAGS)" $(PKGS) $(TESTFLAGS)

bench:
	$(GO) test -ldflags "$(TEST_LDFLAGS)" -run '^$$' -bench . -benchmem $(PKGS)

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

schema:
	$(GO) run ./hack/gen-schema

clean:
	rm -rf bin

# End-to-end (issue 6): real machines (systemd-nspawn, systemd, containerd,
# runc), real etcd, control plane and kubelet, all offline. Needs root.
# e2e-prepare builds or finds cached components, images and the Debian root
# filesystem in $(MACHINEADM_E2E_CACHE), outside the repository.
MACHINEADM_E2E_CACHE ?= /var/cache/machineadm-e2e
export MACHINEADM_E2E_CACHE

e2e-prepare:
	hack/e2e/prepare.sh

e2e: build e2e-prepare
	hack/e2e/run.sh

# e2e-soak runs the whole e2e suite N times in a row (default 10) and prints
# "P passed, F failed"; SOAK_DEMO=1 runs `make demo` before each run.
N ?= 10
e2e-soak: build e2e-prepare
	hack/e2e/soak.sh $(N)

# The README's "run the main job": scenario 1 (a control plane and a worker
# bootstrapped by machineadm), then both outcome reports.
demo: build e2e-prepare
	hack/e2e/run.sh demo
