#!/usr/bin/env bash
# Builds, pinned and cached in $CACHE/bin, every binary the e2e machines run
# that Debian does not ship: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and kube-proxy (k8s.io/kubernetes, module
# hack/e2e/tools/kube; the previous minor's, for TestUpgrade, from
# hack/e2e/tools/kube136 into $KUBE_PREV_DIR), etcd, the CNI plugins
# bridge/host-local/loopback/portmap, a pause binary and the netcheck
# probe (module hack/e2e/tools), CoreDNS (module hack/e2e/tools/coredns), crictl (module
# hack/e2e/tools/crictl), kubectl for the host (module
# hack/e2e/tools/kubectl), containerd 2.x with its runc shim (module
# hack/e2e/tools/containerd2; the host tests and one e2e worker run it,
# with its ctr
# beside Debian's 1.6), and Cluster API's core manager with its core
# components rendered by kustomize (module hack/e2e/tools/capi, for the
# Cluster API e2e's management cluster). images.sh builds the images made
# of them. Each artefact has a stamp file; a matching stamp skips its
# build.
source "$(dirname "$0")/lib.sh"

BIN=$CACHE/bin
IMAGES=$CACHE/images
TOOLS=$REPO_ROOT/hack/e2e/tools
mkdir -p "$BIN/.stamps" "$IMAGES"
GOVERSION=$(go env GOVERSION)


# gobuild NAME VERSION MODULE_DIR PACKAGE [LDFLAGS [TAGS]]: builds one static
# binary unless its stamp says it is current. Build tags, when given, are
# part of the stamp (and only then: the other stamps stay as they were).
gobuild() {
  local name=$1 version=$2 dir=$3 pkg=$4 ldflags=${5:--s -w} tags=${6:-}
  local stamp="$version $GOVERSION $(echo "$ldflags" | sha256sum | cut -c1-12) $(sha256sum "$dir/go.sum" | cut -c1-12)"
  if [ -n "$tags" ]; then
    stamp+=" tags=$tags"
  fi
  # A package of this repository: its sources are part of the version.
  if [[ "$pkg" == .* ]]; then
    stamp+=" $(cd "$dir/$pkg" && find . -maxdepth 1 -name '*.go' ! -name '*_test.go' | sort | xargs cat | sha256sum | cut -c1-12)"
  fi
  if [ -x "$BIN/$name" ] && stamp_ok "$BIN/.stamps/$name" "$stamp"; then
    log "build $name: cached"
    return 0
  fi
  local start=$(date +%s)
  log "build $name $version"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "$BIN/$name.tmp" "$pkg")
  mv "$BIN/$name.tmp" "$BIN/$name"
  echo "$stamp" >"$BIN/.stamps/$name"
  log "build $name: $(($(date +%s) - start))s"
}

# The image builder's own tests (its module is outside `make test`).
(cd "$TOOLS" && CGO_ENABLED=0 go test -trimpath ./cmd/... >/dev/null) || { log "hack/e2e/tools tests failed"; exit 1; }
# Small ones first so a failure in the setup shows early.
gobuild pause v1 "$TOOLS" ./cmd/pause
gobuild e2e-images v1 "$TOOLS" ./cmd/e2e-images
gobuild netcheck v1 "$TOOLS" ./cmd/netcheck
for p in main/bridge ipam/host-local main/loopback meta/portmap; do
  gobuild "$(basename $p)" "$CNI_PLUGINS_VERSION" "$TOOLS" "github.com/containernetworking/plugins/plugins/$p"
done
gobuild etcd "$ETCD_VERSION" "$TOOLS" go.etcd.io/etcd/server/v3
# The DNS addon kubeadm deploys (constants.CoreDNSVersion), with the plugins
# kubeadm's Corefile uses; the test checks that plugin list.
(cd "$TOOLS/coredns" && CGO_ENABLED=0 go test -trimpath . >/dev/null) || { log "hack/e2e/tools/coredns tests failed"; exit 1; }
gobuild coredns "$COREDNS_VERSION" "$TOOLS/coredns" .
gobuild crictl "$CRI_TOOLS_VERSION" "$TOOLS/crictl" sigs.k8s.io/cri-tools/cmd/crictl \
  "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION"
