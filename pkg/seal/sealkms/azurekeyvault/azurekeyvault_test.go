//go:build kms_azure || kms_all

package azurekeyvault

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
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

const machineClientID = "11111111-2222-3333-4444-555555555555"

func TestRoundTripAndRefusals(t *testing.T) {
	fipstest.InChild(t)
	kv := newFakeKeyVault(t, "cluster", "other")
	var asked []string
	imds := newFakeIMDS(t, &asked)
	testTransport = fakeTransport(kv.Server, imds)
	t.Cleanup(func() { testTransport = nil })
	dir := t.TempDir()
	for _, k := range []string{"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
		"AZURE_USERNAME", "AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IDENTITY_SERVER_THUMBPRINT",
		"IMDS_ENDPOINT", "MSI_ENDPOINT", "MSI_SECRET", "AZURE_TOKEN_CREDENTIALS"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	t.Setenv("HOME", dir)
	t.Setenv("PATH", dir) // no az, azd or pwsh to fall back to
	kv.tokens["token-system"] = "operator"
	kv.tokens["token-"+machineClientID] = "machine"

	// The operator seals through DefaultAzureCredential (here its managed
	// identity step answers).
	rcpt := "azure-keyvault:https://" + fakeVaultHost + "/keys/cluster"
	r, err := seal.ParseRecipient(rcpt)
	if err != nil {
		t.Fatal(err)
	}
	env, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w1", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	kid := "https://" + fakeVaultHost + "/keys/cluster/v1"
	if st := env.Recipients[0]; st.KeyID != kid || st.Suite != Suite || r.String() != rcpt {
		t.Errorf("stanza %+v", st)
	}

	// The machine unwraps with its user-assigned managed identity.
	ids, err := seal.ParseIdentities([]byte("MACHINEADM-AZURE-KEYVAULT-IDENTITY:client-id=" + machineClientID + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "w1"}, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Items["spec.join.token"], items["spec.join.token"]) || got.By.Type != Type || got.By.KeyID != kid {
		t.Errorf("opened by %+v", got.By)
	}
	if strings.Join(kv.calls, ", ") != "wrapkey by operator, unwrapkey by machine" || asked[len(asked)-1] != machineClientID {
		t.Errorf("calls %v, IMDS asked for %q", kv.calls, asked)
	}

	refused := func(name string, e *seal.Envelope) {
		t.Helper()
		_, err := seal.Open(e, seal.Expect{SpecDigest: specDigestForTest}, ids...)
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !errors.Is(err, seal.ErrAuthentication) {
			t.Errorf("%s: %v, want VerificationFailed", name, err)
		}
	}
	other, err := seal.Seal(seal.Binding{ClusterName: "kubernetes", MachineName: "w2", SpecDigest: specDigestForTest}, items, r)
	if err != nil {
		t.Fatal(err)
	}
	other.Recipients = env.Recipients
	refused("replayed into another machine's envelope", other)
	wrong := *env
	wrong.Recipients = []seal.Stanza{env.Recipients[0]}
	wrong.Recipients[0].KeyID = "https://" + fakeVaultHost + "/keys/other/v1"
	refused("wrong key", &wrong)
	wk, _ := base64.StdEncoding.DecodeString(env.Recipients[0].WrappedKey)
	wk[9] ^= 1
	flipped := *env
	flipped.Recipients = []seal.Stanza{env.Recipients[0]}
	flipped.Recipients[0].WrappedKey = base64.StdEncoding.EncodeToString(wk)
	refused("changed wrapped key", &flipped)
	// A key service that answers "try again" (503) is not a tampered
	// envelope: the machine retries (PayloadUnavailable, exit code 1).
	kv.down = http.StatusServiceUnavailable
	if _, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest}, ids...); !errors.Is(err, seal.ErrUnavailable) {
		t.Errorf("service unavailable: %v, want PayloadUnavailable", err)
	} else if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable {
		t.Errorf("service unavailable: class %s, want PayloadUnavailable", c)
	}
	kv.down = 0
	delete(kv.tokens, "token-"+machineClientID)
	refused("identity without access", env)
}

func TestParse(t *testing.T) {
	for _, s := range []string{
		"azure-keyvault:", "azure-keyvault:http://v.vault.azure.net/keys/k", "azure-keyvault:https://v.vault.azure.net/secrets/k",
		"azure-keyvault:https://v.vault.azure.net/keys/", "azure-keyvault:https://v.vault.azure.net/keys/k/1/2",
		"azure-keyvault:https://v.vault.azure.net/keys/k?x=1", "azure-keyvault:https://u@v.vault.azure.net/keys/k",
	} {
		if _, err := seal.ParseRecipient(s); err == nil || !strings.Contains(err.Error(), "key identifier") {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := parseKeyID("https://v.vault.azure.net/keys/k", true); err == nil {
		t.Error("a stanza keyID without version accepted")
	}
	if _, err := seal.ParseIdentities([]byte("MACHINEADM-AZURE-KEYVAULT-IDENTITY:tenant=x\n")); err == nil {
		t.Error("unknown identity option accepted")
	}
}

// TestFIPSOnly: sealing and opening work in FIPS 140-3 only mode.
func TestFIPSOnly(t *testing.T) { fipstest.Rerun(t, "TestRoundTripAndRefusals") }
