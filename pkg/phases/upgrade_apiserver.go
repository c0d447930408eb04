package phases

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// AnnotationAPIServerConfigDigest is the annotation of the API server's
// regenerated static pod that carries apiServerConfigDigest: the API
// server reads its audit policy and its encryption, authentication and
// authorization configurations when it starts, so a new content of one
// of them (the apiserver-config step rewrote it) must change the manifest
// for the kubelet to restart the API server.
const AnnotationAPIServerConfigDigest = "machineadm.io/apiserver-config-digest"

// apiServerConfigDigest returns "sha256:<hex>" over the path and content
// of every file the typed security settings of cfg have the API server
// read (apiserverconfig.Paths: named by a flag or inside another file,
// each read at hostPath of it: the host's path under the run's root), or ""
// when cfg has none. The digest of a key file is no
// secret: a one-way hash of high-entropy key material.
func apiServerConfigDigest(hostPath func(string) string, cfg *machineadm.MachineBootstrapConfig) (string, error) {
	cp := cfg.Spec.ControlPlane
	if cp == nil || !apiserverconfig.Any(&cp.APIServer) {
		return "", nil
	}
	// Every file the apiserver-config step writes, also those named only
	// inside another file (an authorization webhook's kubeconfig).
	files := slices.Clone(apiserverconfig.Paths(&cp.APIServer))
	slices.Sort(files)
	files = slices.Compact(files)
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(hostPath(f))
		if err != nil {
			return "", errclass.New(errclass.HostPreparationFailed, "the apiserver-config step writes it: run machineadm upgrade again", fmt.Errorf("reading the API server's %s: %w", f, err))
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// componentAnnotations are the annotations the static pod upgrader sets
// on component's regenerated manifest: the API server's configuration
// digest (AnnotationAPIServerConfigDigest); none for the others.
func componentAnnotations(d *Data, component string) (map[string]string, error) {
	if component != upgrade.ComponentAPIServer {
		return nil, nil
	}
	digest, err := apiServerConfigDigest(func(p string) string { return hostPathOrRoot(d, p) }, d.Config)
	if err != nil || digest == "" {
		return nil, err
	}
	return map[string]string{AnnotationAPIServerConfigDigest: digest}, nil
}
