package sealtpm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-tpm/tpm2/transport"
	"github.com/google/go-tpm/tpm2/transport/linuxudstpm"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
)

// specDigestForTest is a clear spec digest the test envelopes are
// sealed with and opened beside (its form is all Seal and Open check).
var specDigestForTest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// startSWTPM starts Debian's swtpm (a real software TPM 2.0) with its
// state in a fresh temporary directory and points OpenTPM at it.
func startSWTPM(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("swtpm")
	if err != nil {
		t.Fatalf("swtpm is required (apt-get install swtpm swtpm-tools; hack/install-deps.sh): %v", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "tpm.sock")
	cmd := exec.Command(bin, "socket", "--tpm2",
		"--tpmstate", "dir="+dir,
		"--server", "type=unixio,path="+sock,
		"--ctrl", "type=unixio,path="+filepath.Join(dir, "ctrl.sock"),
		"--flags", "not-need-init,startup-clear")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("swtpm did not create %s: %s", sock, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	prev := OpenTPM
	OpenTPM = func() (transport.TPMCloser, error) { return linuxudstpm.Open(sock) }
	t.Cleanup(func() { OpenTPM = prev })
	return dir
}

var items = map[string][]byte{
	"spec.join.token":                  []byte("abcdef.0123456789abcdef"),
	"spec.controlPlane.pki.dir/ca.key": []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"),
}

func TestSWTPMRoundTripAndTamper(t *testing.T) {
	startSWTPM(t)
	id, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	// the identity as a machine reads it back from its 0600 file
	path := filepath.Join(t.TempDir(), "identity")
	if err := seal.WriteIdentityFile(path, id.String(), id.Recipient()); err != nil {
		t.Fatal(err)
	}
	ids, err := seal.LoadIdentityFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := seal.ParseRecipient(id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	env, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "cp1", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "cp1"}, ids...)
	if err != nil {
		t.Fatal(err)
	}
	for p, v := range items {
		if !bytes.Equal(got.Items[p], v) {
			t.Errorf("%s: %q", p, got.Items[p])
		}
	}
	if got.By.Type != Type || got.By.KeyID != id.KeyID() {
		t.Errorf("opened by %+v", got.By)
	}
	raw, _ := base64.StdEncoding.DecodeString(env.Recipients[0].WrappedKey)
	for _, i := range []int{1, 40, 64, 70, len(raw) - 1} { // enc X, enc Y, ciphertext, tag
		e := *env
		c := bytes.Clone(raw)
		c[i] ^= 1
		e.Recipients = []seal.Stanza{env.Recipients[0]}
		e.Recipients[0].WrappedKey = base64.StdEncoding.EncodeToString(c)
		_, err := seal.Open(&e, seal.Expect{SpecDigest: specDigestForTest}, ids...)
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed {
			t.Errorf("byte %d changed: %v", i, err)
		}
	}
}

// TestSWTPMOtherTPM: a key enrolled in one TPM does not open in another.
func TestSWTPMOtherTPM(t *testing.T) {
	startSWTPM(t)
	id, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := seal.ParseRecipient(id.Recipient())
	env, err := seal.Seal(seal.Binding{ClusterName: "k", MachineName: "m", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	startSWTPM(t) // a second, different TPM
	_, err = seal.Open(env, seal.Expect{SpecDigest: specDigestForTest}, id)
	if !errors.Is(err, seal.ErrAuthentication) || !seal.IsOpenError(err) {
		t.Fatalf("opened with another TPM: %v", err)
	}
	t.Logf("other TPM: %v", err)
}
