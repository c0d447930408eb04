package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	apiversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
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

// kubeadmVersion is kubeadm's version getter with kubeadm's own version
// set (a test binary has none: its ldflags do not set it).
type kubeadmVersion struct{ kubeadmupgrade.VersionGetter }

func (kubeadmVersion) KubeadmVersion() (string, *version.Version, error) {
	return "v1.37.2", version.MustParseSemantic("v1.37.2"), nil
}

// TestClassifyKubeadmsQuotesOfTheCluster: what kubeadm quotes of the
// cluster without an API server's words before it picks neither the
// class nor the hint of an upgrade phase: a Node's kubelet version that
// kubeadm's version skew policy could not parse (a node's kubelet writes
// it), and a kubelet-config ConfigMap that kubeadm could not decode,
// whose YAML error quotes a map key. A timeout of kubeadm's read of
// that ConfigMap is still a Timeout.
func TestClassifyKubeadmsQuotesOfTheCluster(t *testing.T) {
	const etcdWords = "etcdserver: leader changed"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: etcdWords}}}
	client := fake.NewClientset(node)
	client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &apiversion.Info{GitVersion: "v1.36.2"}
	skew := kubeadmupgrade.EnforceVersionPolicies(kubeadmVersion{kubeadmupgrade.NewKubeVersionGetter(client)}, "v1.37.2", version.MustParseSemantic("v1.37.2"), false, false)
	if skew == nil || len(skew.Skippable) == 0 || !strings.Contains(skew.Skippable[len(skew.Skippable)-1].Error(), etcdWords) {
		t.Fatalf("kubeadm's version skew policy: %+v; want the kubelet version it could not parse", skew)
	}
	var list string
	for _, e := range skew.Skippable {
		list += fmt.Sprintf("\t- %s\n", e) // apply/preflight.go formatErrorMsg
	}
	err := fmt.Errorf("kubeadm upgrade apply phase preflight: error execution phase preflight: the version argument is invalid due to these errors:\n\n%v\nCan be bypassed if you pass the --force flag", list)
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	if c, h := Classify(p, err, nil); c != errclass.PreflightFailed || h != p.Hint {
		t.Errorf("%v: class %s, hint %q; want %s with the phase's hint", err, c, h, errclass.PreflightFailed)
	}

	kubeadmConfig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kubeadmconstants.KubeadmConfigConfigMap, Namespace: metav1.NamespaceSystem},
		Data: map[string]string{kubeadmconstants.ClusterConfigurationConfigMapKey: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.2\n"}}
	kubeletConfig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kubeadmconstants.KubeletBaseConfigurationConfigMap, Namespace: metav1.NamespaceSystem},
		Data: map[string]string{kubeadmconstants.KubeletBaseConfigurationConfigMapKey: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n? [\"" + etcdWords + "\"]\n: x\n"}}
	_, err = configutil.FetchInitConfigurationFromCluster(fake.NewClientset(kubeadmConfig, kubeletConfig), nil, "upgrade", false, false, true, false)
	if err == nil || !strings.Contains(err.Error(), etcdWords) {
		t.Fatalf("kubeadm's read of the upgrade data: %v; want an error quoting the kubelet-config's key", err)
	}
	err = fmt.Errorf("kubeadm upgrade apply phase preflight: error execution phase preflight: [upgrade] FATAL: %w", err) // apply.go newApplyData
	if c, h := Classify(p, err, nil); c != errclass.PreflightFailed || !strings.Contains(h, "could not build its upgrade data") {
		t.Errorf("%v: class %s, hint %q; want %s with the upgrade data's hint", err, c, h, errclass.PreflightFailed)
	}

	err = errors.New(`kubeadm upgrade apply phase preflight: error execution phase preflight: [upgrade] FATAL: failed to get component configs: Get "https://10.0.0.10:6443/api/v1/namespaces/kube-system/configmaps/kubelet-config?timeout=10s": context deadline exceeded`)
	if c, _ := Classify(p, err, nil); c != errclass.Timeout {
		t.Errorf("%v: class %s; want %s", err, c, errclass.Timeout)
	}
}
