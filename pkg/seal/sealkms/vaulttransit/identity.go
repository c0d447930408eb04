//go:build kms_vault || kms_all

package vaulttransit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	vault "github.com/hashicorp/vault/api"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms"
)

// identity is the machine's Vault auth method.
type identity struct {
	address, auth, tokenFile, roleIDFile, secretIDFile, approleMount, caFile, namespace string
}

func (*identity) Type() string  { return Type }
func (*identity) KeyID() string { return "" }

// readSecretFile reads a token or secret ID file: a regular file not
// readable by group or others. Errors never include the content.
func readSecretFile(option, path string, private bool) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", option, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s %s: not a regular file", option, path)
	}
	if private && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s %s: mode %04o, want no access for group and others (0600)", option, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", option, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s %s: empty", option, path)
	}
	return v, nil
}

// login returns a client for the pinned address holding a token of the
// machine's auth method.
func (id *identity) login(ctx context.Context) (*vault.Client, error) {
	c, err := newClient(id.address, id.caFile, id.namespace)
	if err != nil {
		return nil, err
	}
	c.ClearToken() // never the environment's VAULT_TOKEN: the configured method
	switch id.auth {
	case "token-file":
		tok, err := readSecretFile("token-file", id.tokenFile, true)
		if err != nil {
			return nil, err
		}
		c.SetToken(tok)
	case "approle":
		roleID, err := readSecretFile("role-id-file", id.roleIDFile, false)
		if err != nil {
			return nil, err
		}
		secretID, err := readSecretFile("secret-id-file", id.secretIDFile, true)
		if err != nil {
			return nil, err
		}
		s, err := c.Logical().WriteWithContext(ctx, "auth/"+id.approleMount+"/login", map[string]any{"role_id": roleID, "secret_id": secretID})
		if err != nil {
			return nil, fmt.Errorf("Vault AppRole login: %w", err)
		}
		if s == nil || s.Auth == nil || s.Auth.ClientToken == "" {
			return nil, errors.New("Vault AppRole login returned no token")
		}
		c.SetToken(s.Auth.ClientToken)
	}
	return c, nil
}

// Unwrap is unwrap with a key service that did not answer marked as
// such (sealkms.Unavailable), so the machine retries rather than refuses.
func (id *identity) Unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	key, err := id.unwrap(st, info)
	return key, sealkms.Unavailable(err, vaultStatus(err))
}

func (id *identity) unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	k, err := parseKeyURL(st.KeyID)
	if err != nil {
		return nil, err
	}
	if k.address != id.address {
		return nil, fmt.Errorf("the stanza names the Vault %s; this machine's identity sends its token only to %s", k.address, id.address)
	}
	ct, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	c, err := id.login(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.Logical().WriteWithContext(ctx, k.mount+"/decrypt/"+k.name, map[string]any{
		"ciphertext": string(ct),
		"context":    base64.StdEncoding.EncodeToString(info),
	})
	if err != nil {
		return nil, fmt.Errorf("Vault transit decrypt with %s: %w", st.KeyID, err)
	}
	pt, _ := dataString(s, "plaintext")
	p, err := base64.StdEncoding.DecodeString(pt)
	if err != nil {
		return nil, errors.New("Vault transit decrypt returned no plaintext")
	}
	key, err := sealkms.Unpack(info, p)
	if err != nil {
		clear(p)
		return nil, err
	}
	return key, nil
}

// ParseIdentity parses "MACHINEADM-VAULT-TRANSIT-IDENTITY[:options]" (see
// the package documentation). Files are read when the identity is used.
func ParseIdentity(line string) (seal.Identity, error) {
	opts, err := sealkms.ParseIdentityLine(Type, line, "address", "auth", "token-file", "role-id-file", "secret-id-file", "approle-mount", "ca-file", "namespace")
	if err != nil {
		return nil, err
	}
	id := &identity{
		address: opts["address"], auth: opts["auth"], tokenFile: opts["token-file"], roleIDFile: opts["role-id-file"],
		secretIDFile: opts["secret-id-file"], approleMount: opts["approle-mount"], caFile: opts["ca-file"], namespace: opts["namespace"],
	}
	if id.address == "" {
		id.address = os.Getenv(vault.EnvVaultAddress)
	}
	if id.address == "" {
		return nil, errors.New("the Vault address is required: address=URL or VAULT_ADDR")
	}
	if k, err := parseKeyURL(strings.TrimSuffix(id.address, "/") + "/m/keys/k"); err != nil || k.address != strings.TrimSuffix(id.address, "/") {
		return nil, errors.New("address: want the Vault server's URL, https://HOST:PORT")
	}
	id.address = strings.TrimSuffix(id.address, "/")
	switch id.auth {
	case "", "token-file":
		id.auth = "token-file"
		if id.tokenFile == "" {
			id.tokenFile = DefaultTokenFile
		}
		if id.roleIDFile != "" || id.secretIDFile != "" || id.approleMount != "" {
			return nil, errors.New("role-id-file, secret-id-file and approle-mount need auth=approle")
		}
	case "approle":
		if id.roleIDFile == "" || id.secretIDFile == "" {
			return nil, errors.New("auth=approle needs role-id-file and secret-id-file")
		}
		if id.tokenFile != "" {
			return nil, errors.New("token-file needs auth=token-file")
		}
		if id.approleMount == "" {
			id.approleMount = "approle"
		}
	default:
		return nil, fmt.Errorf("unknown auth method %q: want token-file or approle", id.auth)
	}
	return id, nil
}

func init() {
	sealkms.Register(Type, recipientPrefix, ParseRecipient, ParseIdentity)
}

// vaultStatus is the HTTP status of a Vault API response error, or 0.
func vaultStatus(err error) int {
	var re *vault.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
