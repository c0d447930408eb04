//go:build !windows

// envtest cannot build for Windows: controller-runtime v0.25.2's
// pkg/internal/testing/process declares signalProcess twice there.

package phases

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	"github.com/machineadm/machineadm/internal/testassets"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/kubeadm/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// The test below runs against a real kube-apiserver and etcd,
// envtest-style (testassets.Dir: $KUBEBUILDER_ASSETS or the e2e cache's
// bin). Without them it skips, unless MACHINEADM_REQUIRE_ENVTEST=1, where
// it fails.

// writeAdminConf writes cfg's credential as root's
// /etc/kubernetes/admin.conf.
func writeAdminConf(t *testing.T, cfg *rest.Config, root string) {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	c.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	c.CurrentContext = "envtest"
	p := filepath.Join(root, "etc/kubernetes/admin.conf")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*c, p); err != nil {
		t.Fatal(err)
	}
}

// storedClusterConfiguration is the cluster's kubeadm configuration as
// kubeadm stored it before this run: an older Kubernetes version than
// the spec's (what kubeadm's upload-config keeps), none of the spec's
// component settings.
const storedClusterConfiguration = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.0
clusterName: demo
controlPlaneEndpoint: cp.demo.example:6443
certificatesDir: /etc/kubernetes/pki
networking:
  podSubnet: 10.244.0.0/16
