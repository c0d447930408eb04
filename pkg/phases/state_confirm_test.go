//go:build !windows

package phases

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/spec"
)

// confirmSpec is a worker spec that writes one file.
const confirmFile = "/etc/app/app.conf"

// validKubeletConf is a kubeconfig as kubeadm writes kubelet.conf.
const validKubeletConf = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://cp.demo.example:6443", certificate-authority-data: Y2E=}
  name: default-cluster
contexts:
- context: {cluster: default-cluster, namespace: default, user: default-auth}
  name: default-context
current-context: default-context
users:
- name: default-auth
  user: {client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}
`

// confirmWorkflow is a bootstrap-shaped workflow on d's root: inputs-check
// and files (which writes confirmFile), idempotent, then two kubeadm-like
// leaves; runs counts the leaves that ran.
func confirmWorkflow(t *testing.T, d *Data, runs map[string]int) *Workflow {
	t.Helper()
	l, err := spec.Load([]byte(testspec.MinimalWorker+"  host:\n    files:\n      - {path: "+confirmFile+", content: x}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	d.Config = l.Config
	mk := func(name string, reconverge bool, run func() error) Phase {
		return Phase{Name: name, reconverge: reconverge, Run: func(context.Context, *Data) (Result, error) {
			runs[name]++
			if run != nil {
				return Result{Changed: true}, run()
			}
			return Result{}, nil
		}}
	}
	writeFile := func() error { return writeUnder(d.Root, confirmFile, "x") }
	return &Workflow{State: true, Confirm: confirmBootstrap, Phases: []Phase{
		mk(InputsCheckPhase, true, nil), mk("files", true, writeFile), mk("preflight", false, nil), mk("kubelet-start", false, nil),
	}}
}

func writeUnder(root, p, content string) error {
	hp := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		return err
	}
	return os.WriteFile(hp, []byte(content), 0o600)
}

const finishedJournal = `{"specDigest":"sha256:aa"}
{"completed":"inputs-check"}
{"completed":"files"}
{"completed":"preflight"}
{"completed":"kubelet-start"}
{"finishedAt":"2026-01-01T00:00:00Z"}
`

// TestFinishedJournalNeedsTheHost: a journal that says the spec's run
// finished is believed only when the host shows it. Forged on a blank
// root it makes every leaf run (nothing reported Unchanged); stale, after
// a file of the spec was removed from a bootstrapped host, it makes the
// idempotent leaves run again (the file comes back) and keeps kubeadm's;
// on a host that shows the run, nothing runs.
func TestFinishedJournalNeedsTheHost(t *testing.T) {
	thisNode := NodeName(mustLoad(t, testspec.MinimalWorker).Config)
	bootstrapped := func(t *testing.T, root string) {
		for p, c := range map[string]string{"/etc/kubernetes/kubelet.conf": validKubeletConf, kubeletConfigFile: "kind: KubeletConfiguration\n", "/var/lib/kubelet/pki/kubelet-client-current.pem": nodeCertPEM(t, "system:node:"+thisNode)} {
			if err := writeUnder(root, p, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, root string)
		ran   []string
	}{
		{"forged on a blank host", func(*testing.T, string) {}, []string{"inputs-check", "files", "preflight", "kubelet-start"}},
		{"kubelet.conf not a kubeconfig", func(t *testing.T, root string) {
			bootstrapped(t, root)
			writeUnder(root, confirmFile, "x")
			writeUnder(root, "/etc/kubernetes/kubelet.conf", "kind: Config\ncurrent-context: nowhere\n")
		}, []string{"inputs-check", "files", "preflight", "kubelet-start"}},
		{"a spec file removed", bootstrapped, []string{"inputs-check", "files"}},
		{"the kubelet's client certificate removed", func(t *testing.T, root string) {
			bootstrapped(t, root)
			writeUnder(root, confirmFile, "x")
			os.Remove(filepath.Join(root, "var/lib/kubelet/pki/kubelet-client-current.pem"))
		}, []string{"inputs-check", "files", "preflight", "kubelet-start"}},
		{"the kubelet's certificate is another Node's (an image cloned from a bootstrapped machine)", func(t *testing.T, root string) {
			bootstrapped(t, root)
			writeUnder(root, confirmFile, "x")
			writeUnder(root, "/var/lib/kubelet/pki/kubelet-client-current.pem", nodeCertPEM(t, "system:node:"+thisNode+"-original"))
		}, []string{"inputs-check", "files", "preflight", "kubelet-start"}},
		{"the kubelet's certificate file holds no certificate", func(t *testing.T, root string) {
			bootstrapped(t, root)
			writeUnder(root, confirmFile, "x")
			writeUnder(root, "/var/lib/kubelet/pki/kubelet-client-current.pem", "pem")
		}, []string{"inputs-check", "files", "preflight", "kubelet-start"}},
		{"the host shows the run", func(t *testing.T, root string) {
			bootstrapped(t, root)
			writeUnder(root, confirmFile, "x")
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testData(t)
			d.Root = t.TempDir()
			tc.plant(t, d.Root)
			if err := os.WriteFile(filepath.Join(d.WorkDir, stateFile), []byte(finishedJournal), 0o600); err != nil {
				t.Fatal(err)
			}
			runs := map[string]int{}
			obs := &recordObs{}
			if _, err := confirmWorkflow(t, d, runs).Run(context.Background(), d, obs, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			var ran []string
			for _, n := range []string{"inputs-check", "files", "preflight", "kubelet-start"} {
				if runs[n] > 0 {
					ran = append(ran, n)
				}
			}
			if strings.Join(ran, ",") != strings.Join(tc.ran, ",") {
				t.Errorf("ran %v, want %v (events %v)", ran, tc.ran, obs.events)
			}
			// "Already bootstrapped" reports every phase Unchanged and
			// starts none.
			if started := strings.Contains(strings.Join(obs.events, ","), "start "); started != (len(tc.ran) > 0) {
				t.Errorf("events %v: phases started %v, want %v", obs.events, started, len(tc.ran) > 0)
			}
			if !loadState(d).completedRun("sha256:aa") {
				t.Errorf("journal after the run: %q, want finished", readJournal(t, d))
			}
			// Run again: the host now shows it, nothing runs.
			runs = map[string]int{}
			if _, err := confirmWorkflow(t, d, runs).Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.name == "a spec file removed" && len(runs) > 0 {
				t.Errorf("second run, the file back: ran %v, want nothing", runs)
			}
		})
	}
	if Bootstrap(mustLoad(t, testspec.MinimalWorker).Config).Confirm == nil {
		t.Error("the bootstrap workflow does not confirm a finished journal")
	}
}

// nodeCertPEM is a self-signed certificate with the common name cn, and
// its key, as the kubelet's rotating client certificate file holds them.
func nodeCertPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}

func mustLoad(t *testing.T, doc string) *spec.Loaded {
	t.Helper()
	l, err := spec.Load([]byte(doc), "test")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestJournalMustBeItsOwnFile: a hard link, a symbolic link or a FIFO in
// the journal's place is refused by CheckJournal (class
// HostPreparationFailed, with a hint) and never followed: a forged
// finished journal behind a hard link is neither believed nor appended to.
func TestJournalMustBeItsOwnFile(t *testing.T) {
	d := testData(t)
	other := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.WriteFile(other, []byte(`{"specDigest":"sha256:aa"}`+"\n"+`{"completed":"a"}`+"\n"+`{"completed":"b"}`+"\n"+`{"completed":"c"}`+"\n"+`{"finishedAt":"x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(d.WorkDir, stateFile)
	if err := os.Link(other, j); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	before, _ := os.ReadFile(other)
	err := CheckJournal(d)
	if c, hint := errclass.Of(err); c != errclass.HostPreparationFailed || hint == "" || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("CheckJournal(hard link) = %v (%s, hint %q)", err, c, hint)
	}
	runs := map[string]int{}
	fail := false
	if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if runs["a"] != 1 || runs["b"] != 1 || runs["c"] != 1 {
		t.Errorf("runs %v: a hard-linked finished journal was believed", runs)
	}
	if after, _ := os.ReadFile(other); string(after) != string(before) {
		t.Errorf("the run wrote through the hard link: %q", after)
	}
	if err := CheckJournal(d); err != nil {
		t.Errorf("CheckJournal after the run replaced the link: %v", err)
	}
	os.Remove(j)
	os.Symlink(other, j)
	if c, _ := errclass.Of(CheckJournal(d)); c != errclass.HostPreparationFailed {
		t.Errorf("CheckJournal(symlink): %s", c)
	}
}
