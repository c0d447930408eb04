package sealage

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
)

// specDigestForTest is a clear spec digest the test envelopes are
// sealed with and opened beside (its form is all Seal and Open check).
var specDigestForTest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var items = map[string][]byte{"spec.join.token": []byte("abcdef.0123456789abcdef")}

func TestRoundTripAndTamper(t *testing.T) {
	if os.Getenv("SEAL_FIPS_CHILD") != "" {
		t.Skip("FIPS child")
	}
	for _, hybrid := range []bool{false, true} {
		line, rcpt, err := Generate(hybrid)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := seal.ParseIdentities([]byte("# comment\n" + line + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := seal.ParseRecipient(rcpt)
		if err != nil {
			t.Fatal(err)
		}
		b := seal.Binding{ClusterName: "kubernetes", MachineName: "w1", SpecDigest: specDigestForTest}
		env, err := seal.Seal(b, items, r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "w1"}, ids...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Items["spec.join.token"], items["spec.join.token"]) || got.By.Type != Type || got.By.KeyID != seal.KeyIDOf(rcpt) {
			t.Errorf("hybrid=%v: opened %+v", hybrid, got.By)
		}
		// every byte of the age file in the stanza
		raw, _ := base64.StdEncoding.DecodeString(env.Recipients[0].WrappedKey)
		for i := 0; i < len(raw); i += 7 {
			e := *env
			e.Recipients = []seal.Stanza{env.Recipients[0]}
			c := bytes.Clone(raw)
			c[i] ^= 0x20
			e.Recipients[0].WrappedKey = base64.StdEncoding.EncodeToString(c)
			_, err := seal.Open(&e, seal.Expect{SpecDigest: specDigestForTest}, ids...)
			if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !seal.IsOpenError(err) {
				t.Fatalf("hybrid=%v byte %d: %v", hybrid, i, err)
			}
		}
		// a stanza replayed into an envelope for another machine
		other, _ := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w2", SpecDigest: specDigestForTest}, items, r)
		other.Recipients = env.Recipients
		if _, err := seal.Open(other, seal.Expect{SpecDigest: specDigestForTest}, ids...); !errors.Is(err, seal.ErrAuthentication) {
			t.Errorf("replayed stanza: %v", err)
		}
	}
}

// TestFIPSOnly runs itself with GODEBUG=fips140=only: seal and open with
// the default hpke suite (and the hybrid one) work; age is refused with a
// clear error when parsing a recipient, an identity and when generating.
func TestFIPSOnly(t *testing.T) {
	if os.Getenv("SEAL_FIPS_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFIPSOnly$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "SEAL_FIPS_CHILD=1", "GODEBUG=fips140=only")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "fips140 enforced") {
			t.Fatalf("FIPS child failed: %v\n%s", err, out)
		}
		return
	}
	if !fipsEnforced() {
		t.Fatal("GODEBUG=fips140=only did not enforce FIPS mode")
	}
	t.Log("fips140 enforced")
	for _, suite := range []string{seal.HPKESuiteP384, seal.HPKESuiteMLKEM768P256} {
		id, err := seal.GenerateHPKEIdentity(suite)
		if err != nil {
			t.Fatalf("%s keygen: %v", suite, err)
		}
		r, err := seal.ParseRecipient(id.Recipient())
		if err != nil {
			t.Fatal(err)
		}
		env, err := seal.Seal(seal.Binding{ClusterName: "k", MachineName: "m", SpecDigest: specDigestForTest}, items, r)
		if err != nil {
			t.Fatalf("%s seal: %v", suite, err)
		}
		parsed, err := seal.ParseIdentity(id.String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "k", MachineName: "m"}, parsed); err != nil {
			t.Fatalf("%s open: %v", suite, err)
		}
	}
	var fe *seal.FIPSError
	if _, _, err := Generate(false); !errors.As(err, &fe) || !strings.Contains(err.Error(), "GODEBUG=fips140=only") || !strings.Contains(err.Error(), "hpke") {
		t.Errorf("age keygen: %v", err)
	}
	if _, err := seal.ParseRecipient("age1cy0su9fwf3gf9mw868g5yut09p6nytfmmnktexz2ya5uqg9vl9sss4euqm"); !errors.As(err, &fe) {
		t.Errorf("age recipient: %v", err)
	}
	if _, err := seal.ParseIdentity("AGE-SECRET-KEY-184JMZMVQH3E6U0PSL869004Y3U2NYV7R30EU99CSEDNPH02YUVFSZW44VU"); !errors.As(err, &fe) {
		t.Errorf("age identity: %v", err)
	} else {
		t.Logf("age refused: %v", err)
	}
}
