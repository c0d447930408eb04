// Package staticpod computes the extra static pod manifests of a
// control-plane node (spec.host.staticPods): each is validated as a v1 Pod
// and placed, byte for byte as given, in the kubelet's static pod
// directory.
package staticpod

import (
	"fmt"
	"path"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
)

// DefaultDir is kubeadm's static pod directory
// (KubeletConfiguration staticPodPath as kubeadm sets it).
const DefaultDir = "/etc/kubernetes/manifests"

// Mode is the permission of the manifests, as kubeadm writes its own.
const Mode = 0o600

// Manifest is one manifest to write.
type Manifest struct {
	// Path is the machine path, DIR/NAME.yaml.
	Path string
	// Content is the manifest as given in the spec.
	Content []byte
}

// Dir returns the static pod directory: the staticPodPath of the spec's
// KubeletConfiguration patch when it sets an absolute one, else
// DefaultDir.
func Dir(k *machineadm.Kubelet) string {
	if p, ok := k.Config["staticPodPath"].(string); ok && path.IsAbs(p) {
		return path.Clean(p)
	}
	return DefaultDir
}

// Manifests validates every pod (validation.DecodePod) and returns the
// files to write. An invalid pod is an error naming its field.
func Manifests(pods []machineadm.StaticPod, dir string) ([]Manifest, error) {
	out := make([]Manifest, 0, len(pods))
	for i, sp := range pods {
		if _, err := validation.DecodePod(sp.Manifest); err != nil {
			return nil, fmt.Errorf("spec.host.staticPods[%d].manifest: %w", i, err)
		}
		out = append(out, Manifest{Path: path.Join(dir, sp.Name+".yaml"), Content: []byte(sp.Manifest)})
	}
	return out, nil
}
