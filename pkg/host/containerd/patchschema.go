package containerd

import (
	"fmt"
	"slices"
)

// criServerKeys are the keys of plugins."io.containerd.grpc.v1.cri" that
// containerd 2.x (config version 3) still reads there: its CRI server
// settings. Everything else that version 2 kept under that plugin moved
// to io.containerd.cri.v1.runtime or io.containerd.cri.v1.images.
var criServerKeys = []string{"disable_tcp_service", "stream_server_address", "stream_server_port", "stream_idle_timeout", "enable_tls_streaming", "x509_key_pair_streaming"}

// criImageKeys are the version-2 keys of plugins."io.containerd.grpc.v1.cri"
// whose version-3 home is plugins."io.containerd.cri.v1.images"; the
// others (containerd, cni, enable_selinux, …) went to
// plugins."io.containerd.cri.v1.runtime".
var criImageKeys = []string{"registry", "image_decryption", "max_concurrent_downloads", "image_pull_progress_timeout", "image_pull_with_sync_fs", "stats_collect_period", "disable_snapshot_annotations", "discard_unpacked_layers"}

// removedInV3 are plugins containerd 2.x no longer has.
var removedInV3 = []string{"io.containerd.runtime.v1.linux", "io.containerd.snapshotter.v1.aufs"}

// checkPatchSchema refuses, in the configPatch tree patch for config
// version, a plugin key of the other schema version: containerd reads
// neither the other version's plugin IDs nor a moved key, and says
// nothing, so the patch would be written and silently do nothing. In
// version 3 these are the version-2 keys under
// plugins."io.containerd.grpc.v1.cri" (all but criServerKeys) and the
// plugins containerd 2 removed; in version 2 the version-3 plugins
// io.containerd.cri.v1.runtime and io.containerd.cri.v1.images. The
// error (*PatchError with Schema set) names the key and where it belongs.
func checkPatchSchema(patch map[string]any, version int) error {
	plugins, _ := patch["plugins"].(map[string]any)
	if plugins == nil {
		return nil
	}
	refuse := func(path []string, msg string) error {
		return &PatchError{Key: dotted(path), Msg: msg, Schema: true}
	}
	switch version {
	case 3:
		for _, id := range removedInV3 {
			if _, ok := plugins[id]; ok {
				return refuse([]string{"plugins", id}, "is a plugin of containerd 1.x (config version 2) that containerd 2.x (config version 3) no longer has; containerd would ignore it")
			}
		}
		cri, _ := plugins[schemas[2].runtime].(map[string]any)
		for _, k := range sortedKeys(cri) {
			if slices.Contains(criServerKeys, k) {
				continue
			}
			to := []string{"plugins", schemas[3].runtime, k}
			switch {
			case k == "sandbox_image":
				to = []string{"plugins", schemas[3].images, "pinned_images", "sandbox"}
			case slices.Contains(criImageKeys, k):
				to = []string{"plugins", schemas[3].images, k}
			}
			return refuse([]string{"plugins", schemas[2].runtime, k}, fmt.Sprintf("is a config version 2 key (containerd 1.x); in config version 3 (containerd 2.x) it is %s, and containerd would ignore it here", dotted(to)))
		}
	case 2:
		for _, id := range []string{schemas[3].runtime, schemas[3].images} {
			if _, ok := plugins[id]; ok {
				return refuse([]string{"plugins", id}, fmt.Sprintf("is a config version 3 plugin (containerd 2.x); in config version 2 (containerd 1.x) its keys are under %s, and containerd would ignore it here", dotted([]string{"plugins", schemas[2].runtime})))
			}
		}
	}
	return nil
}

// sortedKeys returns m's keys in order (nil m: none).
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
