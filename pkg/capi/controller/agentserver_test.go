//go:build !windows

package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/spec"
)

// testAgentBuild is a stand-in for an agent build: a script that records
// that it ran.
const testAgentBuild = "#!/bin/sh\necho ran >\"$MACHINEADM_TEST_RECORD\"\n"

// agentDir writes a release-shaped directory (builds, SHA256SUMS, .sig per
// build, public key) signed with a fresh ECDSA key; only the platforms
// given get a build.
func agentDir(t *testing.T, platforms ...string) string {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadSignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var sums strings.Builder
	for _, p := range platforms {
		name := AgentPlatforms[p]
		body := []byte(testAgentBuild + "# " + p + "\n")
		write(t, filepath.Join(dir, name), body)
		sum := sha256.Sum256(body)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
		sig, err := sv.SignMessage(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name+".sig"), []byte(base64.StdEncoding.EncodeToString(sig)+"\n"))
	}
	write(t, filepath.Join(dir, agentSumsFile), []byte(sums.String()))
	pub, err := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, agentPublicKeyFile), pub)
	return dir
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// agentTLS serves h over TLS on 127.0.0.1 and returns its base URL and CA.
func agentTLS(t *testing.T, h http.Handler) (string, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// TestAgentStoreServesPinnedBuilds: the store serves the builds, their
// signatures, SHA256SUMS and the key, and nothing else; the stub rendered
// from its Source downloads the build over TLS with the pinned CA, checks
// digest and signature with the real shell and openssl, and runs it.
func TestAgentStoreServesPinnedBuilds(t *testing.T) {
	dir := agentDir(t, "linux/amd64", "linux/arm64", "windows/amd64")
	var store *AgentStore
	base, ca := agentTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { store.ServeHTTP(w, r) }))
	store, err := LoadAgentStore(dir, base, ca)
	if err != nil {
		t.Fatal(err)
	}
	if got := store.Platforms(); fmt.Sprint(got) != "[linux/amd64 linux/arm64 windows/amd64]" {
		t.Errorf("platforms %v", got)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, ca)}}
	get := func(method, path string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, name := range []string{"machineadm-linux-amd64", "machineadm-linux-arm64.sig", "machineadm-windows-amd64.exe", "SHA256SUMS", "machineadm-release.pub"} {
		code, body := get(http.MethodGet, "/agents/"+name)
		want, _ := os.ReadFile(filepath.Join(dir, name))
		if code != http.StatusOK || !bytes.Equal(body, want) {
			t.Errorf("GET %s: %d, %d bytes; want 200 and the file", name, code, len(body))
		}
	}
	for path, want := range map[string]int{"/agents/../agents/SHA256SUMS.x": 404, "/agents/": 404, "/agents/machineadm": 404, "/SHA256SUMS": 404} {
		if code, _ := get(http.MethodGet, path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	if code, _ := get(http.MethodPost, "/agents/SHA256SUMS"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}

	src, ok := store.Source("linux/amd64")
	if !ok || src.URL != base+"/agents/machineadm-linux-amd64" || src.SignatureURL != src.URL+".sig" || len(src.PublicKey) == 0 || !bytes.Equal(src.CACert, ca) {
		t.Fatalf("Source(linux/amd64) = %+v, %v", src, ok)
	}
	if w, _ := store.Source("windows/amd64"); w.SignatureURL != "" || w.CACert != nil || !strings.HasSuffix(w.URL, ".exe") {
		t.Errorf("Source(windows/amd64) = %+v: the Windows stub checks the digest, with the machine's trust store", w)
	}

	// The stub, rendered as the controller renders it, with dash.
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	spec := []byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  action: Join
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: 10.0.0.1:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:` + strings.Repeat("a", 64) + `"]
`)
	loaded, err := mspecLoad(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Render(spec, loaded, render.Options{Format: render.FormatShell, Agent: src})
	if err != nil {
		t.Fatal(err)
	}
	root, rec := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", string(out))
	cmd.Env = append(os.Environ(), "MACHINEADM_PREFIX="+root, "MACHINEADM_TEST_RECORD="+rec, "MACHINEADM_FETCH_ATTEMPTS=2", "MACHINEADM_FETCH_DELAY=0", "no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stub: %v\n%s", err, b)
	}
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("the served build did not run:\n%s", b)
	}
}

// TestAgentStoreRefusesUnpinnedBuilds: a build whose digest is not the one
// SHA256SUMS lists is never served; so is a directory without builds or
// without SHA256SUMS, and a base URL that is not https://HOST[:PORT].
func TestAgentStoreRefusesUnpinnedBuilds(t *testing.T) {
	_, ca := agentTLS(t, http.NotFoundHandler())
	dir := agentDir(t, "linux/amd64")
	write(t, filepath.Join(dir, "machineadm-linux-amd64"), []byte("tampered"))
	if _, err := LoadAgentStore(dir, "https://agents.example:9446", ca); err == nil || !strings.Contains(err.Error(), "refusing to serve") {
		t.Errorf("tampered build: %v", err)
	}
	if _, err := LoadAgentStore(t.TempDir(), "https://agents.example:9446", ca); err == nil {
		t.Error("a directory without SHA256SUMS loaded")
	}
	empty := t.TempDir()
	write(t, filepath.Join(empty, agentSumsFile), nil)
	if _, err := LoadAgentStore(empty, "https://agents.example:9446", ca); err == nil || !strings.Contains(err.Error(), "none of") {
		t.Errorf("no builds: %v", err)
	}
	good := agentDir(t, "linux/amd64")
	for _, u := range []string{"http://agents.example:9446", "https://agents.example/base", "https://u:p@agents.example", "https://agents.example?x=1", "https://"} {
		if _, err := LoadAgentStore(good, u, ca); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
	if _, err := LoadAgentStore(good, "https://agents.example", []byte("not pem")); err == nil {
		t.Error("a CA without a certificate accepted")
	}
}

// A config without spec.agent.url gets data that downloads the build the
// controller serves for its architecture, pinned by digest and signature
// with the server's CA; an architecture the controller does not serve, or
// a controller that serves none, is InvalidConfig naming the field.
func TestConfigWithoutAgentUsesServedBuild(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, ca := agentTLS(t, http.NotFoundHandler())
	store, err := LoadAgentStore(agentDir(t, "linux/amd64"), "https://agents.mgmt.example:9446", ca)
	if err != nil {
		t.Fatal(err)
	}

	_, c := f.machine("w1", false)
	c.Spec.Agent = bootstrapv1.AgentSource{}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.agent.url: required") {
		t.Errorf("without an agent server: %q", got.Message)
	}

	f.r.Agents = store
	_, c2 := f.machine("w2", false)
	c2.Spec.Agent = bootstrapv1.AgentSource{}
	f.must(k8s.Update(f.ctx, c2))
	wantCond(t, f.reconcile("w2"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	data := stubOf(t, f.dataSecret("w2").Data["value"])
	src, _ := store.Source("linux/amd64")
	for _, want := range []string{"https://agents.mgmt.example:9446/agents/machineadm-linux-amd64", src.SHA256, "machineadm-linux-amd64.sig", "MACHINEADM_CA", "BEGIN PUBLIC KEY"} {
		if !strings.Contains(data, want) {
			t.Errorf("the bootstrap data lacks %q", want)
		}
	}

	_, c3 := f.machine("w3", false)
	c3.Spec.Agent = bootstrapv1.AgentSource{Architecture: "arm64"}
	f.must(k8s.Update(f.ctx, c3))
	got = wantCond(t, f.reconcile("w3"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.agent.architecture: ") {
		t.Errorf("arm64 not served: %q", got.Message)
	}
}

// Admission: architecture only without url; an oci:// reference needs no
// sha256; a malformed one is refused by render naming spec.agent.url.
func TestAgentSourceAdmission(t *testing.T) {
	f := newFixture(t)
	refusedWithPath(t, f, map[string]admissionCase{
		"architecture with url": {func(s *bootstrapv1.MachineadmConfigSpec) { s.Agent.Architecture = "arm64" }, "spec.agent.architecture"},
		"unknown architecture": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Agent = bootstrapv1.AgentSource{Architecture: "riscv64"}
		}, "spec.agent.architecture"},
	})
	f.initialized()
	_, c := f.machine("w1", false)
	c.Spec.Agent = bootstrapv1.AgentSource{URL: "oci://ghcr.io/example/agent@sha256:" + agentSHA}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if data := stubOf(t, f.dataSecret("w1").Data["value"]); !strings.Contains(data, "https://ghcr.io/v2/example/agent/blobs/sha256:"+agentSHA) {
		t.Error("the data does not fetch the registry blob")
	}
	_, c2 := f.machine("w2", false)
	c2.Spec.Agent = bootstrapv1.AgentSource{URL: "oci://ghcr.io/example/agent:latest"}
	f.must(k8s.Update(f.ctx, c2))
	got := wantCond(t, f.reconcile("w2"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.agent.url: ") || !strings.Contains(got.Message, "not pinned by a digest") {
		t.Errorf("tagged reference: %q", got.Message)
	}
}

func mspecLoad(data []byte) (*machineadm.MachineBootstrapConfig, error) {
	l, err := spec.Load(data, "test")
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// tlsConfigFor trusts the PEM CA bundle only.
func tlsConfigFor(t *testing.T, ca []byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate")
	}
	return &tls.Config{RootCAs: pool}
}

// stubOf is the stub script inside cloud-config bootstrap data (its
// write_files entry, gz+b64).
func stubOf(t *testing.T, cloudConfig []byte) string {
	t.Helper()
	var cc struct {
		WriteFiles []struct{ Path, Encoding, Content string } `json:"write_files"`
	}
	if err := yaml.Unmarshal(cloudConfig, &cc); err != nil {
		t.Fatal(err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path != render.CloudConfigStubPath {
			continue
		}
		if f.Encoding != "gz+b64" {
			return f.Content
		}
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	t.Fatalf("no %s in the cloud-config", render.CloudConfigStubPath)
	return ""
}