`

// TestSystemdUpgradeStoresSettingsInKubeadmConfig: on the first control
// plane of the Systemd runtime, replacing a unit stores the spec's
// in-place settings in the kubeadm-config ConfigMap as the static pods'
// upgrader does, keeping the Kubernetes version stored there; a rerun
// with nothing to change writes nothing; a rerun after a crash between
// the unit and the ConfigMap (the unit as the spec asks, the ConfigMap
// not) stores them; and kubeadm's upload-config phase after the units (a
// version upgrade) stores the new version with the settings, not the
// configuration its upgrade data read before the units. A dry run says
// what it would store and stores nothing.
func TestSystemdUpgradeStoresSettingsInKubeadmConfig(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	rc := testassets.StartEnvtest(t)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	kubeadmtest.SeedCluster(t, cs, storedClusterConfiguration)
	kubeadmConfig := func() *corev1.ConfigMap {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	resetKubeadmConfig := func() {
		t.Helper()
		cm := kubeadmConfig()
		cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey] = storedClusterConfiguration
		if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// stored returns the stored Kubernetes version and the scheduler's and
	// API server's extra arguments ("name=value"), as kubeadm reads them.
	stored := func() (string, []string, []string) {
		t.Helper()
		cfg, err := configutil.FetchInitConfigurationFromCluster(cs, nil, "test", false, false, false, false)
		if err != nil {
			t.Fatal(err)
		}
		var sched, api []string
		for _, a := range cfg.Scheduler.ExtraArgs {
			sched = append(sched, a.Name+"="+a.Value)
		}
		for _, a := range cfg.APIServer.ExtraArgs {
			api = append(api, a.Name+"="+a.Value)
		}
		return cfg.KubernetesVersion, sched, api
	}

	l := loadExample(t, "control-plane-systemd.yaml")
	cfg := l.Config
	if !FirstControlPlane(cfg) || !systemdRuntime(cfg) {
		t.Fatal("the example is not a Systemd first control plane")
	}
	root := t.TempDir()
	deliverSecrets(t, root, cfg)
	b := cfg.Spec.ControlPlane.Binaries
	for _, p := range []string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler} {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeAdminConf(t, rc, root)
	old := systemdUnitHealthy
	t.Cleanup(func() { systemdUnitHealthy = old })
	systemdUnitHealthy = func(context.Context, string) error { return nil }
	rec := &service.Recorder{}
	d := testData(t)
	d.Config, d.Root = cfg, root
	d.Host = &host.Env{Root: root, Services: rec}
	d.Upgrade = &UpgradeRun{Plan: &upgrade.Plan{From: "v1.37.0", To: "v1.37.2"}}
	const updated = "kubeadm-config ConfigMap updated"
	// scheduler sets the spec's scheduler setting, as a new run's spec:
	// the run's translation (kept in d.kubeadm) is made again.
	scheduler := func(v string) {
		cfg.Spec.ControlPlane.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "v", Value: v}}
		d.releaseKubeadm()
		d.kubeadm = nil
	}
	replace := func(what string) Result {
		t.Helper()
		r, err := systemdUpgrader{}.UpgradeComponent(ctx, d, upgrade.ComponentScheduler)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return r
	}

	// A changed scheduler setting: the unit and then the ConfigMap.
	scheduler("4")
	r := replace("first run")
	if !r.Changed || !slices.Contains(r.Changes, updated) {
		t.Errorf("first run: %+v, want changed with %q", r, updated)
	}
	if !slices.Contains(rec.Calls, "restart kube-scheduler.service") {
		t.Errorf("the unit was not restarted: %q", rec.Calls)
	}
	v, sched, api := stored()
	if v != "v1.37.0" || !slices.Equal(sched, []string{"v=4"}) || !slices.Contains(api, "audit-log-maxage=30") {
		t.Errorf("kubeadm-config after the first run: version %s, scheduler %q, API server %q; want v1.37.0 kept, v=4, audit-log-maxage=30", v, sched, api)
	}

	// Nothing to change: the ConfigMap is not written again.
	rv := kubeadmConfig().ResourceVersion
	if r := replace("rerun"); r.Changed || slices.Contains(r.Changes, updated) {
		t.Errorf("rerun: %+v", r)
	}
	if got := kubeadmConfig().ResourceVersion; got != rv {
		t.Errorf("a rerun with nothing to change wrote kubeadm-config (resourceVersion %s, then %s)", rv, got)
	}

	// A crash after the unit, before the ConfigMap: the rerun finds the
	// unit as the spec asks and stores the settings.
	resetKubeadmConfig()
	restarts := len(rec.Calls)
	r = replace("rerun after a crash")
	if !slices.Contains(r.Changes, updated) {
		t.Errorf("rerun after a crash: %+v, want %q", r, updated)
	}
	if slices.Contains(rec.Calls[restarts:], "restart kube-scheduler.service") {
		t.Errorf("the unchanged unit was restarted: %q", rec.Calls[restarts:])
	}
	if v, sched, _ := stored(); v != "v1.37.0" || !slices.Equal(sched, []string{"v=4"}) {
		t.Errorf("kubeadm-config after the rerun: version %s, scheduler %q", v, sched)
	}

	// A version upgrade: kubeadm's upgrade data is built before the units
	// (here by its upload-config phase, which stores the target version),
	// the units change with new settings, and upload-config, after them,
	// keeps the settings.
	resetKubeadmConfig()
	if err := runKubeadmUpgrade(ctx, d, "apply", "upload-config/kubeadm"); err != nil {
		t.Fatal(err)
	}
	if v, sched, _ := stored(); v != "v1.37.2" || len(sched) != 0 {
		t.Fatalf("kubeadm's upload-config stored version %s, scheduler %q; want v1.37.2 and the old settings", v, sched)
	}
	scheduler("6")
	restarts = len(rec.Calls)
	if r := replace("version upgrade"); !slices.Contains(r.Changes, updated) {
		t.Errorf("version upgrade: %+v, want %q", r, updated)
	}
	if !slices.Contains(rec.Calls[restarts:], "restart kube-scheduler.service") {
		t.Errorf("version upgrade: the unit was not restarted with the new setting: %q", rec.Calls[restarts:])
	}
	if err := runKubeadmUpgrade(ctx, d, "apply", "upload-config/kubeadm"); err != nil {
		t.Fatal(err)
	}
	if v, sched, _ := stored(); v != "v1.37.2" || !slices.Equal(sched, []string{"v=6"}) {
		t.Errorf("after kubeadm's upload-config: version %s, scheduler %q; want v1.37.2 and v=6", v, sched)
	}

	// A setting the spec no longer has: the unit drops the flag and the
	// ConfigMap drops it too (the spec's arguments replace the stored
	// ones, they are not merged), the version kept.
	cfg.Spec.ControlPlane.Scheduler.ExtraArgs = nil
	d.releaseKubeadm()
	d.kubeadm = nil
	if r := replace("setting removed"); !slices.Contains(r.Changes, updated) {
		t.Errorf("setting removed: %+v, want %q", r, updated)
	}
	if v, sched, _ := stored(); v != "v1.37.2" || len(sched) != 0 {
		t.Errorf("kubeadm-config after the setting was removed: version %s, scheduler %q; want v1.37.2 and none", v, sched)
	}

	// A dry run says what it would store and changes nothing.
	scheduler("7")
	rv, calls := kubeadmConfig().ResourceVersion, len(rec.Calls)
	d.DryRun = true
	r, err = systemdUpgrader{}.UpgradeComponent(ctx, d, upgrade.ComponentScheduler)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !slices.ContainsFunc(r.Changes, func(l string) bool {
		return strings.Contains(l, "would store") && strings.Contains(l, "kubeadm-config")
	}) {
		t.Errorf("dry run: %q does not say what it would store", r.Changes)
	}
	if got := kubeadmConfig().ResourceVersion; got != rv || len(rec.Calls) != calls {
		t.Errorf("the dry run wrote kubeadm-config (resourceVersion %s, then %s) or touched a unit (%q)", rv, got, rec.Calls[calls:])
	}
}
