//go:build kms_vault || kms_all

package vaulttransit

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms/internal/fipstest"
)

// specDigestForTest is a clear spec digest the test envelopes are
// sealed with and opened beside (its form is all Seal and Open check).
var specDigestForTest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var items = map[string][]byte{"spec.join.token": []byte("abcdef.0123456789abcdef")}

func write(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRoundTripAndRefusals(t *testing.T) {
	fipstest.InChild(t)
	f := newFakeVault(t, "machineadm", "other")
	dir := t.TempDir()
	ca := write(t, filepath.Join(dir, "ca.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})), 0o644)
	for k, v := range map[string]string{"HOME": dir, "VAULT_ADDR": "", "VAULT_CACERT": ca, "VAULT_TOKEN": "operator-token", "VAULT_NAMESPACE": "", "VAULT_AGENT_ADDR": ""} {
		t.Setenv(k, v)
	}
	f.tokens["operator-token"] = "operator"
	f.tokens["machine-token"] = "machine"
	f.approles[[2]string{"role-1", "secret-1"}] = "approle-token"
	f.tokens["approle-token"] = "approle"

	rcpt := "vault-transit:" + f.URL + "/transit/keys/machineadm"
	r, err := seal.ParseRecipient(rcpt)
	if err != nil {
		t.Fatal(err)
	}
	env, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w1", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	if st := env.Recipients[0]; st.KeyID != f.URL+"/transit/keys/machineadm" || r.String() != rcpt {
		t.Errorf("stanza %+v", st)
	}

	// The machine: a token file (Vault Agent's sink) and AppRole.
	t.Setenv("VAULT_TOKEN", "operator-token") // must not be used by the machine's identity
	t.Setenv("VAULT_CACERT", "")
	tokenFile := write(t, filepath.Join(dir, "vault-token"), "machine-token\n", 0o600)
	write(t, filepath.Join(dir, "role-id"), "role-1\n", 0o644)
	write(t, filepath.Join(dir, "secret-id"), "secret-1\n", 0o600)
	lines := map[string]string{
		"machine": "MACHINEADM-VAULT-TRANSIT-IDENTITY:address=" + f.URL + ",ca-file=" + ca + ",token-file=" + tokenFile,
		"approle": "MACHINEADM-VAULT-TRANSIT-IDENTITY:address=" + f.URL + ",ca-file=" + ca + ",auth=approle,role-id-file=" +
			filepath.Join(dir, "role-id") + ",secret-id-file=" + filepath.Join(dir, "secret-id"),
	}
	for who, line := range lines {
		ids, err := seal.ParseIdentities([]byte(line + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		f.calls = nil
		got, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "w1"}, ids...)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if !bytes.Equal(got.Items["spec.join.token"], items["spec.join.token"]) || got.By.Type != Type || strings.Join(f.calls, ",") != "decrypt by "+who {
			t.Errorf("%s: opened by %+v, calls %v", who, got.By, f.calls)
		}
	}

	ids, _ := seal.ParseIdentities([]byte(lines["machine"] + "\n"))
	refused := func(name, want string, e *seal.Envelope) {
		t.Helper()
		_, err := seal.Open(e, seal.Expect{SpecDigest: specDigestForTest}, ids...)
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !errors.Is(err, seal.ErrAuthentication) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want VerificationFailed with %q", name, err, want)
		}
	}
	t.Setenv("VAULT_CACERT", ca)
	other, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w2", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	other.Recipients = env.Recipients
	refused("replayed into another machine's envelope", "authentication failed", other)
	wrong := *env
	wrong.Recipients = []seal.Stanza{env.Recipients[0]}
	wrong.Recipients[0].KeyID = f.URL + "/transit/keys/other"
	refused("wrong key", "authentication failed", &wrong)
	ct, _ := base64.StdEncoding.DecodeString(env.Recipients[0].WrappedKey)
	ct[len(ct)-2] ^= 1
	flipped := *env
	flipped.Recipients = []seal.Stanza{env.Recipients[0]}
	flipped.Recipients[0].WrappedKey = base64.StdEncoding.EncodeToString(ct)
	refused("changed ciphertext", "", &flipped)
	elsewhere := *env
	elsewhere.Recipients = []seal.Stanza{env.Recipients[0]}
	elsewhere.Recipients[0].KeyID = "https://attacker.example:8200/transit/keys/machineadm"
	n := len(f.calls)
	refused("another Vault", "sends its token only to", &elsewhere)
	if len(f.calls) != n {
		t.Error("a request was sent for a stanza naming another Vault")
	}
	os.Chmod(tokenFile, 0o644)
	refused("token file readable by others", "mode 0644", env)
	os.Chmod(tokenFile, 0o600)
	delete(f.tokens, "machine-token")
	refused("revoked token", "permission denied", env)

	// A Vault that does not answer is not a tampered envelope: the machine
	// retries (PayloadUnavailable, exit code 1).
	f.tokens["machine-token"] = "machine"
	f.Close()
	_, err = seal.Open(env, seal.Expect{SpecDigest: specDigestForTest}, ids...)
	if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !errors.Is(err, seal.ErrUnavailable) {
		t.Errorf("Vault down: %v (class %s), want PayloadUnavailable", err, c)
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{
		"vault-transit:", "vault-transit:https://v:8200/transit/k", "vault-transit:https://v:8200/keys/k",
		"vault-transit:https://v:8200/transit/keys/", "vault-transit:https://v:8200/transit/keys/a/b",
		"vault-transit:ftp://v/transit/keys/k", "vault-transit:https://v:8200/transit/keys/k?x=1",
	} {
		if _, err := seal.ParseRecipient(s); err == nil || !strings.Contains(err.Error(), "transit key URL") {
			t.Errorf("%s: %v", s, err)
		}
	}
	k, err := parseKeyURL("https://v:8200/team/a/transit/keys/k")
	if err != nil || k.address != "https://v:8200" || k.mount != "team/a/transit" || k.name != "k" {
		t.Errorf("nested mount: %+v %v", k, err)
	}
	t.Setenv("VAULT_ADDR", "")
	for line, want := range map[string]string{
		"MACHINEADM-VAULT-TRANSIT-IDENTITY":                                        "address is required",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:address=https://v:8200/x":               "address: want",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:address=https://v:8200,auth=ldap":       "unknown auth method",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:address=https://v:8200,auth=approle":    "needs role-id-file",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:address=https://v:8200,role-id-file=/r": "need auth=approle",
	} {
		if _, err := seal.ParseIdentities([]byte(line + "\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	t.Setenv("VAULT_ADDR", "https://v:8200/")
	ids, err := seal.ParseIdentities([]byte("MACHINEADM-VAULT-TRANSIT-IDENTITY\n"))
	if err != nil || ids[0].(*identity).address != "https://v:8200" || ids[0].(*identity).tokenFile != DefaultTokenFile {
		t.Errorf("defaults: %+v %v", ids, err)
	}
}

// TestFIPSOnly: sealing and opening work in FIPS 140-3 only mode.
func TestFIPSOnly(t *testing.T) { fipstest.Rerun(t, "TestRoundTripAndRefusals") }
