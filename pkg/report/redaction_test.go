package report

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/redact"
)

// TestNoSecretInAnyOutput is the redaction acceptance test at the report's
// level: a spec holds a bootstrap token, a certificate key and a CA
// private key (inline and in files); the run logs them, prints them in
// kubeadm-like output, fails with them in the error and the phase
// message; then every byte written — report file, previous report,
// sentinel, console device, stdout, the HTTP POST body, the log, the tee
// of kubeadm's output — is searched for every form of every secret.
func TestNoSecretInAnyOutput(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(key)
	caKey := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	kb := make([]byte, 32)
	rand.Read(kb)
	certKey := hex.EncodeToString(kb)
	token := "7f3k2p." + hex.EncodeToString(kb[:8])
	forbidden := []string{token, token[7:], certKey, base64.StdEncoding.EncodeToString([]byte(caKey))}
	for _, l := range strings.Split(caKey, "\n") {
		if len(l) > 16 && !strings.HasPrefix(l, "-----") {
			forbidden = append(forbidden, l)
		}
	}

	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "etc/machineadm/pki"), 0o700))
	must(os.WriteFile(filepath.Join(root, "etc/machineadm/pki/ca.key"), []byte(caKey), 0o600))
	must(os.WriteFile(filepath.Join(root, "etc/machineadm/token"), []byte(token+"\n"), 0o600))
	must(os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	must(os.WriteFile(filepath.Join(root, "dev/console"), nil, 0o600))
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{
		Role: machineadm.RoleControlPlane, Action: machineadm.ActionJoin,
		Join: &machineadm.Join{APIServerEndpoint: "127.0.0.1:6443", Token: machineadm.SecretSource{File: "/etc/machineadm/token"}},
		ControlPlane: &machineadm.ControlPlane{CertificateKey: &machineadm.SecretSource{Value: certKey},
			PKI: machineadm.PKI{Dir: "/etc/machineadm/pki"}},
	}}
	red := redact.ForSpec(cfg, root)

	var mu sync.Mutex
	var posted bytes.Buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		io.Copy(&posted, r.Body)
	}))
	defer srv.Close()

	var stdout, logs, tee bytes.Buffer
	log := slog.New(red.NewHandler(slog.NewTextHandler(&logs, nil)))
	writers := WritersFor(machineadm.Report{URL: srv.URL}, Options{Root: root, Stdout: &stdout, ConsoleDevices: []string{"/dev/console"}})
	for run := range 2 { // twice, so a previous report exists too
		rec := NewRecorder(MetaFor(cfg, "bootstrap"), writers, red, nil)
		log.Info("loaded spec", "token", token, "certificateKey", certKey, "caKey", caKey)
		rec.PhaseStarted("control-plane-prepare/download-certs")
		out := rec.OutputWriter(&tee)
		fmt.Fprintf(out, "[download-certs] Using certificate key:\n%s\n", certKey)
		fmt.Fprintf(out, "kubeadm join 127.0.0.1:6443 --token %s --certificate-key %s\n", token, certKey)
		fmt.Fprintf(out, "dumping key:\n%s", caKey)
		io.WriteString(out, "partial line with "+token[:10])
		io.WriteString(out, token[10:]+" end\n")
		out.Close()
		err := fmt.Errorf("run %d: error downloading certs: key %s for token %s rejected; key file:\n%s", run, certKey, token, caKey)
		log.Error("phase failed", "err", err)
		// Classified where it failed (the kubeadm runner), as in a run.
		rec.Fail("", errclass.New(errclass.PayloadUnavailable, "", err))
		if err := rec.Finish(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	outputs := map[string][]byte{"stdout": stdout.Bytes(), "log": logs.Bytes(), "tee": tee.Bytes(), "http": posted.Bytes()}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, filepath.Join(root, "etc")) {
			data, _ := os.ReadFile(p)
			outputs[p] = data
		}
		return nil
	})
	for _, want := range []string{filepath.Join(root, DefaultPath), filepath.Join(root, PreviousPath(DefaultPath)), filepath.Join(root, "dev/console")} {
		if len(outputs[want]) == 0 {
			t.Errorf("nothing written to %s", want)
		}
	}
	for name, data := range outputs {
		for _, f := range forbidden {
			if bytes.Contains(data, []byte(f)) {
				t.Errorf("%s leaks %q", name, f)
			}
		}
	}
	r, err := Decode(outputs[filepath.Join(root, DefaultPath)])
	if err != nil {
		t.Fatal(err)
	}
	if r.ErrorClass != errclass.PayloadUnavailable || !strings.Contains(r.Error, "key <redacted> for token <redacted>") {
		t.Errorf("report: %s %q", r.ErrorClass, r.Error)
	}
}
