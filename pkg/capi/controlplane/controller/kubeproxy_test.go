package controller

import (
	"errors"
	"testing"
)

// TestKubeProxyImage: the tag becomes the version's (a "+" turned into
// "_", as kubeadm tags its images), the repository and name stay as
// written (a registry port, a short name); a digest or an invalid
// reference is refused with errKubeProxyImage, not retagged.
func TestKubeProxyImage(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		image, version, want string
	}{
		{"registry.k8s.io/kube-proxy:v1.36.3", "v1.37.2", "registry.k8s.io/kube-proxy:v1.37.2"},
		{"registry.k8s.io/kube-proxy:v1.37.2", "v1.37.2", "registry.k8s.io/kube-proxy:v1.37.2"},
		{"localhost:5000/k8s/kube-proxy:v1.36.3", "v1.37.2", "localhost:5000/k8s/kube-proxy:v1.37.2"},
		{"kube-proxy:v1", "v1.37.2", "kube-proxy:v1.37.2"},
		{"registry.example/kube-proxy", "v1.37.2", "registry.example/kube-proxy:v1.37.2"},
		{"registry.example/kube-proxy:v1.36.3", "v1.37.2+vendor.1", "registry.example/kube-proxy:v1.37.2_vendor.1"},
		{"registry.k8s.io/kube-proxy:v1.38.0", "v1.37.2", "registry.k8s.io/kube-proxy:v1.37.2"},
	} {
		got, err := kubeProxyImage(tc.image, tc.version)
		if err != nil || got != tc.want {
			t.Errorf("kubeProxyImage(%q, %q) = %q, %v; want %q", tc.image, tc.version, got, err, tc.want)
		}
	}
	for _, image := range []string{
		"registry.k8s.io/kube-proxy@" + digest,
		"registry.k8s.io/kube-proxy:v1.36.3@" + digest,
		"Registry/Kube-Proxy:v1",
		"",
	} {
		got, err := kubeProxyImage(image, "v1.37.2")
		if !errors.Is(err, errKubeProxyImage) {
			t.Errorf("kubeProxyImage(%q) = %q, %v; want an errKubeProxyImage", image, got, err)
		}
	}
}
