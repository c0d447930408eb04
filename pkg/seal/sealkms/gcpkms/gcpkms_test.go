//go:build kms_gcp || kms_all

package gcpkms

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/api/option"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms/internal/fipstest"
)

// specDigestForTest is a clear spec digest the test envelopes are
// sealed with and opened beside (its form is all Seal and Open check).
var specDigestForTest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const (
	keyName   = "projects/p/locations/europe-west1/keyRings/machineadm/cryptoKeys/cluster"
	otherName = "projects/p/locations/europe-west1/keyRings/machineadm/cryptoKeys/other"
	saEmail   = "operator@p.iam.gserviceaccount.com"
)

var items = map[string][]byte{"spec.join.token": []byte("abcdef.0123456789abcdef")}

// operatorCredentials writes a service-account key file, as
// GOOGLE_APPLICATION_CREDENTIALS names on the operator's machine, whose
// token_uri is a fake token endpoint that grants the token "operator-token".
func operatorCredentials(t *testing.T, dir string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	te := newFakeTokenEndpoint(t, jwtFrom(&k.PublicKey, saEmail), "operator-token")
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	js, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k1", "client_email": saEmail, "client_id": "1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri":   te.URL + "/token",
	})
	p := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(p, js, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", p)
}

func TestRoundTripAndRefusals(t *testing.T) {
	fipstest.InChild(t)
	f := newFakeKMS(t, keyName, otherName)
	md := newFakeMetadata(t, "machine-token")
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("CLOUDSDK_CONFIG", dir)
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	t.Setenv("GOOGLE_CLOUD_UNIVERSE_DOMAIN", "")
	operatorCredentials(t, dir)
	f.accept["operator"] = func(tok string) bool { return tok == "operator-token" }
	f.accept["machine"] = func(tok string) bool { return tok == "machine-token" }
	testOptions = []option.ClientOption{option.WithEndpoint(f.URL)}
	t.Cleanup(func() { testOptions = nil })

	// The operator seals with Application Default Credentials (a
	// service-account key file).
	r, err := seal.ParseRecipient("gcp-kms:" + keyName)
	if err != nil {
		t.Fatal(err)
	}
	env, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w1", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	if st := env.Recipients[0]; st.KeyID != keyName || st.Suite != Suite || r.String() != "gcp-kms:"+keyName {
		t.Errorf("stanza %+v", st)
	}

	// The machine opens with the metadata server's service account.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	testOptions = nil
	ids, err := seal.ParseIdentities([]byte("MACHINEADM-GCP-KMS-IDENTITY:endpoint=" + f.URL + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "w1"}, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Items["spec.join.token"], items["spec.join.token"]) || got.By.Type != Type || got.By.KeyID != keyName {
		t.Errorf("opened by %+v", got.By)
	}
	if strings.Join(f.calls, ", ") != "encrypt by operator, decrypt by machine" {
		t.Errorf("calls: %v", f.calls)
	}

	refused := func(name string, e *seal.Envelope) {
		t.Helper()
		_, err := seal.Open(e, seal.Expect{SpecDigest: specDigestForTest}, ids...)
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !errors.Is(err, seal.ErrAuthentication) {
			t.Errorf("%s: %v, want VerificationFailed", name, err)
		}
	}
	// Replayed into an envelope for another machine: the AAD differs.
	testOptions = []option.ClientOption{option.WithEndpoint(f.URL)}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(dir, "sa.json"))
	other, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w2", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	testOptions = nil
	other.Recipients = env.Recipients
	refused("replayed into another machine's envelope", other)
	// The stanza names another key.
	wrong := *env
	wrong.Recipients = []seal.Stanza{env.Recipients[0]}
	wrong.Recipients[0].KeyID = otherName
	refused("wrong key", &wrong)
	// A changed byte of the ciphertext.
	ct, _ := base64.StdEncoding.DecodeString(env.Recipients[0].WrappedKey)
	ct[5] ^= 1
	flipped := *env
	flipped.Recipients = []seal.Stanza{env.Recipients[0]}
	flipped.Recipients[0].WrappedKey = base64.StdEncoding.EncodeToString(ct)
	refused("changed ciphertext", &flipped)
	// A key service that fails (500; the client retries 503 itself until
	// sealkms.CallTimeout, which is a deadline, also unavailable) is not a
	// tampered envelope: the machine retries (PayloadUnavailable, exit
	// code 1).
	f.down = http.StatusInternalServerError
	if _, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest}, ids...); !errors.Is(err, seal.ErrUnavailable) {
		t.Errorf("service unavailable: %v, want PayloadUnavailable", err)
	} else if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable {
		t.Errorf("service unavailable: class %s, want PayloadUnavailable", c)
	}
	f.down = 0
	// A machine whose service account the KMS does not accept.
	delete(f.accept, "machine")
	refused("unauthorised service account", env)
}

func TestParse(t *testing.T) {
	for _, s := range []string{
		"gcp-kms:", "gcp-kms:projects/p/locations/l/keyRings/r", "gcp-kms:" + keyName + "/cryptoKeyVersions/1",
		"gcp-kms:projects/p/locations/l/keyRings/r/cryptoKeys/", "gcp-kms:arn:aws:kms:x",
	} {
		if _, err := seal.ParseRecipient(s); err == nil || !strings.Contains(err.Error(), "CryptoKey") {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := seal.ParseIdentities([]byte("MACHINEADM-GCP-KMS-IDENTITY:project=p\n")); err == nil {
		t.Error("unknown identity option accepted")
	}
}

// TestFIPSOnly: sealing and opening work in FIPS 140-3 only mode.
func TestFIPSOnly(t *testing.T) { fipstest.Rerun(t, "TestRoundTripAndRefusals") }
