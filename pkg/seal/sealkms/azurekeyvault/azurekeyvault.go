//go:build kms_azure || kms_all

// Package azurekeyvault registers the "azure-keyvault" recipient type of
// machineadm's sealed secrets (build tag kms_azure or kms_all): the data
// key is wrapped by an RSA key in Azure Key Vault or Managed HSM (WrapKey
// and UnwrapKey with RSA-OAEP-256) through
// github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys. RSA-OAEP
// has no additional data, so the wrapped plaintext is sealkms.Pack: the
// first 16 bytes of SHA-256(seal.WrapInfo) and the 32-byte data key, and
// a wrapped key copied into an envelope for another cluster or machine
// does not open.
//
// Recipient string: "azure-keyvault:" and the key identifier
// ("azure-keyvault:https://VAULT.vault.azure.net/keys/NAME/VERSION"; without
// VERSION the current version wraps). The stanza's keyID is the versioned
// key identifier Key Vault reports. Sealing uses the operator's
// credentials through azidentity.DefaultAzureCredential (AZURE_* service
// principal environment, workload identity, managed identity, Azure CLI,
// …); the keys/wrapKey data action is needed (role "Key Vault Crypto
// User", or an access policy with wrapKey).
//
// Identity line: "MACHINEADM-AZURE-KEYVAULT-IDENTITY", optionally
// ":client-id=GUID" for a user-assigned managed identity. The machine
// unwraps with its managed identity (azidentity.ManagedIdentityCredential,
// the instance metadata service on a VM); the keys/unwrapKey data action
// is needed. The SDK sends the token only to a host in the domain the
// vault's authentication challenge names (vault.azure.net and the
// sovereign clouds' domains).
package azurekeyvault

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms"
)

// Type is the stanza type of Azure Key Vault recipients.
const Type = "azure-keyvault"

// Suite is the key wrap algorithm of azure-keyvault stanzas.
const Suite = string(azkeys.EncryptionAlgorithmRSAOAEP256)

const recipientPrefix = Type + ":"

// testTransport, set by tests, carries every request of the SDK.
var testTransport policy.Transporter

func clientOptions() azcore.ClientOptions {
	return azcore.ClientOptions{Transport: testTransport}
}

// keyID is a parsed Key Vault key identifier.
type keyID struct {
	vault, name, version string
}

// parseKeyID parses https://HOST/keys/NAME[/VERSION].
func parseKeyID(s string, needVersion bool) (keyID, error) {
	u, err := url.Parse(s)
	bad := func(why string) (keyID, error) {
		return keyID{}, fmt.Errorf("want a key identifier https://VAULT.vault.azure.net/keys/NAME/VERSION: %s", why)
	}
	if err != nil {
		return bad(err.Error())
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad("an https URL without user, query or fragment is required")
	}
	p := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(p) < 2 || len(p) > 3 || p[0] != "keys" || p[1] == "" || len(p) == 3 && p[2] == "" {
		return bad("the path must be /keys/NAME or /keys/NAME/VERSION")
	}
	k := keyID{vault: "https://" + u.Host, name: p[1]}
	if len(p) == 3 {
		k.version = p[2]
	}
	if needVersion && k.version == "" {
		return bad("the version is missing")
	}
	return k, nil
}

type recipient struct {
	s  string
	id keyID
}

func (r *recipient) Type() string   { return Type }
func (r *recipient) String() string { return r.s }

func (r *recipient) Wrap(dataKey, info []byte) (seal.Stanza, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: clientOptions()})
	if err != nil {
		return seal.Stanza{}, fmt.Errorf("Azure credentials: %w", err)
	}
	c, err := azkeys.NewClient(r.id.vault, cred, &azkeys.ClientOptions{ClientOptions: clientOptions()})
	if err != nil {
		return seal.Stanza{}, err
	}
	alg := azkeys.EncryptionAlgorithmRSAOAEP256
	out, err := c.WrapKey(ctx, r.id.name, r.id.version, azkeys.KeyOperationParameters{Algorithm: &alg, Value: sealkms.Pack(info, dataKey)}, nil)
	if err != nil {
		return seal.Stanza{}, fmt.Errorf("Key Vault wrapKey with %s: %w", r.s[len(recipientPrefix):], err)
	}
	if out.KID == nil {
		return seal.Stanza{}, fmt.Errorf("Key Vault wrapKey returned no key identifier")
	}
	kid := string(*out.KID)
	if k, err := parseKeyID(kid, true); err != nil || k.vault != r.id.vault || k.name != r.id.name {
		return seal.Stanza{}, fmt.Errorf("Key Vault wrapKey returned the key identifier %q for %s", kid, r.s)
	}
	return seal.Stanza{Type: Type, KeyID: kid, Suite: Suite, WrappedKey: base64.StdEncoding.EncodeToString(out.Result)}, nil
}

// ParseRecipient parses "azure-keyvault:https://VAULT.vault.azure.net/keys/NAME[/VERSION]".
func ParseRecipient(s string) (seal.Recipient, error) {
	id, err := parseKeyID(strings.TrimPrefix(s, recipientPrefix), false)
	if err != nil {
		return nil, err
	}
	return &recipient{s: s, id: id}, nil
}

// identity is the machine's managed identity.
type identity struct{ clientID string }

func (identity) Type() string  { return Type }
func (identity) KeyID() string { return "" }

// Unwrap is unwrap with a key service that did not answer marked as
// such (sealkms.Unavailable), so the machine retries rather than refuses.
func (id identity) Unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	key, err := id.unwrap(st, info)
	return key, sealkms.Unavailable(err, azureStatus(err))
}

func (id identity) unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	k, err := parseKeyID(st.KeyID, true)
	if err != nil {
		return nil, err
	}
	if st.Suite != Suite {
		return nil, fmt.Errorf("unsupported suite %q, want %s", st.Suite, Suite)
	}
	wrapped, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	opts := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: clientOptions()}
	if id.clientID != "" {
		opts.ID = azidentity.ClientID(id.clientID)
	}
	cred, err := azidentity.NewManagedIdentityCredential(opts)
	if err != nil {
		return nil, fmt.Errorf("managed identity: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	c, err := azkeys.NewClient(k.vault, cred, &azkeys.ClientOptions{ClientOptions: clientOptions()})
	if err != nil {
		return nil, err
	}
	alg := azkeys.EncryptionAlgorithmRSAOAEP256
	out, err := c.UnwrapKey(ctx, k.name, k.version, azkeys.KeyOperationParameters{Algorithm: &alg, Value: wrapped}, nil)
	if err != nil {
		return nil, fmt.Errorf("Key Vault unwrapKey with %s: %w", st.KeyID, err)
	}
	key, err := sealkms.Unpack(info, out.Result)
	if err != nil {
		clear(out.Result)
		return nil, err
	}
	return key, nil
}

// ParseIdentity parses "MACHINEADM-AZURE-KEYVAULT-IDENTITY[:client-id=GUID]".
func ParseIdentity(line string) (seal.Identity, error) {
	opts, err := sealkms.ParseIdentityLine(Type, line, "client-id")
	if err != nil {
		return nil, err
	}
	return identity{clientID: opts["client-id"]}, nil
}

func init() {
	sealkms.Register(Type, recipientPrefix, ParseRecipient, ParseIdentity)
}

// azureStatus is the HTTP status of an Azure SDK response error, or 0.
func azureStatus(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
