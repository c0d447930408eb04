//go:build kms_vault || kms_all

// Package vaulttransit registers the "vault-transit" recipient type of
// machineadm's sealed secrets (build tag kms_vault or kms_all): the data
// key is encrypted by a HashiCorp Vault (or OpenBao) transit secrets
// engine key through github.com/hashicorp/vault/api. The plaintext sent is
// sealkms.Pack (the first 16 bytes of SHA-256(seal.WrapInfo) and the data
// key) and the transit context is seal.WrapInfo, so the wrap is bound to
// the envelope's cluster and machine with any transit key, and with a
// derived key (derived=true) Vault itself refuses another context.
//
// Recipient string: "vault-transit:" and the key's URL, the Vault address
// followed by the engine's mount path and "/keys/NAME"
// ("vault-transit:https://vault.example:8200/transit/keys/machineadm"); it
// is the stanza's keyID. Sealing uses the operator's token: VAULT_TOKEN,
// else ~/.vault-token (what `vault login` writes); the other VAULT_*
// variables (VAULT_CACERT, VAULT_NAMESPACE, …) apply. The policy needs
// update on MOUNT/encrypt/NAME.
//
// Identity line: "MACHINEADM-VAULT-TRANSIT-IDENTITY", optionally followed
// by ":" and comma-separated options:
//
//	address=URL          the only Vault the machine sends its token to
//	                     (default VAULT_ADDR; one of the two is required)
//	auth=token-file      (default) read a token from token-file, for
//	                     example the sink of a Vault Agent auto-auth
//	token-file=PATH      default /etc/machineadm/vault-token, mode 0600
//	auth=approle         log in with AppRole (auth/MOUNT/login)
//	role-id-file=PATH    the role ID
//	secret-id-file=PATH  the secret ID, mode 0600
//	approle-mount=NAME   default approle
//	ca-file=PATH         PEM CA bundle of the Vault server's certificate
//	namespace=NS         Vault Enterprise namespace
//
// The machine's policy needs update on MOUNT/decrypt/NAME.
package vaulttransit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	vault "github.com/hashicorp/vault/api"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms"
)

// Type is the stanza type of Vault transit recipients.
const Type = "vault-transit"

// DefaultTokenFile is the token file of the default auth method.
const DefaultTokenFile = "/etc/machineadm/vault-token"

const recipientPrefix = Type + ":"

// keyURL is a parsed transit key URL.
type keyURL struct {
	address, mount, name string
}

func parseKeyURL(s string) (keyURL, error) {
	bad := func(why string) (keyURL, error) {
		return keyURL{}, fmt.Errorf("want a transit key URL https://VAULT:8200/MOUNT/keys/NAME: %s", why)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad(err.Error())
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad("an http(s) URL without user, query or fragment is required")
	}
	i := strings.LastIndex(u.Path, "/keys/")
	if i < 0 {
		return bad("the path must end in /keys/NAME")
	}
	mount, name := strings.Trim(u.Path[:i], "/"), u.Path[i+len("/keys/"):]
	if mount == "" || name == "" || strings.Contains(name, "/") || strings.Contains(mount, "//") {
		return bad("the mount path and the key name are required")
	}
	return keyURL{address: u.Scheme + "://" + u.Host, mount: mount, name: name}, nil
}

type recipient struct {
	s string
	k keyURL
}

func (r *recipient) Type() string   { return Type }
func (r *recipient) String() string { return r.s }

func newClient(address, caFile, namespace string) (*vault.Client, error) {
	cfg := vault.DefaultConfig() // VAULT_* environment
	if cfg.Error != nil {
		return nil, cfg.Error
	}
	cfg.Address = address
	cfg.Timeout = sealkms.CallTimeout
	if caFile != "" {
		if err := cfg.ConfigureTLS(&vault.TLSConfig{CACert: caFile}); err != nil {
			return nil, fmt.Errorf("ca-file: %w", err)
		}
	}
	c, err := vault.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	if namespace != "" {
		c.SetNamespace(namespace)
	}
	return c, nil
}

func (r *recipient) Wrap(dataKey, info []byte) (seal.Stanza, error) {
	c, err := newClient(r.k.address, "", "")
	if err != nil {
		return seal.Stanza{}, err
	}
	if c.Token() == "" { // VAULT_TOKEN unset: the token `vault login` stored
		home, _ := os.UserHomeDir()
		b, err := os.ReadFile(filepath.Join(home, ".vault-token"))
		if err != nil {
			return seal.Stanza{}, errors.New("no Vault token: set VAULT_TOKEN or run `vault login`")
		}
		c.SetToken(strings.TrimSpace(string(b)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	s, err := c.Logical().WriteWithContext(ctx, r.k.mount+"/encrypt/"+r.k.name, map[string]any{
		"plaintext": base64.StdEncoding.EncodeToString(sealkms.Pack(info, dataKey)),
		"context":   base64.StdEncoding.EncodeToString(info),
	})
	if err != nil {
		return seal.Stanza{}, fmt.Errorf("Vault transit encrypt with %s: %w", r.s[len(recipientPrefix):], err)
	}
	ct, _ := dataString(s, "ciphertext")
	if !strings.HasPrefix(ct, "vault:") {
		return seal.Stanza{}, errors.New("Vault transit encrypt returned no ciphertext")
	}
	return seal.Stanza{Type: Type, KeyID: r.s[len(recipientPrefix):], WrappedKey: base64.StdEncoding.EncodeToString([]byte(ct))}, nil
}

func dataString(s *vault.Secret, key string) (string, bool) {
	if s == nil || s.Data == nil {
		return "", false
	}
	v, ok := s.Data[key].(string)
	return v, ok
}

// ParseRecipient parses "vault-transit:https://VAULT:8200/MOUNT/keys/NAME".
func ParseRecipient(s string) (seal.Recipient, error) {
	k, err := parseKeyURL(strings.TrimPrefix(s, recipientPrefix))
	if err != nil {
		return nil, err
	}
	return &recipient{s: s, k: k}, nil
}
