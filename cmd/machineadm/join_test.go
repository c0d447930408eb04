package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/machineadm/machineadm/pkg/cmd"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/report"
)

const (
	testTokenID     = "abcdef"
	testTokenSecret = "0123456789abcdef"
	// wrongHash pins a CA the test server does not have.
	wrongHash = "sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"
)

// clusterInfoServer is a local TLS server that answers kubeadm's discovery
// request with a cluster-info ConfigMap signed (JWS) with the test token,
// as a real API server does for a valid token.
func clusterInfoServer(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/kube-public/configmaps/cluster-info" {
			http.NotFound(w, r)
			return
		}
		kc := clientcmdapi.NewConfig()
		kc.Clusters[""] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: certPEM(srv.TLS)}
		kcData, err := clientcmd.Write(*kc)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		sig, err := jws.ComputeDetachedSignature(string(kcData), testTokenID, testTokenSecret)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		cm := corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public"},
			Data:       map[string]string{"kubeconfig": string(kcData), "jws-kubeconfig-" + testTokenID: sig},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cm)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func certPEM(c *tls.Config) []byte {
	var b []byte
	for _, der := range c.Certificates[0].Certificate {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return b
}

// joinSpec is a worker join to endpoint whose token is the test token
// and whose node name resolves locally (kubeadm's Hostname check looks it
// up). Preflight errors of this non-node machine are warnings.
func joinSpec(t *testing.T, endpoint, hash, timeout string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "join.yaml")
	s := fmt.Sprintf(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
metadata: {name: fault-test}
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: %q
    token: {value: %s.%s}
    caCertHashes: [%q]
    timeout: %s
  node:
    name: localhost
    ignorePreflightErrors: [all]
`, endpoint, testTokenID, testTokenSecret, hash, timeout)
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runJoin runs a real (not dry-run) bootstrap in this process with host
// preparation skipped, machineadm's state and report in temp dirs, and
// returns its output, exit code and report.
func runJoin(t *testing.T, specPath string) (string, int, *report.BootstrapReport) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kubeadm's join preflight needs root")
	}
	root, work := t.TempDir(), t.TempDir()
	var out bytes.Buffer
	code := cmd.Execute([]string{"bootstrap", "-f", specPath, "--report-root", root, "--work-dir", work,
		"--skip-phases", "host-check,files,kernel-modules,sysctl,containerd,static-pods"}, nil, &out, &out)
	data, err := os.ReadFile(filepath.Join(root, "var/lib/machineadm/report.json"))
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out.String())
	}
	rep, err := report.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), testTokenSecret) || bytes.Contains(data, []byte(testTokenSecret)) {
		t.Error("the bootstrap token appears in the output or the report")
	}
	return out.String(), code, rep
}

// TestJoinWrongCACertHash: a real discovery against a local API-server
// stand-in that serves a correctly signed cluster-info, pinned to another
// CA → exit 1, class DiscoveryFailed, failed phase wait-cluster-info
// (machineadm's discovery wait, which verifies the pin as kubeadm's
// preflight would, before kubeadm runs).
func TestJoinWrongCACertHash(t *testing.T) {
	srv := clusterInfoServer(t)
	out, code, rep := runJoin(t, joinSpec(t, strings.TrimPrefix(srv.URL, "https://"), wrongHash, "20s"))
	if code != 1 || rep.ErrorClass != errclass.DiscoveryFailed || rep.FailedPhase != "wait-cluster-info" {
		t.Fatalf("exit %d, class %s, phase %s; want 1 DiscoveryFailed wait-cluster-info\n%s", code, rep.ErrorClass, rep.FailedPhase, out)
	}
	if !strings.Contains(rep.Error, "pinned") && !strings.Contains(rep.Error, "public key") {
		t.Errorf("report error does not mention the pin: %s", rep.Error)
	}
	if _, err := os.Stat("/etc/kubernetes/kubelet.conf"); err == nil {
		t.Error("a failed discovery left /etc/kubernetes/kubelet.conf")
	}
}

// TestJoinUnreachableEndpoint: nothing listens at the endpoint → the run
// stops with class Timeout in wait-cluster-info, once spec.join.timeout
// ran out: the join's discovery is bounded by the timeout once, kubeadm's
// discovery (in preflight) does not wait for it a second time.
func TestJoinUnreachableEndpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the port is now closed
	const timeout = 8 * time.Second
	start := time.Now()
	out, code, rep := runJoin(t, joinSpec(t, addr, wrongHash, timeout.String()))
	elapsed := time.Since(start)
	if code != 1 || rep.ErrorClass != errclass.Timeout || rep.FailedPhase != "wait-cluster-info" {
		t.Fatalf("exit %d class %s phase %s; want 1 Timeout wait-cluster-info\n%s", code, rep.ErrorClass, rep.FailedPhase, out)
	}
	for _, p := range rep.Phases {
		if p.Name == "preflight" && p.Status != report.PhaseSkipped {
			t.Errorf("kubeadm's preflight ran (%s) after the discovery timed out: its discovery would wait spec.join.timeout again", p.Status)
		}
	}
	// Loose: the bound is the configured 8s once (twice would be 16s);
	// only a run that waited twice, or ignored the bound, exceeds it.
	if elapsed > timeout+6*time.Second {
		t.Errorf("took %v with a %v join timeout", elapsed, timeout)
	}
}
