#!/usr/bin/env bash
# Builds, pinned and cached in $CACHE/bin, every binary the e2e machines run
# that Debian does not ship: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and kube-proxy (k8s.io/kubernetes, module
# hack/e2e/tools/kube), etcd, the CNI plugins bridge/host-local/loopback/
# portmap, a pause binary and the netcheck probe (module hack/e2e/tools),
# CoreDNS (module hack/e2e/tools/coredns) and crictl (module
# hack/e2e/tools/crictl). images.sh builds the images
# made of them. Each artefact has a stamp file; a matching stamp skips its
# build.
source "$(dirname "$0")/lib.sh"

BIN=$CACHE/bin
IMAGES=$CACHE/images
TOOLS=$REPO_ROOT/hack/e2e/tools
mkdir -p "$BIN/.stamps" "$IMAGES"
GOVERSION=$(go env GOVERSION)

KMAJOR=$(echo "${KUBERNETES_VERSION#v}" | cut -d. -f1)
KMINOR=$(echo "${KUBERNETES_VERSION#v}" | cut -d. -f2)
KUBE_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  KUBE_LDFLAGS+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=$KMAJOR -X $pkg.gitMinor=$KMINOR"
  KUBE_LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

# gobuild NAME VERSION MODULE_DIR PACKAGE [LDFLAGS]: builds one static binary
# unless its stamp says it is current.
gobuild() {
  local name=$1 version=$2 dir=$3 pkg=$4 ldflags=${5:--s -w}
  local stamp="$version $GOVERSION $(echo "$ldflags" | sha256sum | cut -c1-12) $(sha256sum "$dir/go.sum" | cut -c1-12)"
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
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "$pkg")
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
# One at a time: kube-apiserver alone needs about 2.4 GB and 4 minutes.
for c in kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver; do
  gobuild "$c" "$KUBERNETES_VERSION" "$TOOLS/kube" "k8s.io/kubernetes/cmd/$c" "$KUBE_LDFLAGS"
done
