//go:build e2e

package e2e

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The machines of the scenarios and their addresses on the harness bridge.
var (
	cp1 = hostsEntry{IP: "10.213.0.11", Name: "cp1"}
	cp2 = hostsEntry{IP: "10.213.0.12", Name: "cp2"}
	cp3 = hostsEntry{IP: "10.213.0.13", Name: "cp3"} // TestCrash's own cluster
	w1  = hostsEntry{IP: "10.213.0.21", Name: "w1"}
	w2  = hostsEntry{IP: "10.213.0.22", Name: "w2"}
	w3  = hostsEntry{IP: "10.213.0.23", Name: "w3"}
	w4  = hostsEntry{IP: "10.213.0.24", Name: "w4"}
	w5  = hostsEntry{IP: "10.213.0.25", Name: "w5"}
	w6  = hostsEntry{IP: "10.213.0.26", Name: "w6"}
	w7  = hostsEntry{IP: "10.213.0.27", Name: "w7"}
	w8  = hostsEntry{IP: "10.213.0.28", Name: "w8"} // joins cp3 (TestCrash)
	w9  = hostsEntry{IP: "10.213.0.29", Name: "w9"} // runs containerd 2.x (scenario 6)
)

func allHosts() []hostsEntry { return []hostsEntry{cp1, cp2, cp3, w1, w2, w3, w4, w5, w6, w7, w8, w9} }

// imagesDir is where the image tarballs appear (read-only) in a machine.
const imagesDir = "/var/lib/machineadm-e2e/images"

// nodeImages are imported on every machine: the sandbox, the kube-proxy
// DaemonSet, CoreDNS (its Deployment may land on any node) and the
// scenarios' network probe. controlPlaneImages are imported on
// control-plane machines besides.
var (
	nodeImages         = []string{"pause", "kube-proxy", "coredns", "netcheck"}
	controlPlaneImages = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"}
)

// installNodeComponents puts into the machine's root filesystem what an OS
// image for Kubernetes nodes ships: the kubelet binary and its systemd unit
// (with kubeadm's drop-in, enabled), the CNI plugins, the preloaded images,
// and (unless withoutAgent: the render stub is to fetch it) machineadm.
func (e *env) installNodeComponents(m *Machine, withoutAgent bool) error {
	copies := map[string]string{
		e.binPath("kubelet"): "/usr/bin/kubelet",
	}
	if !withoutAgent {
		copies[e.machineadm] = "/usr/local/bin/machineadm"
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		copies[e.binPath(p)] = "/opt/cni/bin/" + p
	}
	for src, dst := range copies {
		if err := copyFile(src, filepath.Join(m.Root, dst), 0o755); err != nil {
			return err
		}
	}
	nodeFiles := filepath.Join(e.repo, "hack/e2e/node")
	err := filepath.Walk(nodeFiles, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(nodeFiles, p)
		return copyFile(p, filepath.Join(m.Root, rel), 0o644)
	})
	if err != nil {
		return err
	}
	wants := filepath.Join(m.Root, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		return err
	}
	if err := os.Symlink("/etc/systemd/system/kubelet.service", filepath.Join(wants, "kubelet.service")); err != nil && !os.IsExist(err) {
		return err
	}
	// The images this node preloads, imported at boot by the overlay's
	// machineadm-e2e-import-images.service from the read-only tarballs.
	names := nodeImages
	if m.Name == cp1.Name || m.Name == cp2.Name || m.Name == cp3.Name {
		names = append(slices.Clone(controlPlaneImages), nodeImages...)
		// The KMS v2 plugin of secureAPIServer, up before the API server.
		if err := e.installFakeKMSPlugin(m); err != nil {
			return err
		}
	}
	if err := m.WriteFile("/etc/machineadm-e2e/images.list", []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	m.BindRO = append(m.BindRO, filepath.Join(e.cache, "images")+":"+imagesDir)
	return nil
}

// copyFile copies src to dst (creating parent directories) with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
