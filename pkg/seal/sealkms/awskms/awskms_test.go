//go:build kms_aws || kms_all

package awskms

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms"
	"github.com/machineadm/machineadm/pkg/seal/sealkms/internal/fipstest"
)

// specDigestForTest is a clear spec digest the test envelopes are
// sealed with and opened beside (its form is all Seal and Open check).
var specDigestForTest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const (
	keyARN   = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	otherARN = "arn:aws:kms:eu-west-1:111122223333:key/0000ffff-12ab-34cd-56ef-1234567890ab"
	aliasARN = "arn:aws:kms:eu-west-1:111122223333:alias/machineadm"
)

var items = map[string][]byte{"spec.join.token": []byte("abcdef.0123456789abcdef")}

// isolate points every AWS endpoint and configuration file of the SDK at
// the fakes and an empty directory, so that nothing leaves loopback.
func isolate(t *testing.T, kms, imds string) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"HOME": dir, "AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_ENDPOINT_URL": kms, "AWS_ENDPOINT_URL_KMS": kms, "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds,
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "",
	} {
		t.Setenv(k, v)
	}
}

func TestRoundTripAndRefusals(t *testing.T) {
	fipstest.InChild(t)
	f := newFakeKMS(t, keyARN, otherARN)
	f.aliases[aliasARN] = keyARN
	imds := newFakeIMDS(t, "machine-role", "ASIAMACHINE", "machine-session-token")
	isolate(t, f.URL, imds.URL)

	// The operator seals with credentials from the environment.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAOPERATOR")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "operator-secret")
	r, err := seal.ParseRecipient("aws-kms:" + aliasARN)
	if err != nil {
		t.Fatal(err)
	}
	if r.String() != "aws-kms:"+aliasARN || r.Type() != Type {
		t.Errorf("recipient %s %s", r.Type(), r.String())
	}
	b := seal.Binding{ClusterName: "kubernetes", MachineName: "w1", SpecDigest: specDigestForTest}
	env, err := seal.Seal(b, items, r)
	if err != nil {
		t.Fatal(err)
	}
	if st := env.Recipients[0]; st.KeyID != keyARN || st.Suite != Suite {
		t.Errorf("stanza %+v", st)
	}
	if c := f.calls[0]; c.Op != "Encrypt" || c.AccessKeyID != "AKIAOPERATOR" || c.Region != "eu-west-1" ||
		c.Context[sealkms.ContextCluster] != "kubernetes" || c.Context[sealkms.ContextMachine] != "w1" {
		t.Errorf("Encrypt call %+v", c)
	}

	// The machine opens with its instance profile (IMDSv2).
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	ids, err := seal.ParseIdentities([]byte("MACHINEADM-AWS-KMS-IDENTITY\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "w1"}, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Items["spec.join.token"], items["spec.join.token"]) || got.By.Type != Type || got.By.KeyID != keyARN {
		t.Errorf("opened by %+v", got.By)
	}
	if c := f.calls[len(f.calls)-1]; c.Op != "Decrypt" || c.AccessKeyID != "ASIAMACHINE" || c.SessionToken != "machine-session-token" {
		t.Errorf("Decrypt call %+v, want the instance profile's credentials", c)
	}

	refused := func(name string, e *seal.Envelope) {
		t.Helper()
		_, err := seal.Open(e, seal.Expect{SpecDigest: specDigestForTest}, ids...)
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !errors.Is(err, seal.ErrAuthentication) {
			t.Errorf("%s: %v, want VerificationFailed", name, err)
		}
	}
	// A stanza replayed into an envelope for another machine: KMS refuses
	// the changed encryption context.
	other, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w2", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	other.Recipients = env.Recipients
	refused("replayed into another machine's envelope", other)
	// The stanza names another key.
	wrong := *env
	wrong.Recipients = []seal.Stanza{env.Recipients[0]}
	wrong.Recipients[0].KeyID = otherARN
	refused("wrong key", &wrong)
	// A changed byte in the ciphertext blob.
	blob, _ := base64.StdEncoding.DecodeString(env.Recipients[0].WrappedKey)
	blob[len(blob)-3] ^= 1
	flipped := *env
	flipped.Recipients = []seal.Stanza{env.Recipients[0]}
	flipped.Recipients[0].WrappedKey = base64.StdEncoding.EncodeToString(blob)
	refused("changed blob", &flipped)
	// A key service that answers "try again" (503) is not a tampered
	// envelope: the machine retries (PayloadUnavailable, exit code 1).
	f.down = http.StatusServiceUnavailable
	if _, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest}, ids...); !errors.Is(err, seal.ErrUnavailable) {
		t.Errorf("service unavailable: %v, want PayloadUnavailable", err)
	} else if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable {
		t.Errorf("service unavailable: class %s, want PayloadUnavailable", c)
	}
	f.down = 0
	// No credentials at all (the instance has no profile): refused, not hung.
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f.URL) // answers 400 to IMDS requests
	refused("no credentials", env)
}

func TestParseRecipient(t *testing.T) {
	for _, s := range []string{
		"aws-kms:" + keyARN, "aws-kms:" + aliasARN, "aws-kms:arn:aws-us-gov:kms:us-gov-west-1:111122223333:key/x",
	} {
		if _, err := ParseRecipient(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{
		"aws-kms:", "aws-kms:1234abcd-12ab", "aws-kms:arn:aws:s3:eu-west-1:111122223333:key/x",
		"aws-kms:arn:aws:kms::111122223333:key/x", "aws-kms:arn:aws:kms:eu-west-1:111122223333:key/",
		"aws-kms:arn:aws:kms:eu-west-1:111122223333:grant/x",
	} {
		if _, err := seal.ParseRecipient(s); err == nil || !strings.Contains(err.Error(), "ARN") {
			t.Errorf("%s: %v, want an ARN error", s, err)
		}
	}
	if _, err := seal.ParseIdentities([]byte("MACHINEADM-AWS-KMS-IDENTITY:region=x\n")); err == nil {
		t.Error("identity options accepted")
	}
}

// TestFIPSOnly: sealing and opening work in FIPS 140-3 only mode.
func TestFIPSOnly(t *testing.T) { fipstest.Rerun(t, "TestRoundTripAndRefusals") }
