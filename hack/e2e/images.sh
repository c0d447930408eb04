#!/usr/bin/env bash
# Builds, cached in $CACHE/images, the container images the e2e machines
# import instead of pulling, as docker-archive tarballs (e2e-images):
#   - kube-apiserver, kube-controller-manager, kube-scheduler, etcd, pause
#     CoreDNS, the scenarios' netcheck probe and Cluster API's core manager
#     (cluster-api-controller, for TestClusterAPI's management cluster):
#     one static binary on an empty base;
#   - kube-proxy: the binary over a layer with the iptables and conntrack
#     commands, their xtables extensions and shared libraries, staged from
#     the Debian packages of the e2e root filesystem (rootfs.sh). This is
#     the equivalent of upstream's distroless-iptables base image
#     (kubernetes/release images/build/distroless-iptables), which copies
#     the same Debian binaries and their library dependencies onto a
#     distroless base. The plain names (iptables, iptables-restore, ...)
#     point at the nft backend, Debian's default alternative and what the
#     machines' own iptables use, so kube-proxy and the CNI portmap plugin
#     write to the same tables.
# Needs the binaries of components.sh and the root filesystem of rootfs.sh;
# run by prepare.sh after both. Each image has a stamp file; a matching
# stamp skips its build.
source "$(dirname "$0")/lib.sh"

BIN=$CACHE/bin
IMAGES=$CACHE/images
# The image builder, also for the previous minor's images (whose BIN is
# another directory).
E2E_IMAGES=$CACHE/bin/e2e-images
BASE=$CACHE/rootfs/base
mkdir -p "$IMAGES"

# image REF BINARY[:ENTRYPOINT] [BASE_TREE]: builds one image tarball
# unless current.
image() {
  local ref=$1 src=$2 tree=${3:-} bin=${2%%:*} name
  name=$(basename "${ref%:*}")
  local stamp="$ref $src $(sha256sum "$BIN/$bin" | cut -c1-16) $(sha256sum "$E2E_IMAGES" | cut -c1-16)"
  local args=()
  if [ -n "$tree" ]; then
    stamp+=" $(cat "$tree/.stamp")"
    args=(-base "$tree")
  fi
  if [ -f "$IMAGES/$name.tar" ] && stamp_ok "$IMAGES/.$name.stamp" "$stamp"; then
    log "image $ref: cached"
    return 0
  fi
  "$E2E_IMAGES" -out "$IMAGES" "${args[@]}" "$ref=$BIN/$src" >/dev/null
  echo "$stamp" >"$IMAGES/.$name.stamp"
  log "image $ref: built"
}

