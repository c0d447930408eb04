//go:build !windows

package controller

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
	"github.com/machineadm/machineadm/pkg/render"
)

// bigSecretFile gives c a file from a Secret of n random bytes (sealed,
// so nothing compresses it) and returns the value.
func (f *fixture) bigSecretFile(c *bootstrapv1.MachineadmConfig, secret, path string, n int) []byte {
	f.t.Helper()
	v := make([]byte, n)
	_, err := rand.Read(v)
	f.must(err)
	f.secret(secret, map[string][]byte{"blob": v})
	c.Spec.Host.Files = append(c.Spec.Host.Files, bootstrapv1.File{Path: path,
		ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: secret, Key: "blob"}}})
	return v
}

func httpDo(t *testing.T, method, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestPayloadOverUserDataLimit (R16): data over spec.userDataLimit becomes
// a stub under the limit that fetches the sealed spec, pinned by its
// SHA-256, from the payload endpoint, which serves exactly that spec and
// nothing for any other digest or name.
func TestPayloadOverUserDataLimit(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	srv := httptest.NewServer(&PayloadServer{Client: k8s})
	defer srv.Close()
	f.r.PayloadURL = srv.URL

	_, c := f.machine("w1", false)
	value := f.bigSecretFile(c, "big", "/etc/app/blob", 24<<10)
	c.Spec.UserDataLimit = "aws"
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("w1")
	data, payload := ds.Data["value"], ds.Data["payload"]
	if len(data) > 16384 || len(payload) < 24<<10 {
		t.Fatalf("data %d bytes (limit 16384), payload %d bytes", len(data), len(payload))
	}
	sum := sha256.Sum256(payload)
	digest := hex.EncodeToString(sum[:])
	if ds.Annotations[PayloadDigestAnnotation] != "sha256:"+digest {
		t.Fatalf("annotation %q, payload digest %s", ds.Annotations[PayloadDigestAnnotation], digest)
	}
	url := payloadURL(srv.URL, f.ns, "w1", digest)
	stub := cloudConfigFile(t, data, "/var/lib/machineadm/stub.sh")
	if !bytes.Contains(stub, []byte(url)) || !bytes.Contains(stub, []byte(digest)) {
		t.Fatalf("the stub does not fetch %s pinned by its digest:\n%s", url, stub)
	}
	if bytes.Contains(data, []byte("write_files:\n- path: "+render.LinuxSpecPath)) {
		t.Fatalf("the data still carries the spec")
	}
	code, body := httpDo(t, http.MethodGet, url)
	if code != http.StatusOK || !bytes.Equal(body, payload) {
		t.Fatalf("GET %s: %d, %d bytes", url, code, len(body))
	}
	_, cfg := f.unsealFile(body)
	if got := cfg.Spec.Host.Files[0].Content; got != string(value) {
		t.Fatalf("the payload's file holds %d bytes, want the Secret's %d", len(got), len(value))
	}
	// The stub carries the digest, 64 hex digits like a certificate key.
	for k, v := range ds.Data {
		if found := leakcheck.Check(v, leakcheck.Options{Known: [][]byte{value}, AllowHex: []string{agentSHA, digest}}); len(found) > 0 {
			t.Fatalf("data Secret key %s holds secrets in the clear: %v", k, found)
		}
	}
	for _, bad := range []struct {
		method, url string
		code        int
	}{
		{http.MethodGet, payloadURL(srv.URL, f.ns, "w1", strings.Repeat("0", 64)), http.StatusNotFound},
		{http.MethodGet, payloadURL(srv.URL, f.ns, "other", digest), http.StatusNotFound},
		{http.MethodGet, payloadURL(srv.URL, "default", "w1", digest), http.StatusNotFound},
		{http.MethodGet, srv.URL + payloadPathPrefix + f.ns + "/w1/" + digest[:10], http.StatusNotFound},
		// Not names: 404 like any other, not a failed read (503).
		{http.MethodGet, srv.URL + payloadPathPrefix + f.ns + "/../" + digest, http.StatusNotFound},
		{http.MethodGet, srv.URL + payloadPathPrefix + "../w1/" + digest, http.StatusNotFound},
		{http.MethodGet, srv.URL + payloadPathPrefix + "%2e/w1/" + digest, http.StatusNotFound},
		{http.MethodPost, url, http.StatusMethodNotAllowed},
	} {
		if code, _ := httpDo(t, bad.method, bad.url); code != bad.code {
			t.Errorf("%s %s: %d, want %d", bad.method, bad.url, code, bad.code)
		}
	}
	// Another Secret of the namespace with a "payload" key and a matching
	// annotation, not a config's data Secret, is not served.
	foreign := f.secret("w9", map[string][]byte{"payload": payload})
	foreign.Annotations = map[string]string{PayloadDigestAnnotation: "sha256:" + digest}
	f.must(k8s.Update(f.ctx, foreign))
	if code, _ := httpDo(t, http.MethodGet, payloadURL(srv.URL, f.ns, "w9", digest)); code != http.StatusNotFound {
		t.Errorf("a foreign Secret was served: %d", code)
	}

	// Under the limit, the spec stays in the data.
	_, small := f.machine("w2", false)
	small.Spec.UserDataLimit = "azure"
	f.must(k8s.Update(f.ctx, small))
	wantCond(t, f.reconcile("w2"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if ds2 := f.dataSecret("w2"); ds2.Data["payload"] != nil || ds2.Annotations[PayloadDigestAnnotation] != "" {
		t.Fatalf("data under the limit got a payload")
	}

	// A Windows worker: the PowerShell stub fetches the payload.
	_, win := f.machine("win1", false)
	win.Spec.OS, win.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.HostSpec{}
	f.bigSecretFile(win, "bigwin", `C:\ProgramData\app\blob`, 24<<10)
	win.Spec.UserDataLimit = "16384"
	f.must(k8s.Update(f.ctx, win))
	wantCond(t, f.reconcile("win1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	dsw := f.dataSecret("win1")
	sumw := sha256.Sum256(dsw.Data["payload"])
	if len(dsw.Data["value"]) > 16384 || !bytes.Contains(dsw.Data["value"], []byte("$PayloadUrl = '"+payloadURL(srv.URL, f.ns, "win1", hex.EncodeToString(sumw[:]))+"'")) {
		t.Fatalf("PowerShell data of %d bytes does not fetch its payload:\n%.1000s", len(dsw.Data["value"]), dsw.Data["value"])
	}
}

// Without a payload endpoint, data over the limit is DataTooLarge naming
// spec.userDataLimit, and its token is deleted.
func TestDataOverUserDataLimitWithoutPayloadEndpoint(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, c := f.machine("w1", false)
	f.bigSecretFile(c, "big", "/etc/app/blob", 24<<10)
	c.Spec.UserDataLimit = "aws"
	f.must(k8s.Update(f.ctx, c))
	before := f.tokenCount()
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonDataTooLarge)
	if !contains(got.Message, "spec.userDataLimit", "--report-url") {
		t.Fatalf("message %q", got.Message)
	}
	if n := f.tokenCount(); n != before {
		t.Fatalf("%d tokens after, %d before: the unused token was kept", n, before)
	}
	// A limit the stub itself does not fit in.
	f.r.PayloadURL = "http://127.0.0.1:9"
	_, c2 := f.machine("w2", false)
	f.bigSecretFile(c2, "big2", "/etc/app/blob", 24<<10)
	c2.Spec.UserDataLimit = "100"
	f.must(k8s.Update(f.ctx, c2))
	got = wantCond(t, f.reconcile("w2"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonDataTooLarge)
	if !contains(got.Message, "spec.userDataLimit", "stub") {
		t.Fatalf("message %q", got.Message)
	}
}

// testAgent stands in for the machineadm binary the stub downloads: it
// copies the spec it is given with -f into $MACHINEADM_TEST_RECORD.
const testAgent = `#!/bin/sh
while [ $# -gt 0 ]; do
	if [ "$1" = -f ]; then cp "$2" "$MACHINEADM_TEST_RECORD/spec"; fi
	shift
done
`

// TestPayloadStubRuns runs the stub of data over the limit with /bin/sh,
// as cloud-init would (rooted in a temporary directory through
// MACHINEADM_PREFIX, on loopback only): it downloads the agent, fetches
// the payload from the controller's payload endpoint, checks its digest
// and hands the agent exactly the data Secret's payload.
func TestPayloadStubRuns(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	srv := httptest.NewServer(&PayloadServer{Client: k8s})
	defer srv.Close()
	f.r.PayloadURL = srv.URL
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, testAgent) }))
	defer agent.Close()

	_, c := f.machine("w1", false)
	f.bigSecretFile(c, "big", "/etc/app/blob", 24<<10)
	c.Spec.UserDataLimit = "aws"
	sum := sha256.Sum256([]byte(testAgent))
	c.Spec.Agent = bootstrapv1.AgentSource{URL: agent.URL + "/machineadm", SHA256: hex.EncodeToString(sum[:])}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("w1")
	root, record := t.TempDir(), t.TempDir()
	stub := filepath.Join(root, "stub.sh")
	f.must(os.WriteFile(stub, cloudConfigFile(t, ds.Data["value"], "/var/lib/machineadm/stub.sh"), 0o700))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", stub)
	cmd.Env = append(os.Environ(), "MACHINEADM_PREFIX="+root, "MACHINEADM_TEST_RECORD="+record,
		"MACHINEADM_FETCH_ATTEMPTS=2", "MACHINEADM_FETCH_DELAY=0", "no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stub: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(record, "spec"))
	f.must(err)
	if !bytes.Equal(got, ds.Data["payload"]) {
		t.Fatalf("the agent was handed %d bytes, not the %d-byte payload", len(got), len(ds.Data["payload"]))
	}
}

// A pool's token rotation writes new data with a new payload digest while
// instances that booted from the old data a moment before still fetch the
// old one, whose token stays valid: the endpoint serves the previous
// payload too (it answered 404, and those instances never joined), and
// nothing older.
func TestPayloadOfPoolKeptOverRotation(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	srv := httptest.NewServer(&PayloadServer{Client: k8s})
	defer srv.Close()
	f.r.PayloadURL = srv.URL
	f.pool("pool1")
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "pool1"}, c))
	f.bigSecretFile(c, "big", "/etc/app/blob", 24<<10)
	c.Spec.UserDataLimit = "aws"
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("pool1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	digestOf := func() string {
		d := f.dataSecret("pool1").Annotations[PayloadDigestAnnotation]
		if !strings.HasPrefix(d, "sha256:") {
			t.Fatalf("no payload digest: %q", d)
		}
		return strings.TrimPrefix(d, "sha256:")
	}
	d0 := digestOf()
	rotate := func() {
		f.now = f.now.Add(DefaultTokenTTL * 3 / 4)
		wantCond(t, f.reconcile("pool1"), ReadyCondition, metav1.ConditionTrue, ReasonTokenRotated)
	}
	rotate()
	d1 := digestOf()
	if d1 == d0 {
		t.Fatal("the rotated data has the same payload")
	}
	for _, d := range []string{d1, d0} {
		if code, body := httpDo(t, http.MethodGet, payloadURL(srv.URL, f.ns, "pool1", d)); code != http.StatusOK || len(body) < 24<<10 {
			t.Fatalf("payload %s after one rotation: %d, %d bytes", d[:8], code, len(body))
		}
	}
	rotate()
	d2 := digestOf()
	if code, _ := httpDo(t, http.MethodGet, payloadURL(srv.URL, f.ns, "pool1", d1)); code != http.StatusOK {
		t.Fatalf("the previous payload after a second rotation: %d", code)
	}
	if code, _ := httpDo(t, http.MethodGet, payloadURL(srv.URL, f.ns, "pool1", d0)); code != http.StatusNotFound || d2 == d1 {
		t.Fatalf("the payload of two rotations ago (its token expired): %d", code)
	}
}
