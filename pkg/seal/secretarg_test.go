package seal_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
)

// An identity line given where the identity file's path belongs (for
// example --identity "$(cat identity)") is refused without being quoted:
// neither the message nor the error's path shows any of the key.
func TestLoadIdentityFileNeverEchoesAnIdentityGivenAsPath(t *testing.T) {
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	line := id.String()
	secret := line[strings.LastIndex(line, ":")+1:]
	for _, path := range []string{line, " " + line + "\n", filepath.Join(t.TempDir(), line)} {
		_, err := seal.LoadIdentityFile(path)
		if err == nil {
			t.Fatalf("LoadIdentityFile(identity line) succeeded")
		}
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed {
			t.Errorf("class %s, want VerificationFailed", c)
		}
		if msg := err.Error(); strings.Contains(msg, secret[:8]) || !strings.Contains(msg, "identity line") {
			t.Errorf("LoadIdentityFile(identity line): %q; want a refusal that does not quote the key", msg)
		}
	}
	// A real file still opens, and an ordinary missing path is still named.
	p := filepath.Join(t.TempDir(), "identity")
	if err := seal.WriteIdentityFile(p, line, id.Recipient()); err != nil {
		t.Fatal(err)
	}
	if _, err := seal.LoadIdentityFile(p); err != nil {
		t.Errorf("LoadIdentityFile(real file): %v", err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-identity")
	if _, err := seal.LoadIdentityFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadIdentityFile(missing) = %v, want an error naming the path", err)
	}
}

// A string given as a recipient that has no recipient prefix is never
// quoted (it may be a secret pasted by mistake), and an identity line gets
// its own hint.
func TestParseRecipientNeverEchoesWhatItRefuses(t *testing.T) {
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	line := id.String()
	_, err = seal.ParseRecipient(line)
	if err == nil {
		t.Fatal("ParseRecipient(identity line) succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, line[strings.LastIndex(line, ":")+1:][:6]) || !strings.Contains(msg, "identity") || !strings.Contains(msg, "# recipient:") {
		t.Errorf("ParseRecipient(identity line): %q", msg)
	}
	const token = "abcdef.0123456789abcdef"
	_, err = seal.ParseRecipient(token)
	if err == nil {
		t.Fatal("ParseRecipient(token) succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, "abcdef") || !strings.Contains(msg, "hpke:") {
		t.Errorf("ParseRecipient(token): %q, want the accepted prefixes and no echo", msg)
	}
	if _, err := seal.ParseRecipient(id.Recipient()); err != nil {
		t.Errorf("ParseRecipient(recipient): %v", err)
	}
}

// A recipient of a type this binary lacks names the type.
func TestParseRecipientNamesAMissingType(t *testing.T) {
	_, err := seal.ParseRecipient("nosuch-kms:projects/p/keys/k")
	if err == nil || !strings.Contains(err.Error(), `"nosuch-kms" is not in this binary`) {
		t.Errorf("ParseRecipient(unknown type) = %v", err)
	}
}