# stage_iptables DEST: the user space kube-proxy's iptables mode runs
# (iptables, ip6tables and their -save/-restore, conntrack), taken from the
# root filesystem with every shared library they and their dlopen()ed
# xtables extensions need. The stamp names the root filesystem it came from.
IPTABLES_STAMP="$(cat "$BASE/.machineadm-e2e-stamp") iptables-v1"
stage_iptables() {
  local dest=$1 tmp=$1.tmp
  if [ -d "$dest" ] && stamp_ok "$dest/.stamp" "$IPTABLES_STAMP"; then
    return 0
  fi
  rm -rf "$tmp"
  mkdir -p "$(dirname "$dest")" "$tmp/usr/sbin" "$tmp/usr/bin" "$tmp/usr/lib64" "$tmp/etc" "$tmp/run" "$tmp/var/run"
  # Debian bookworm is merged-/usr: the loader's /lib and /lib64 paths are
  # these symbolic links, as in the root filesystem.
  for d in bin lib lib64 sbin; do ln -s "usr/$d" "$tmp/$d"; done
  local ext
  ext=$(cd "$BASE" && echo usr/lib/*-linux-gnu/xtables)
  [ -d "$BASE/$ext" ] || { log "images: no xtables extensions in $BASE"; exit 1; }
  ext=/$ext
  local bins=(/usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack)
  for b in "${bins[@]}"; do cp -a "$BASE$b" "$tmp$b"; done
  mkdir -p "$tmp$ext"
  cp -a "$BASE$ext/." "$tmp$ext/"
  # Every library the binaries and extensions load, by the path the loader
  # looks for (dereferenced into the canonical /usr directory).
  local libs
  libs=$(chroot "$BASE" sh -c "ldd ${bins[*]} $ext/*.so" | awk '/=>/ {print $3} /^\t\/lib/ {print $1}' | sort -u)
  for l in $libs; do
    local dir
    dir=$(chroot "$BASE" readlink -f "$(dirname "$l")")
    mkdir -p "$tmp$dir"
    cp -L "$BASE$dir/$(basename "$l")" "$tmp$dir/"
  done
  for t in iptables ip6tables; do
    for s in "" -save -restore; do
      ln -s xtables-nft-multi "$tmp/usr/sbin/$t$s"
      ln -s xtables-nft-multi "$tmp/usr/sbin/$t-nft$s"
      ln -s xtables-legacy-multi "$tmp/usr/sbin/$t-legacy$s"
    done
  done
  # Protocol, service and ethertype names iptables resolves in rules.
  for f in protocols services ethertypes; do cp -L "$BASE/etc/$f" "$tmp/etc/$f"; done
  # Prove the staged tree works on its own before it becomes a layer.
  chroot "$tmp" /usr/sbin/iptables --version >/dev/null &&
    chroot "$tmp" /usr/sbin/iptables-restore --help >/dev/null 2>&1 &&
    chroot "$tmp" /usr/sbin/conntrack --version >/dev/null ||
    { log "images: the staged iptables tree does not run"; exit 1; }
  echo "$IPTABLES_STAMP" >"$tmp/.stamp"
  rm -rf "$dest"
  mv "$tmp" "$dest"
}

for c in kube-apiserver kube-controller-manager kube-scheduler; do
  image "$IMAGE_REPOSITORY/$c:$KUBERNETES_VERSION" "$c"
done
image "$IMAGE_REPOSITORY/etcd:$ETCD_IMAGE_TAG" etcd
image "$IMAGE_REPOSITORY/pause:$PAUSE_IMAGE_TAG" pause:/pause
# kubeadm's CoreDNS Deployment runs the image's entrypoint with
# "-conf /etc/coredns/Corefile".
image "$IMAGE_REPOSITORY/coredns:$COREDNS_VERSION" coredns:/coredns
# The scenarios' network probe (hack/e2e/tools/cmd/netcheck).
image "$IMAGE_REPOSITORY/netcheck:v1" netcheck:/netcheck
# Cluster API's core manager, at /manager as its Deployment runs it
# (core/config/manager), under the name of Cluster API's own image.
CAPI_VERSION=$(cd "$REPO_ROOT/hack/e2e/tools/capi" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)
image "$IMAGE_REPOSITORY/cluster-api-controller:$CAPI_VERSION" capi-manager:/manager
stage_iptables "$CACHE/stage/iptables-root"
# kubeadm's kube-proxy DaemonSet runs /usr/local/bin/kube-proxy.
image "$IMAGE_REPOSITORY/kube-proxy:$KUBERNETES_VERSION" kube-proxy "$CACHE/stage/iptables-root"
# The previous minor's control-plane and kube-proxy images (TestUpgrade
# bootstraps with them), from $KUBE_PREV_DIR/bin into $KUBE_PREV_DIR/images:
# their file names are the current ones', so they live apart.
prev_images() {
  local BIN=$KUBE_PREV_DIR/bin IMAGES=$KUBE_PREV_DIR/images c
  mkdir -p "$IMAGES"
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    image "$IMAGE_REPOSITORY/$c:$KUBE_PREV_VERSION" "$c"
  done
  image "$IMAGE_REPOSITORY/kube-proxy:$KUBE_PREV_VERSION" kube-proxy "$CACHE/stage/iptables-root"
}
if [ "${MACHINEADM_E2E_CORE:-}" != 1 ]; then
  prev_images
fi
