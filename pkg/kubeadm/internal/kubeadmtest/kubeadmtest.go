// Package kubeadmtest holds the test helpers that the tests of several
// pkg/kubeadm sub-packages share: the repository's example specs, fixed
// fake secrets, and a real CA set with a kubeadm configuration for running
// kubeadm's certs and kubeconfig phases. Only tests import it.
package kubeadmtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/version"
)

// Inputs are fixed, obviously fake secrets of valid shape for cfg.
func Inputs(cfg *machineadm.MachineBootstrapConfig) translate.Inputs {
	in := translate.Inputs{}
	if cfg.Spec.Join != nil {
		in.JoinToken = "abcdef.0123456789abcdef"
	}
	if cp := cfg.Spec.ControlPlane; cp != nil {
		if cp.CertificateKey != nil {
			in.CertificateKey = strings.Repeat("ab", 32)
		}
		for range cp.BootstrapTokens {
			in.BootstrapTokens = append(in.BootstrapTokens, "ghijkl.0123456789ghijkl")
		}
	}
	if translate.KubeletConfig(cfg) != nil {
		in.PatchesDir = "/var/lib/machineadm/patches"
	}
	return in
}

// LoadExample loads docs/examples/name of the repository (found as the
// nearest directory above the working directory with a go.mod) through
// the spec loader.
func LoadExample(t testing.TB, name string) *machineadm.MachineBootstrapConfig {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// RequireStamped fails the test in a build without the Kubernetes version
// stamp (kubeadm's phases need it; `make test` sets it).
func RequireStamped(t testing.TB) {
	t.Helper()
	if err := version.CheckStamped(); err != nil {
		t.Fatalf("%v (run `make test`)", err)
	}
}

// CertsConfig is a kubeadm init configuration whose certificates go to
// dir, for running kubeadm's certs phases for real in a test.
func CertsConfig(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeadm-init.yaml")
	doc := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: 192.0.2.10, bindPort: 6443} # only written into certificates
nodeRegistration: {name: cp-test, criSocket: unix:///run/containerd/containerd.sock}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
certificatesDir: ` + dir + `
`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// PKISetup makes a cluster CA set and a kubeadm configuration for it
// (CertsConfig); it returns the certificates directory and the
// configuration file. It skips a build without the Kubernetes version
// stamp, which kubeadm's phases need.
func PKISetup(t testing.TB) (string, string) {
	t.Helper()
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	dir := filepath.Join(t.TempDir(), "pki")
	if _, err := pki.InitPKI(dir, "ECDSA-P256", nil); err != nil {
		t.Fatal(err)
	}
	return dir, CertsConfig(t, dir)
}

// WriteLoneKey writes a new ECDSA P-256 private key (PEM, 0600) to path,
// making its directory: a key left without its certificate.
func WriteLoneKey(t *testing.T, path string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// NewCA returns a self-signed ECDSA P-256 CA named name, valid from an
// hour ago for two hours: its certificate, its key and the certificate's
// PEM.
func NewCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
