package day2

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"
)

// TestOverlayCarriesTheSpecsVolumes: a cluster bootstrapped without the
// typed API-server security settings, and a spec that adds them (their
// translation adds extra volumes): the regenerated API server mounts the
// new volumes; the controller manager's and scheduler's volumes follow
// the spec too. (Before, Overlay kept the cluster's volumes and the
// regenerated API server could not read its new audit policy.)
func TestOverlayCarriesTheSpecsVolumes(t *testing.T) {
	cluster, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := cluster.DeepCopy()
	spec.APIServer.ExtraVolumes = append(spec.APIServer.ExtraVolumes,
		kubeadmapi.HostPathMount{Name: "machineadm-apiserver-config", HostPath: "/etc/kubernetes/apiserver", MountPath: "/etc/kubernetes/apiserver", ReadOnly: true},
		kubeadmapi.HostPathMount{Name: "machineadm-audit-log", HostPath: "/var/log/kubernetes/audit", MountPath: "/var/log/kubernetes/audit"})
	spec.ControllerManager.ExtraVolumes = []kubeadmapi.HostPathMount{{Name: "cm-extra", HostPath: "/srv/cm", MountPath: "/srv/cm", ReadOnly: true}}
	spec.Scheduler.ExtraVolumes = []kubeadmapi.HostPathMount{{Name: "sched-extra", HostPath: "/srv/sched", MountPath: "/srv/sched", ReadOnly: true}}
	next := Overlay(cluster, spec)
	for component, want := range map[string][]string{
		"kube-apiserver":          {"machineadm-apiserver-config", "machineadm-audit-log", "/var/log/kubernetes/audit"},
		"kube-controller-manager": {"cm-extra"},
		"kube-scheduler":          {"sched-extra"},
	} {
		p, err := Regenerate(t.TempDir(), "", next, component)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		for _, w := range want {
			if !bytes.Contains(got, []byte(w)) {
				t.Errorf("%s's regenerated manifest lacks %s:\n%s", component, w, got)
			}
		}
	}
	if len(cluster.APIServer.ExtraVolumes) != 0 {
		t.Errorf("Overlay changed the cluster's configuration")
	}
}

// TestAnnotateChangesTheManifest: the configuration digest on the pod
// makes a manifest otherwise equal differ (the kubelet restarts the
// component); the same digest again is equal (a rerun restarts nothing).
func TestAnnotateChangesTheManifest(t *testing.T) {
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	gen := func(digest string) string {
		p, err := Regenerate(t.TempDir(), "", cfg, "kube-apiserver")
		if err != nil {
			t.Fatal(err)
		}
		if digest != "" {
			if err := Annotate(p, map[string]string{"machineadm.io/apiserver-config-digest": digest}); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	plain, a1, a1again, a2 := gen(""), gen("sha256:1"), gen("sha256:1"), gen("sha256:2")
	for _, tc := range []struct {
		x, y  string
		equal bool
	}{{plain, a1, false}, {a1, a1again, true}, {a1, a2, false}} {
		eq, _, err := staticpod.ManifestFilesAreEqual(tc.x, tc.y)
		if err != nil || eq != tc.equal {
			t.Errorf("%s vs %s: equal %v (%v), want %v", filepath.Base(filepath.Dir(tc.x)), filepath.Base(filepath.Dir(tc.y)), eq, err, tc.equal)
		}
	}
	pod, err := staticpod.ReadStaticPodFromDisk(a2)
	if err != nil || pod.Annotations["machineadm.io/apiserver-config-digest"] != "sha256:2" || len(pod.Spec.Containers) != 1 {
		t.Fatalf("annotated pod: %+v %v", pod.Annotations, err)
	}
}

// TestSwapRollbackRestoresFilesBeforeTheManifest: a component that does
// not become healthy gets its files restored (Swap.Rollback) while the
// new manifest is still in place, then its previous manifest back; the
// report says so, and a failed restore is in the error.
func TestSwapRollbackRestoresFilesBeforeTheManifest(t *testing.T) {
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	manifests := t.TempDir()
	cur, err := Regenerate(manifests, "", cfg, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(cur)
	next := cfg.DeepCopy()
	next.APIServer.ExtraArgs = append(next.APIServer.ExtraArgs, kubeadmapi.Arg{Name: "request-timeout", Value: "2m"})
	newPath, err := Regenerate(t.TempDir(), "", next, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	for _, failRestore := range []bool{false, true} {
		os.WriteFile(cur, old, 0o600)
		var during []byte
		s := Swap{ManifestDir: manifests, BackupDir: filepath.Join(t.TempDir(), "backup"),
			Wait: func() error { return errors.New("not healthy") },
			Rollback: func() error {
				during, _ = os.ReadFile(cur)
				if failRestore {
					return errors.New("disk full")
				}
				return nil
			}}
		_, lines, err := s.Component("kube-apiserver", newPath)
		after, _ := os.ReadFile(cur)
		if err == nil || !bytes.Equal(after, old) || bytes.Equal(during, old) || during == nil {
			t.Fatalf("rollback: err %v, manifest restored %v, hook ran before it %v", err, bytes.Equal(after, old), during != nil && !bytes.Equal(during, old))
		}
		restored := strings.Contains(strings.Join(lines, "\n"), "restored kube-apiserver's previous configuration files")
		if restored == failRestore || strings.Contains(err.Error(), "disk full") != failRestore {
			t.Errorf("failRestore %v: lines %v, err %v", failRestore, lines, err)
		}
	}
}

// TestAPIServerSettingsDiffer: a control plane whose spec adds encryption
// (a flag and a volume) that the cluster's stored configuration lacks is
// named by the flag and the volume, never by a value; the same settings,
// in another order, are no difference.
func TestAPIServerSettingsDiffer(t *testing.T) {
	cluster, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := cluster.DeepCopy()
	spec.APIServer.ExtraArgs = append(spec.APIServer.ExtraArgs, kubeadmapi.Arg{Name: "encryption-provider-config", Value: "/etc/kubernetes/apiserver/encryption-config.yaml"})
	spec.APIServer.ExtraVolumes = append(spec.APIServer.ExtraVolumes, kubeadmapi.HostPathMount{Name: "machineadm-apiserver-config", HostPath: "/etc/kubernetes/apiserver", MountPath: "/etc/kubernetes/apiserver", ReadOnly: true})
	got := APIServerSettingsDiffer(cluster, spec)
	if want := []string{"--encryption-provider-config", "volume machineadm-apiserver-config"}; !slices.Equal(got, want) {
		t.Errorf("differ %v, want %v", got, want)
	}
	if strings.Contains(strings.Join(got, " "), "/etc/kubernetes") {
		t.Errorf("a value in %v", got)
	}
	if got := APIServerSettingsDiffer(cluster, spec); !slices.Equal(got, APIServerSettingsDiffer(spec, cluster)) {
		t.Errorf("not symmetric: %v", got)
	}
	same := spec.DeepCopy()
	slices.Reverse(same.APIServer.ExtraVolumes)
	if got := APIServerSettingsDiffer(spec, same); len(got) != 0 {
		t.Errorf("the same settings differ in %v", got)
	}
}
