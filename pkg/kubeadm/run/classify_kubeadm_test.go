package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeadmupgrade "k8s.io/kubernetes/cmd/kubeadm/app/phases/upgrade"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// etcdWaiter is kubeadm's wait for static pods, where the new etcd
// static pod never replaces the old one.
type etcdWaiter struct{ apiclient.Waiter }

func (etcdWaiter) WaitForStaticPodControlPlaneHashes(string) (map[string]string, error) {
	return map[string]string{}, nil
}

func (etcdWaiter) WaitForStaticPodSingleHash(string, string) (string, error) { return "old", nil }

func (etcdWaiter) WaitForStaticPodHashChange(node, component, _ string) error {
	return fmt.Errorf("static Pod hash for component %s on Node %s did not change after 5m0s: %w", component, node, context.DeadlineExceeded)
}

// healthyEtcd is the old etcd member, healthy before and after.
type healthyEtcd struct{ etcdutil.ClusterInterrogator }

func (healthyEtcd) CheckClusterHealth() error { return nil }

func (healthyEtcd) WaitForClusterAvailable(int, time.Duration) (bool, error) { return true, nil }

// TestClassifyKubeadmsRollbacks runs kubeadm's control-plane upgrade
// (StaticPodControlPlane) in a temporary /etc/kubernetes whose new static
// pods do not come up: kubeadm rolls back and reports it in its own
// words. With etcd's upgrade, the failure is etcd's (EtcdUnhealthy, a
// hint naming etcd's backup), not the other static pods' rollback;
// without, kube-apiserver's is the control-plane phase's failure, with
// its hint, not the wait's Timeout.
func TestClassifyKubeadmsRollbacks(t *testing.T) {
	const hint = "the control-plane phase's own hint"
	p := Phase{Name: "control-plane", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}
	if c, h := Classify(p, kubeadmRollback(t, true), nil); c != errclass.EtcdUnhealthy || !strings.Contains(h, "kubeadm-backup-etcd-") {
		t.Errorf("etcd's rollback: class %s, hint %q; want %s with a hint naming etcd's backup", c, h, errclass.EtcdUnhealthy)
	}
	if c, h := Classify(p, kubeadmRollback(t, false), nil); c != errclass.ControlPlaneUnhealthy || h != hint {
		t.Errorf("kube-apiserver's rollback: class %s, hint %q; want %s with the phase's hint", c, h, errclass.ControlPlaneUnhealthy)
	}
}

// kubeadmRollback is kubeadm's error, as the upgrade runner wraps it, when
// the first static pod it replaces (etcd with etcdUpgrade, else
// kube-apiserver) does not come up.
func kubeadmRollback(t *testing.T, etcdUpgrade bool) error {
	k8sDir := t.TempDir()
	manifests := filepath.Join(k8sDir, kubeadmconstants.ManifestsSubDirName)
	if err := os.MkdirAll(manifests, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]string{kubeadmconstants.Etcd}, kubeadmconstants.ControlPlaneComponents...) {
		pod := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: kube-system\nspec:\n  containers:\n  - name: %s\n    image: registry.k8s.io/%s:3.5.0-0\n", c, c, c)
		if err := os.WriteFile(filepath.Join(manifests, c+".yaml"), []byte(pod), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := configutil.DefaultedStaticInitConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	cfg.KubernetesVersion = "v1.37.2"
	cfg.NodeRegistration.Name = "cp1"
	cfg.LocalAPIEndpoint.AdvertiseAddress = "10.0.0.10"
	cfg.CertificatesDir = filepath.Join(k8sDir, "pki")
	cfg.Etcd.Local.DataDir = filepath.Join(t.TempDir(), "etcd")
	if err := os.MkdirAll(cfg.Etcd.Local.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	pm, err := kubeadmupgrade.NewKubeStaticPodPathManagerUsingTempDirs(k8sDir, "", true, true)
	if err != nil {
		t.Fatal(err)
	}
	err = kubeadmupgrade.StaticPodControlPlane(nil, etcdWaiter{}, pm, cfg, etcdUpgrade, false, healthyEtcd{}, nil)
	want := "component kube-apiserver"
	if etcdUpgrade {
		want = "component etcd"
	}
	if err == nil || !strings.Contains(err.Error(), "kubeadm has tried to recover everything") || !strings.Contains(err.Error(), want) {
		t.Fatalf("kubeadm's control-plane upgrade: %v, want the rollback of %s", err, want)
	}
	return fmt.Errorf("kubeadm upgrade apply phase control-plane: %w", err)
}
