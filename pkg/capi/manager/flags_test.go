package manager

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Bad report receiver flags exit 2 with the flag named, before anything
// connects anywhere.
func TestReportFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--report-bind-address=127.0.0.1:9445"}, "set both or neither"},
		{[]string{"--report-url=http://10.0.0.1:9445"}, "set both or neither"},
		{[]string{"--report-bind-address=:9445", "--report-url=ftp://x"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://u:p@x"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x/?token=1"}, "--report-url"},
		// The controller appends /reports/…: after these the machines
		// would post elsewhere, or every machine spec would be invalid.
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:9445/#ingress"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:9445/?"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:99999"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:0/base"}, "--report-url"},
		// client-go would log the bodies of the Secrets it reads and
		// writes (CA keys, tokens).
		{[]string{"--zap-log-level=8"}, "--zap-log-level: at most 7"},
		{[]string{"--zap-log-level=10"}, "--zap-log-level: at most 7"},
	} {
		var stderr bytes.Buffer
		if code := Main(c.args, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// An explicitly empty --report-url turns the receiver off whatever
// --report-bind-address says (the generated Deployment always passes
// both, the URL from a clusterctl variable that may be empty); an omitted
// one is still a mistake.
func TestReportURLExplicitlyEmptyTurnsReceiverOff(t *testing.T) {
	for _, c := range []struct {
		addr, url string
		given     bool
		want      string
		err       string
	}{
		{addr: ":9445", url: "", given: true, want: ""},
		{addr: "", url: "", given: true, want: ""},
		{addr: ":9445", url: "", given: false, err: "set both or neither"},
		{addr: ":9445", url: "http://machineadm-report.machineadm-system.svc:9445", given: true, want: ":9445"},
		{addr: "", url: "", given: false, want: ""},
	} {
		got, err := reportFlags(c.addr, c.url, c.given)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c, got, err, c.want)
		}
	}
}

// Bad agent server flags exit 2 with the flags named, before anything
// connects anywhere: half of the pair, no serving certificate, a
// certificate that does not load, a directory without pinned builds.
func TestAgentFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, cert, key)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agent-bind-address=:9446"}, "--agent-bind-address and --agent-url: set both or neither"},
		{[]string{"--agent-url=https://agents.example:9446"}, "set both or neither"},
		{[]string{"--agent-bind-address=:9446", "--agent-url=https://agents.example:9446"}, "--agent-tls-cert-file and --agent-tls-key-file: required"},
		{[]string{"--agent-bind-address=:9446", "--agent-url=https://agents.example:9446", "--agent-tls-cert-file=" + key, "--agent-tls-key-file=" + key}, "--agent-tls-cert-file, --agent-tls-key-file"},
		{[]string{"--agent-bind-address=:9446", "--agent-url=https://agents.example:9446", "--agent-tls-cert-file=" + cert, "--agent-tls-key-file=" + key, "--agent-dir=" + dir}, "--agent-dir, --agent-url: agent builds"},
		{[]string{"--agent-bind-address=:9446", "--agent-url=http://agents.example:9446", "--agent-tls-cert-file=" + cert, "--agent-tls-key-file=" + key, "--agent-dir=" + dir}, "must be https://HOST[:PORT]"},
	} {
		var stderr bytes.Buffer
		if code := Main(c.args, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// writeSelfSigned writes a self-signed ECDSA serving certificate and key.
func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agents"}, DNSNames: []string{"agents.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Allocations are sampled for the heap profile only when something can
// fetch it: with --profiler-address, or when GODEBUG asks for a rate.
// Otherwise every sampled allocation walks its stack and keeps a bucket
// for nothing.
func TestMemProfileRateOnlyWithProfiler(t *testing.T) {
	for _, c := range []struct {
		addr, godebug string
		want          int
	}{
		{"", "", 0},
		{"", "gctrace=1", 0},
		{"", "memprofilerateX=1", 0},
		{"127.0.0.1:6060", "", 512 * 1024},
		{"", "gctrace=1, memprofilerate=4096", 512 * 1024},
	} {
		if got := memProfileRate(c.addr, c.godebug, 512*1024); got != c.want {
			t.Errorf("profiler %q, GODEBUG %q: rate %d, want %d", c.addr, c.godebug, got, c.want)
		}
	}
}

// Main applies it before the manager starts: here the manager fails to
// reach its (loopback, closed) API server, after the rate is set.
func TestMainTurnsMemoryProfilingOff(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("GODEBUG", "")
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 512 * 1024
	var stderr bytes.Buffer
	if code := Main([]string{"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0"}, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1 (no API server); stderr %q", code, stderr.String())
	}
	if runtime.MemProfileRate != 0 {
		t.Errorf("MemProfileRate %d after Main without --profiler-address, want 0", runtime.MemProfileRate)
	}
}
