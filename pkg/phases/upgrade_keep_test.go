package phases

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	upgradephases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade"
	"k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// settingsCluster stands in for the cluster's API server on loopback as
// far as kubeadm's upgrade data and machineadm's settings upload use it:
// the kubeadm-config ConfigMap (a POST replaces it), the kubelet-config
// ConfigMap, any Node, a kube-apiserver mirror pod with its endpoint
// annotation, and the RBAC objects the upload ensures.
type settingsCluster struct {
	mu            sync.Mutex
	clusterConfig string
	uploads       int
}

func (c *settingsCluster) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply := func(code int, v any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(v)
		}
		cm := func(name string, data map[string]string) *corev1.ConfigMap {
			return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}, Data: data}
		}
		p := r.URL.Path
		switch {
		case r.Method == http.MethodPost:
			// Created as sent (client-go sends protobuf or JSON).
			body, _ := io.ReadAll(r.Body)
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if got, ok := obj.(*corev1.ConfigMap); ok && got.Name == "kubeadm-config" {
				c.mu.Lock()
				c.clusterConfig, c.uploads = got.Data["ClusterConfiguration"], c.uploads+1
				c.mu.Unlock()
			}
			reply(http.StatusCreated, obj)
		case p == "/api/v1/namespaces/kube-system/configmaps/kubeadm-config":
			c.mu.Lock()
			doc := c.clusterConfig
			c.mu.Unlock()
			reply(http.StatusOK, cm("kubeadm-config", map[string]string{"ClusterConfiguration": doc}))
		case p == "/api/v1/namespaces/kube-system/configmaps/kubelet-config":
			reply(http.StatusOK, cm("kubelet-config", map[string]string{"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"}))
		case p == "/api/v1/namespaces/kube-system/pods":
			reply(http.StatusOK, &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: "kube-system",
					Annotations: map[string]string{"kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": "192.0.2.10:6443"}}}}})
		case strings.HasPrefix(p, "/api/v1/nodes/"):
			reply(http.StatusOK, &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: strings.TrimPrefix(p, "/api/v1/nodes/")}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestKubeadmControlPlaneGetsTheUploadedSettings: when settings and
