#!/usr/bin/env bash
# Builds the plain kubeadm the benchmark compares machineadm with:
# k8s.io/kubernetes/cmd/kubeadm from machineadm's own go.mod (the same
# k8s.io/kubernetes module version, staging replaces and dependency
# versions as the kubeadm machineadm embeds), stamped with the Kubernetes
# version like the e2e components (hack/e2e/components.sh), static, cached
# in $CACHE/bin/kubeadm with a stamp: a second run with the same go.sum and
# Go version skips the build (about 2.5 min cold on 2 cores).
source "$(dirname "$0")/../e2e/lib.sh"

BIN=$CACHE/bin
mkdir -p "$BIN/.stamps"
ldflags=$KUBE_LDFLAGS # lib.sh
stamp="$KUBERNETES_VERSION $(go env GOVERSION) $(echo "$ldflags" | sha256sum | cut -c1-12) $(sha256sum "$REPO_ROOT/go.sum" | cut -c1-12)"
if [ -x "$BIN/kubeadm" ] && stamp_ok "$BIN/.stamps/kubeadm" "$stamp"; then
  log "build kubeadm: cached"
  exit 0
fi
start=$(date +%s)
log "build kubeadm $KUBERNETES_VERSION"
(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/kubeadm.tmp" k8s.io/kubernetes/cmd/kubeadm)
mv "$BIN/kubeadm.tmp" "$BIN/kubeadm"
echo "$stamp" >"$BIN/.stamps/kubeadm"
log "build kubeadm: $(($(date +%s) - start))s"
