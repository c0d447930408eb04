# Shared settings of the e2e preparation scripts; sourced, never run.
# Every artefact lives outside the repository in $CACHE and carries a stamp
# file whose content is the exact version it was built from, so a second run
# skips whatever is already present and current.
set -euo pipefail

CACHE=${MACHINEADM_E2E_CACHE:-/var/cache/machineadm-e2e}
KUBERNETES_VERSION=${KUBERNETES_VERSION:-v1.37.2}
# kubeadm 1.37 has no SupportedEtcdVersion entry for 37 and falls back to its
# newest one, constants.DefaultEtcdVersion "3.7.0-0": the image tag is that,
# the binary is etcd v3.7.0.
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}
ETCD_IMAGE_TAG=${ETCD_IMAGE_TAG:-3.7.0-0}
# kubeadm constants.PauseVersion.
PAUSE_IMAGE_TAG=${PAUSE_IMAGE_TAG:-3.10.2}
CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v1.10.0}
# kubeadm constants.CoreDNSVersion of the embedded k8s.io/kubernetes: the
# image tag kubeadm asks for and the github.com/coredns/coredns module version.
COREDNS_VERSION=${COREDNS_VERSION:-v1.14.6}
# cri-tools' crictl (module hack/e2e/tools/crictl), the CRI client of the
# systemd control-plane scenario.
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.37.0}
# The image repository the e2e specs name (kubernetes.imageRepository).
# Nothing is ever pulled from it: every image is imported from a tarball, and
# the reserved .invalid domain (RFC 2606) never resolves, so a stray pull
# fails at once instead of reaching a real registry.
IMAGE_REPOSITORY=${IMAGE_REPOSITORY:-registry.e2e.invalid}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

log() { printf '%s [e2e] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# stamp_ok FILE VALUE: true when FILE exists and holds exactly VALUE.
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# debian_mirror prints the first Debian mirror the host's apt uses.
debian_mirror() {
  local m
  m=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    grep -v security | grep -oE 'https?://[^ ]+' | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

# apt_install PKG...: installs the host packages the e2e needs when missing.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# `make demo` (demo.sh): its files (state, kubeconfig, reports, the log) and
# the named network namespace its cluster lives in, which outlives the test
# (keep DEMO_NETNS in sync with demoNetns in test/e2e/demo.go).
DEMO_DIR=${MACHINEADM_DEMO_DIR:-/var/tmp/machineadm-demo}
DEMO_NETNS=machineadm-demo
DEMO_NETNS_PATH=/run/netns/$DEMO_NETNS

# kube_ldflags VERSION: the -ldflags that stamp a binary built from
# k8s.io/kubernetes with VERSION, as Kubernetes' own build does, and strip it.
kube_ldflags() {
  local v=$1 f="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$(echo "${v#v}" | cut -d. -f1)"
    f+=" -X $pkg.gitMinor=$(echo "${v#v}" | cut -d. -f2)"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}
# KUBE_LDFLAGS stamp a binary built from k8s.io/kubernetes (the e2e
# components, the benchmark's kubeadm) with KUBERNETES_VERSION.
KUBE_LDFLAGS=$(kube_ldflags "$KUBERNETES_VERSION")
# The previous minor's components (module hack/e2e/tools/kube136) that
# TestUpgrade bootstraps a cluster with before upgrading it to
# KUBERNETES_VERSION. Cached apart from the current ones, in
# $KUBE_PREV_DIR/bin with its own stamps and images.
KUBE_PREV_VERSION=${KUBE_PREV_VERSION:-v1.36.3}
KUBE_PREV_DIR=$CACHE/kube-$KUBE_PREV_VERSION
