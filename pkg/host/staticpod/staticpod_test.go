package staticpod

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: fwd}\nspec:\n  containers:\n  - {name: c, image: \"r/i:1\"} # keep\n"

func TestManifestsByteExact(t *testing.T) {
	m, err := Manifests([]machineadm.StaticPod{{Name: "fwd", Manifest: pod}}, DefaultDir)
	if err != nil || len(m) != 1 || m[0].Path != "/etc/kubernetes/manifests/fwd.yaml" || string(m[0].Content) != pod {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestManifestsRefuseNonPods(t *testing.T) {
	_, err := Manifests([]machineadm.StaticPod{{Name: "ok", Manifest: pod}, {Name: "bad", Manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n"}}, DefaultDir)
	if err == nil || !strings.Contains(err.Error(), "spec.host.staticPods[1].manifest") {
		t.Errorf("error = %v", err)
	}
}

func TestDirFromKubeletConfig(t *testing.T) {
	if d := Dir(&machineadm.Kubelet{Config: map[string]any{"staticPodPath": "/etc/kubelet.d/"}}); d != "/etc/kubelet.d" {
		t.Errorf("Dir = %q", d)
	}
	if d := Dir(&machineadm.Kubelet{}); d != DefaultDir {
		t.Errorf("Dir = %q", d)
	}
}
