package phases

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/spec"
)

// TestCertsLeafRepairGate: before a certs leaf runs, a key an interrupted
// run left without its certificate is removed — a leaf certificate's key
// always, a CA key only when the run resumes in the leaf that writes it
// and the key was not delivered in spec.controlPlane.pki.dir.
func TestCertsLeafRepairGate(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "control-plane-init.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		resumed   bool // the state says an unfinished run stopped in certs/front-proxy-ca
		delivered bool // pki.dir holds front-proxy-ca.key
		wantCA    bool // front-proxy-ca.key removed
	}{
		{"resumed in the CA's leaf", true, false, true},
		{"first run", false, false, false},
		{"resumed, CA key delivered", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := spec.Load(data, "control-plane-init.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg := l.Config
			d := testData(t)
			d.Config, d.Root = cfg, t.TempDir()
			deliverSecrets(t, d.Root, cfg)
			pki := filepath.Join(d.Root, cfg.Spec.ControlPlane.PKI.CertificatesDir)
			writeFile := func(p, content string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.delivered {
				cfg.Spec.ControlPlane.PKI.Dir = "/etc/machineadm/pki"
				src := filepath.Join(d.Root, "etc/machineadm/pki")
				for _, f := range []string{"ca.crt", "ca.key", "front-proxy-ca.key"} {
					writeFile(filepath.Join(src, f), "delivered "+f)
					writeFile(filepath.Join(pki, f), "delivered "+f)
				}
			}
			writeFile(filepath.Join(pki, "front-proxy-ca.key"), map[bool]string{true: "delivered front-proxy-ca.key", false: "lone key"}[tc.delivered])
			writeFile(filepath.Join(pki, "apiserver.key"), "lone key")
			w := &Workflow{State: true, Phases: KubeadmPhases(cfg)}
			if tc.resumed {
				st := &state{SpecDigest: d.SpecDigest, Completed: []string{"preflight", "certs/ca", "certs/apiserver", "certs/apiserver-kubelet-client"}}
				if err := writeState(filepath.Join(d.WorkDir, stateFile), st, false); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(pki, "apiserver.key")); err != nil {
					t.Fatal(err)
				}
			}
			d.RunKubeadm = func(ctx context.Context, r *run.Runner, p run.Phase) error { return nil }
			obs := &resultObs{results: map[string]Result{}}
			if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = os.Stat(filepath.Join(pki, "front-proxy-ca.key"))
			if removed := os.IsNotExist(err); removed != tc.wantCA {
				t.Errorf("front-proxy-ca.key removed: %v, want %v", removed, tc.wantCA)
			}
			if !tc.resumed {
				if _, err := os.Stat(filepath.Join(pki, "apiserver.key")); !os.IsNotExist(err) {
					t.Errorf("the lone apiserver.key was kept: %v", err)
				}
				if res := obs.results["certs/apiserver"]; !slices.ContainsFunc(res.Changes, func(c string) bool {
					return strings.HasPrefix(c, "removed /etc/kubernetes/pki/apiserver.key: left incomplete")
				}) {
					t.Errorf("certs/apiserver result %+v does not say what it removed", res)
				}
			}
			if tc.wantCA && !slices.ContainsFunc(obs.results["certs/front-proxy-ca"].Changes, func(c string) bool {
				return strings.HasPrefix(c, "removed /etc/kubernetes/pki/front-proxy-ca.key")
			}) {
				t.Errorf("certs/front-proxy-ca result %+v", obs.results["certs/front-proxy-ca"])
			}
		})
	}
}