// version change together, the first control plane stores the spec's
// settings in kubeadm-config before kubeadm's control-plane phase; the
// upgrade data the run's kubeadm phases keep was read before that, so
// the control-plane phase must get data read again, with the new
// settings (else it regenerates the control plane with the old ones and
// its upload-config puts them back). Without a settings change the data
// read at the first phase is kept. kubeadm's control-plane phase cannot
// run here: a stand-in phase of the same UpgradeRunner (the Systemd
// runtime's workflow runner, which the loopback API server can feed)
// reports the data it got. Nothing is printed to the process's standard
// output (kubeadm's uploadconfig prints its note there).
func TestKubeadmControlPlaneGetsTheUploadedSettings(t *testing.T) {
	if _, err := os.Stat("/etc/kubernetes/kubelet.conf"); err == nil {
		t.Skip("/etc/kubernetes/kubelet.conf exists: kubeadm would read this node's name from it")
	}
	defer func(old time.Duration) { localHealthTimeout = old }(localHealthTimeout)
	localHealthTimeout = time.Second // the health wait after the phase fails here; not what is tested
	const oldRepo = "old-registry.example/k8s"
	for _, tc := range []struct {
		name     string
		settings bool
	}{
		{name: "settings and version", settings: true},
		{name: "version only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &settingsCluster{}
			srv := c.serve(t)
			d := restartKubeletData(t, srv, "1", "1")
			yaml, err := specInitYAML(d.Config)
			if err != nil {
				t.Fatal(err)
			}
			var doc string
			for _, s := range strings.Split(string(yaml), "\n---\n") {
				if strings.Contains(s, "kind: ClusterConfiguration") {
					doc = s
				}
			}
			const specRepo = "imageRepository: registry.demo.example/k8s"
			if !strings.Contains(doc, specRepo) {
				t.Fatalf("the spec's ClusterConfiguration has no %q:\n%s", specRepo, doc)
			}
			c.clusterConfig = strings.Replace(doc, specRepo, "imageRepository: "+oldRepo, 1)

			cfg, err := day2.UpgradeConfig(day2.UpgradeOptions{KubernetesVersion: "v1.37.2", EtcdUpgrade: true, CertificateRenewal: true})
			if err != nil {
				t.Fatal(err)
			}
			cfgPath := filepath.Join(t.TempDir(), "kubeadm-upgrade.yaml")
			if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			var got []*kubeadmapi.InitConfiguration
			probe := func(c workflow.RunData) error {
				got = append(got, c.(upgradephases.Data).InitCfg())
				return nil
			}
			d.Upgrade.kubeadm = &day2.UpgradeRunner{Verb: "apply", ConfigPath: cfgPath, Local: &day2.LocalControlPlane{
				Endpoint: kubeadmapi.APIEndpoint{AdvertiseAddress: "127.0.0.1", BindPort: 6443}, AdminKubeconfig: adminConf(d),
				Addons: &workflow.Phase{Name: "addon", Phases: []workflow.Phase{{Name: "coredns", Run: probe}, {Name: "kube-proxy", Run: probe}}},
			}}
			// An earlier phase of the run built the data.
			if err := d.Upgrade.kubeadm.Run(context.Background(), "addon/coredns", errclass.ControlPlaneUnhealthy, ""); err != nil {
				t.Fatal(err)
			}
			defer func(old func(context.Context, *Data, string, string) error) { kubeadmUpgrade = old }(kubeadmUpgrade)
			kubeadmUpgrade = func(ctx context.Context, d *Data, verb, name string) error { // stand-in for kubeadm's control-plane phase
				return d.Upgrade.kubeadm.Run(ctx, "addon/kube-proxy", errclass.ControlPlaneUnhealthy, "")
			}
			d.Upgrade.Plan.Steps = []upgrade.Step{{Phase: upgrade.PhaseKubeadm}, {Phase: upgrade.PhaseKubelet}}
			if tc.settings {
				d.Upgrade.Plan.Steps = append(d.Upgrade.Plan.Steps, upgrade.Step{Phase: upgrade.PhaseControlPlane, Components: []string{upgrade.ComponentAPIServer}})
			}
			// kubeadm's notes go to the run's output, not the process's
			// standard output (the console, past the report and the log).
			stdout, err := os.CreateTemp(t.TempDir(), "stdout")
			if err != nil {
				t.Fatal(err)
			}
			processStdout := os.Stdout
			defer func() { os.Stdout = processStdout }()
			os.Stdout = stdout
			err = kubeadmCluster{}.KubeadmPhase(context.Background(), d, "control-plane")
			os.Stdout = processStdout
			if printed, _ := os.ReadFile(stdout.Name()); len(printed) > 0 {
				t.Errorf("the phase printed to the process's standard output:\n%s", printed)
			}
			if len(got) != 2 {
				t.Fatalf("the stand-in control-plane phase did not run (data seen %d times): %v", len(got), err)
			}
			first, cp := got[0], got[1]
			if first.ImageRepository != oldRepo {
				t.Fatalf("the first phase's data has image repository %q, want the cluster's %q", first.ImageRepository, oldRepo)
			}
			if !tc.settings {
				if cp != first || c.uploads != 0 {
					t.Errorf("version only: the control-plane phase got other data (%v) or settings were uploaded (%d); want the kept data", cp != first, c.uploads)
				}
				return
			}
			if c.uploads != 1 {
				t.Fatalf("settings uploaded %d times, want once", c.uploads)
			}
			if cp.ImageRepository != "registry.demo.example/k8s" {
				t.Errorf("kubeadm's control-plane phase got image repository %q, the data read before the settings upload; want the spec's registry.demo.example/k8s", cp.ImageRepository)
			}
		})
	}
}
