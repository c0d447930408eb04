package day2

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
)

// TestUpgradeRunnerTLSFailureKeepsThePhaseHint runs kubeadm's upgrade
// apply phase upload-config/kubeadm for real against a loopback API
// server whose certificate the credential's CA did not sign (x509, as
// after a CA or serving certificate change): the failure, in kubeadm's
// build of its upgrade data, keeps the phase's class and gets the data's
// hint, not the join discovery rule's DiscoveryFailed
// and its spec.join.apiServerEndpoint/caCertHashes, which an upgrade
// does not have.
func TestUpgradeRunnerTLSFailureKeepsThePhaseHint(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not reached", http.StatusInternalServerError)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// The credential trusts a CA of its own, not the server's.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "x"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	admin := filepath.Join(dir, "admin.conf")
	if err := clientcmd.WriteToFile(*kc, admin); err != nil {
		t.Fatal(err)
	}
	data, err := UpgradeConfig(UpgradeOptions{KubernetesVersion: "v1.37.2", EtcdUpgrade: true, CertificateRenewal: true})
	if err != nil {
		t.Fatal(err)
	}
	// kubeadm retries a failed read for timeouts.kubernetesAPICall
	// (a minute by default): 2 s, its globals put back after.
	saved := kubeadmapi.GetActiveTimeouts().DeepCopy()
	t.Cleanup(func() { kubeadmapi.SetActiveTimeouts(saved) })
	var c kubeadmv1beta4.UpgradeConfiguration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	c.Timeouts = &kubeadmv1beta4.Timeouts{KubernetesAPICall: &metav1.Duration{Duration: 2 * time.Second}}
	if data, err = yaml.Marshal(&c); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "kubeadm-upgrade.yaml")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	const hint = "upload-config/kubeadm's own hint"
	var lines []string
	r := &UpgradeRunner{Verb: "apply", ConfigPath: cfg, Kubeconfig: admin, Output: func(l string) { lines = append(lines, l) },
		All: []string{"preflight", "control-plane", "upload-config/kubeadm"}}
	err = r.Run(t.Context(), "upload-config/kubeadm", errclass.ControlPlaneUnhealthy, hint)
	if err == nil || !strings.Contains(err.Error(), "x509") {
		t.Fatalf("upload-config/kubeadm against an API server of another CA: %v, want an x509 failure\n%s", err, strings.Join(lines, "\n"))
	}
	// kubeadm failed building its upgrade data ("[upgrade] FATAL"): the
	// phase's class, the data's hint (run.Classify), nothing of spec.join.
	if class, h := errclass.Of(err); class != errclass.ControlPlaneUnhealthy || !strings.Contains(h, "upgrade data") || strings.Contains(h, "spec.join") {
		t.Errorf("class %s, hint %q; want %s and the upgrade data's hint (%v)", class, h, errclass.ControlPlaneUnhealthy, err)
	}
}
