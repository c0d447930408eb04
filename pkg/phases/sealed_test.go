package phases

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/spec"
)

// sealedWorker seals the minimal worker spec (node name w1, its token
// file under a temporary root) to a new hpke identity and returns Data for
// the sealed file with the token file gone, and the identity's path.
func sealedWorker(t *testing.T) (*Data, string) {
	t.Helper()
	root := t.TempDir()
	tok := filepath.Join(root, "etc/machineadm/secrets/bootstrap-token")
	os.MkdirAll(filepath.Dir(tok), 0o700)
	if err := os.WriteFile(tok, []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := filepath.Join(root, "etc/machineadm/identity")
	recipient, err := sealspec.Keygen("hpke", "", id)
	if err != nil {
		t.Fatal(err)
	}
	doc := testspec.MinimalWorker + "  node: {name: w1}\n"
	sealed, err := sealspec.SealSpec([]byte(doc), sealspec.SealOptions{Recipients: []string{recipient}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(tok)
	if strings.Contains(string(sealed.File), "0123456789abcdef") {
		t.Fatal("sealed file holds the token")
	}
	specDoc, envelope, err := splitForTest(sealed.File)
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(specDoc, "sealed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := testData(t)
	d.Config, d.Root, d.Sealed, d.SpecDoc, d.Identity = l.Config, root, envelope, specDoc, "/etc/machineadm/identity"
	return d, id
}

func splitForTest(file []byte) ([]byte, []byte, error) {
	i := strings.Index(string(file), "\n---\n")
	if i < 0 {
		return file, nil, nil
	}
	return file[:i+1], file[i+5:], nil
}

// TestSealedSpecOpensInInputsCheck: inputs-check opens the envelope with
// the machine's identity, the redactor learns the plaintext, the report
// message names the recipient, and kubeadm gets the token.
func TestSealedSpecOpensInInputsCheck(t *testing.T) {
	d, _ := sealedWorker(t)
	var learned []string
	d.AddSecrets = func(s ...string) { learned = append(learned, s...) }
	res, err := InputsCheck().Run(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Message, "sealed secrets opened by hpke key") || strings.Contains(res.Message, "0123456789abcdef") {
		t.Errorf("message %q", res.Message)
	}
	if len(learned) != 1 || learned[0] != "abcdef.0123456789abcdef" {
		t.Errorf("redactor learned %d values", len(learned))
	}
	var token string
	d.RunKubeadm = func(ctx context.Context, r *kubeadm.Runner, p kubeadm.Phase) error {
		data, _ := os.ReadFile(r.ConfigPath)
		if strings.Contains(string(data), "abcdef.0123456789abcdef") {
			token = "seen"
		}
		return nil
	}
	w := &Workflow{Phases: append([]Phase{KubeadmConfigPhase()}, KubeadmPhases(d.Config)...)}
	if _, err := w.Run(context.Background(), d, &eventObs{}, RunOptions{}); err != nil || token != "seen" {
		t.Errorf("kubeadm did not get the sealed token: %v", err)
	}
}

// TestSealedSpecResumeOpensAgain: a run that resumes after inputs-check
// (a fresh process: nothing unsealed in memory) opens the envelope in the
// first phase that needs it.
func TestSealedSpecResumeOpensAgain(t *testing.T) {
	d, _ := sealedWorker(t)
	if _, _, err := prepareKubeadm(d); err != nil {
		t.Fatalf("kubeadm-config without inputs-check: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(d.WorkDir, "kubeadm-join.yaml"))
	if !strings.Contains(string(data), "abcdef.0123456789abcdef") {
		t.Error("the kubeadm configuration lacks the sealed token")
	}
}

// TestSealedSpecWrongIdentity: another machine's key, or a changed byte of
// the envelope, is VerificationFailed, and nothing is written.
func TestSealedSpecWrongIdentity(t *testing.T) {
	d, id := sealedWorker(t)
	other := filepath.Join(t.TempDir(), "other")
	if _, err := sealspec.Keygen("hpke", "", other); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(other)
	if err := os.WriteFile(id, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := InputsCheck().Run(context.Background(), d)
	if c, _ := errclass.Of(err); c != errclass.VerificationFailed {
		t.Errorf("wrong identity: %s %v", c, err)
	}
	d2, _ := sealedWorker(t)
	const item = "spec.join.token: "
	i := strings.LastIndex(string(d2.Sealed), item)
	if i < 0 {
		t.Fatalf("envelope without the token item:\n%s", d2.Sealed)
	}
	tampered := []byte(string(d2.Sealed))
	j := i + len(item) + 20
	if tampered[j] == 'A' {
		tampered[j] = 'B'
	} else {
		tampered[j] = 'A'
	}
	d2.Sealed = tampered
	_, err = InputsCheck().Run(context.Background(), d2)
	if c, _ := errclass.Of(err); c != errclass.VerificationFailed {
		t.Errorf("tampered envelope: %s %v", c, err)
	}
	for _, dd := range []*Data{d, d2} {
		if entries, _ := os.ReadDir(dd.WorkDir); len(entries) != 0 {
			t.Errorf("a failed unseal wrote %v", entries)
		}
	}
}

// TestSealedSpecEditedClearSpec: the clear spec beside the envelope is
// bound to it. With the join endpoint edited after sealing (where the
// token would be sent), inputs-check fails with VerificationFailed, names
// the spec digest, and writes nothing.
func TestSealedSpecEditedClearSpec(t *testing.T) {
	d, _ := sealedWorker(t)
	edited := strings.Replace(string(d.SpecDoc), "apiServerEndpoint: ", "apiServerEndpoint: evil.", 1)
	if edited == string(d.SpecDoc) {
		t.Fatalf("no endpoint in\n%s", d.SpecDoc)
	}
	l, err := spec.Load([]byte(edited), "sealed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d.Config, d.SpecDoc = l.Config, []byte(edited)
	_, err = InputsCheck().Run(context.Background(), d)
	if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !strings.Contains(err.Error(), "specDigest") {
		t.Errorf("edited clear spec: %s %v", c, err)
	}
	if d.Config.Spec.Join.Token.Value != "" {
		t.Error("the token was put into the edited spec")
	}
	if entries, _ := os.ReadDir(d.WorkDir); len(entries) != 0 {
		t.Errorf("a failed unseal wrote %v", entries)
	}
}
