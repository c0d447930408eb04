package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Shapes of valid secrets and digests used by the base specs.
const (
	validToken   = "abcdef.0123456789abcdef"
	validCertKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	validCAHash  = "sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"
	validPod     = "apiVersion: v1\nkind: Pod\nmetadata: {name: audit-forwarder, namespace: kube-system}\nspec:\n  containers: [{name: fwd, image: registry.example/fwd:1.0}]\n"
)

// testPEM returns a freshly made self-signed certificate and its key, PEM
// encoded.
func testPEM(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

type baseKind int

const (
	cpInit baseKind = iota
	cpJoin
	worker
)

func (b baseKind) String() string { return [...]string{"cpInit", "cpJoin", "worker"}[b] }

// base returns a valid, defaulted hub spec of the given kind that uses
// most sections, so that a case breaks one rule and sees only its error.
func base(t *testing.T, kind baseKind) *machineadm.MachineBootstrapConfig {
	t.Helper()
	cert, key := testPEM(t)
	c := &machineadm.MachineBootstrapConfig{APIVersion: machineadm.LatestAPIVersion, Kind: machineadm.Kind}
	s := &c.Spec
	s.Kubernetes = machineadm.Kubernetes{Version: "v1.37.2", ControlPlaneEndpoint: "cp.demo.example:6443"}
	s.Node = machineadm.Node{
		Name:   "node1",
		Labels: map[string]string{"example.com/pool": "general"},
		Kubelet: machineadm.Kubelet{
			ExtraArgs: []machineadm.Arg{{Name: "v", Value: "2"}},
			Config:    map[string]any{"failCgroupV1": false, "maxPods": int64(50)},
		},
	}
	s.Host = machineadm.Host{
		Sysctl:        map[string]string{"net.ipv4.ip_forward": "1"},
		KernelModules: []string{"br_netfilter"},
		Files: []machineadm.File{
			{Path: "/etc/demo.conf", Content: "a=1\n"},
			{Path: "/etc/demo.bin", Content: "aGVsbG8=", Encoding: "base64", Mode: "0600"},
		},
		Containerd: &machineadm.Containerd{
			Registries: []machineadm.Registry{{
				Host: "docker.io", CACert: cert,
				Mirrors: []machineadm.Mirror{{URL: "https://mirror.demo.example", ClientCert: cert, ClientKey: key}},
			}},
			Runtimes:    []machineadm.Runtime{{Name: "kata", Type: "io.containerd.kata.v2"}},
			ConfigPatch: "[plugins]\n",
		},
	}
	join := &machineadm.Join{
		APIServerEndpoint: "cp.demo.example:6443",
		Token:             machineadm.SecretSource{File: "/etc/machineadm/secrets/token"},
		CACertHashes:      []string{validCAHash},
	}
	certKey := &machineadm.SecretSource{File: "/etc/machineadm/secrets/certificate-key"}
	switch kind {
	case cpInit:
		s.Role, s.Action = machineadm.RoleControlPlane, machineadm.ActionInit
		s.ControlPlane = &machineadm.ControlPlane{
			AdvertiseAddress: "192.0.2.10",
			APIServer:        machineadm.APIServer{CertSANs: []string{"192.0.2.100", "api.demo.example", "*.demo.example"}},
			CertificateKey:   certKey,
			BootstrapTokens:  []machineadm.BootstrapToken{{Token: machineadm.SecretSource{File: "/etc/machineadm/secrets/token"}, TTL: "0s"}},
		}
		s.Host.StaticPods = []machineadm.StaticPod{{Name: "audit-forwarder", Manifest: validPod}}
	case cpJoin:
		s.Role, s.Action = machineadm.RoleControlPlane, machineadm.ActionJoin
		s.ControlPlane = &machineadm.ControlPlane{CertificateKey: certKey}
		s.Join = join
	case worker:
		s.Role, s.Action = machineadm.RoleWorker, machineadm.ActionJoin
		s.Join = join
	}
	machineadm.SetDefaults(c)
	return c
}

// fe is an expected field error: its path and type.
type fe struct {
	path string
	typ  field.ErrorType
}

func (e fe) String() string { return e.path + " " + string(e.typ) }

const (
	req  = field.ErrorTypeRequired
	inv  = field.ErrorTypeInvalid
	nsup = field.ErrorTypeNotSupported
	forb = field.ErrorTypeForbidden
	dup  = field.ErrorTypeDuplicate
	typ  = field.ErrorTypeTypeInvalid
)

// errorSet lists errors as sorted "path type" strings.
func errorSet(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fe{e.Field, e.Type}.String())
	}
	slices.Sort(out)
	return out
}

func wantSet(want []fe) []string {
	out := make([]string, 0, len(want))
	for _, w := range want {
		out = append(out, w.String())
	}
	slices.Sort(out)
	return out
}

func TestBasesAreValid(t *testing.T) {
	for _, k := range []baseKind{cpInit, cpJoin, worker} {
		r := Validate(base(t, k))
		if len(r.Errors) > 0 {
			t.Errorf("%s: base spec invalid:\n  %s", k, strings.Join(errorSet(r.Errors), "\n  "))
		}
		if len(r.Warnings) > 0 {
			t.Errorf("%s: base spec has warnings: %v", k, r.Warnings)
		}
	}
}