# containerd 2.x and its runc shim, beside the machines' Debian containerd
# 1.6: pkg/host's tests start it (internal/testcontainerd), and one
# worker of TestScenarios runs it (test/e2e). Without cgo: the btrfs,
# devmapper and zfs snapshotters (cgo or unused here) are left out, as
# containerd's own static builds do. Its version is stamped into
# `containerd --version`, which machineadm reads to pick config version 3.
CONTAINERD2_VERSION=$(cd "$TOOLS/containerd2" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
CONTAINERD2_TAGS="no_btrfs no_devmapper no_zfs"
CONTAINERD2_LDFLAGS="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD2_VERSION"
gobuild containerd2 "$CONTAINERD2_VERSION" "$TOOLS/containerd2" github.com/containerd/containerd/v2/cmd/containerd "$CONTAINERD2_LDFLAGS" "$CONTAINERD2_TAGS"
gobuild containerd2-shim-runc-v2 "$CONTAINERD2_VERSION" "$TOOLS/containerd2" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$CONTAINERD2_LDFLAGS" "$CONTAINERD2_TAGS"
gobuild containerd2-ctr "$CONTAINERD2_VERSION" "$TOOLS/containerd2" github.com/containerd/containerd/v2/cmd/ctr "$CONTAINERD2_LDFLAGS" "$CONTAINERD2_TAGS"
# Cluster API's core manager (Cluster, Machine, MachineSet,
# MachineDeployment, ... controllers) for TestClusterAPI's management
# cluster (images.sh makes its image).
CAPI_VERSION=$(cd "$TOOLS/capi" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)
gobuild capi-manager "$CAPI_VERSION" "$TOOLS/capi" sigs.k8s.io/cluster-api/core
# kube-bench, the independent CIS checker of the compliance e2e
# (TestComplianceProfile), and its benchmark definitions: the module's cfg/
# directory, copied to $CACHE/kube-bench-cfg (a new artefact with a stamp
# of its own).
KUBE_BENCH_VERSION=$(cd "$TOOLS/kubebench" && go list -m -f '{{.Version}}' github.com/aquasecurity/kube-bench)
gobuild kube-bench "$KUBE_BENCH_VERSION" "$TOOLS/kubebench" github.com/aquasecurity/kube-bench
if [ -d "$CACHE/kube-bench-cfg" ] && stamp_ok "$CACHE/kube-bench-cfg.stamp" "$KUBE_BENCH_VERSION"; then
  log "kube-bench cfg: cached"
else
  kb_dir=$(cd "$TOOLS/kubebench" && go mod download -json github.com/aquasecurity/kube-bench | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$CACHE/kube-bench-cfg" && cp -r "$kb_dir/cfg" "$CACHE/kube-bench-cfg.tmp" && chmod -R u+w "$CACHE/kube-bench-cfg.tmp"
  mv "$CACHE/kube-bench-cfg.tmp" "$CACHE/kube-bench-cfg"
  echo "$KUBE_BENCH_VERSION" >"$CACHE/kube-bench-cfg.stamp"
  log "kube-bench cfg $KUBE_BENCH_VERSION: $(ls "$CACHE/kube-bench-cfg" | wc -l) entries"
fi
# clusterctl from the same module (TestClusterctl: init from a local
# provider repository, generate cluster from the committed template).
gobuild clusterctl "$CAPI_VERSION" "$TOOLS/capi" sigs.k8s.io/cluster-api/cmd/clusterctl
# (Cluster API's kubeadm bootstrap manager, the other side of the scale
# benchmark, is built by `make bench-capi` itself: neither the tests nor the
# e2e run it, so a cold CI run does not build it.)
# One at a time: kube-apiserver alone needs about 2.4 GB and 4 minutes.
for c in kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver; do
  gobuild "$c" "$KUBERNETES_VERSION" "$TOOLS/kube" "k8s.io/kubernetes/cmd/$c" "$KUBE_LDFLAGS"
done
# The previous minor for TestUpgrade, in a directory of its own
# ($KUBE_PREV_DIR/bin, own stamps) so the current components' artefacts and
# stamps stay untouched. Same order and one at a time, as above.
build_prev_components() {
  local BIN=$KUBE_PREV_DIR/bin c
  mkdir -p "$BIN/.stamps"
  for c in kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver; do
    gobuild "$c" "$KUBE_PREV_VERSION" "$TOOLS/kube136" "k8s.io/kubernetes/cmd/$c" "$(kube_ldflags "$KUBE_PREV_VERSION")"
  done
}
# Only the extended scenarios use them: a core run (MACHINEADM_E2E_CORE=1,
# .ci/run) leaves out their 15 cold minutes.
if [ "${MACHINEADM_E2E_CORE:-}" = 1 ]; then
  log "previous minor $KUBE_PREV_VERSION: not needed by the core scenarios (MACHINEADM_E2E_CORE=1)"
else
  build_prev_components
fi
# kubectl runs on the host, not in the machines: `make demo` and `make
# demo-kubectl` use it. Its own module (hack/e2e/tools/kubectl), so its
# dependencies leave the components' go.sum, and their stamps, alone.
gobuild kubectl "$KUBERNETES_VERSION" "$TOOLS/kubectl" k8s.io/kubernetes/cmd/kubectl "$KUBE_LDFLAGS"
# Cluster API's core components as its release renders them: the same
# module version's core/config/default through kustomize (kubectl
# kustomize, above): namespace capi-system, RBAC, the manager's
# Deployment, the webhook Service, the CRDs with their conversion
# webhooks, the webhook configurations, and cert-manager's Certificate and
# Issuer (TestClusterAPI replaces those by a serving certificate of its
# own). clusterctl's variables (${NAME:=default}) stay for the test to
# resolve, as clusterctl init would.
capi_stamp="$CAPI_VERSION kustomize $(cat "$BIN/.stamps/kubectl")"
if [ -f "$CACHE/capi/core-components.yaml" ] && stamp_ok "$CACHE/capi/.stamp" "$capi_stamp"; then
  log "Cluster API core components: cached"
else
  capi_dir=$(cd "$TOOLS/capi" && go mod download -json sigs.k8s.io/cluster-api | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$CACHE/capi" && mkdir -p "$CACHE/capi"
  "$BIN/kubectl" kustomize "$capi_dir/core/config/default" >"$CACHE/capi/core-components.yaml.tmp"
  mv "$CACHE/capi/core-components.yaml.tmp" "$CACHE/capi/core-components.yaml"
  echo "$capi_stamp" >"$CACHE/capi/.stamp"
  log "Cluster API core components $CAPI_VERSION: $(grep -c '^kind: CustomResourceDefinition' "$CACHE/capi/core-components.yaml") CRDs"
fi
# What clusterctl needs of Cluster API's module besides its binary, for
# TestClusterctl's local provider repository: the core provider's
# metadata.yaml (release series and contracts) and clusterctl's inventory
# CRD (Provider), whose entry for the core provider the test writes, since
# it installs the core components itself.
clusterctl_stamp="$CAPI_VERSION clusterctl-repo"
if [ -f "$CACHE/clusterctl/metadata.yaml" ] && stamp_ok "$CACHE/clusterctl/.stamp" "$clusterctl_stamp"; then
  log "clusterctl repository files: cached"
else
  capi_dir=$(cd "$TOOLS/capi" && go mod download -json sigs.k8s.io/cluster-api | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$CACHE/clusterctl" && mkdir -p "$CACHE/clusterctl"
  cp "$capi_dir/metadata.yaml" "$capi_dir/cmd/clusterctl/config/manifest/clusterctl-api.yaml" "$CACHE/clusterctl/"
  chmod 0644 "$CACHE/clusterctl/"*.yaml
  echo "$clusterctl_stamp" >"$CACHE/clusterctl/.stamp"
  log "clusterctl repository files $CAPI_VERSION"
fi
