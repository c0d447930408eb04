//go:build kms_vault || kms_all

package vaulttransit

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeVault is a local test double of the Vault HTTP API on a loopback
// TLS server: transit encrypt and decrypt (POST /v1/transit/encrypt/NAME,
// /v1/transit/decrypt/NAME) for derived AES-256-GCM keys, which bind the
// request's context as Vault's derived keys do, and AppRole login
// (POST /v1/auth/approle/login). tokens maps an accepted X-Vault-Token to
// who holds it; calls records "<op> by <who>".
type fakeVault struct {
	*httptest.Server
	mu       sync.Mutex
	keys     map[string]cipher.AEAD
	tokens   map[string]string
	approles map[[2]string]string // role ID, secret ID → token
	calls    []string
}

func newFakeVault(t *testing.T, names ...string) *fakeVault {
	f := &fakeVault{keys: map[string]cipher.AEAD{}, tokens: map[string]string{}, approles: map[[2]string]string{}}
	for _, n := range names {
		k := make([]byte, 32)
		rand.Read(k)
		b, _ := aes.NewCipher(k)
		f.keys[n], _ = cipher.NewGCMWithRandomNonce(b)
	}
	f.Server = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func vaultError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string][]string{"errors": {msg}})
}

func (f *fakeVault) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var in map[string]string
	if r.Method != http.MethodPut && r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&in) != nil {
		vaultError(w, http.StatusBadRequest, "bad request")
		return
	}
	reply := func(v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	if r.URL.Path == "/v1/auth/approle/login" {
		tok, ok := f.approles[[2]string{in["role_id"], in["secret_id"]}]
		if !ok {
			vaultError(w, http.StatusBadRequest, "invalid role or secret ID")
			return
		}
		reply(map[string]any{"auth": map[string]any{"client_token": tok, "lease_duration": 3600}})
		return
	}
	who := f.tokens[r.Header.Get("X-Vault-Token")]
	if who == "" {
		vaultError(w, http.StatusForbidden, "permission denied")
		return
	}
	op, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/transit/"), "/")
	aead := f.keys[name]
	if !ok || aead == nil {
		vaultError(w, http.StatusBadRequest, "encryption key not found")
		return
	}
	f.calls = append(f.calls, op+" by "+who)
	context, err := base64.StdEncoding.DecodeString(in["context"])
	if err != nil || len(context) == 0 {
		vaultError(w, http.StatusBadRequest, "missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key")
		return
	}
	switch op {
	case "encrypt":
		pt, err := base64.StdEncoding.DecodeString(in["plaintext"])
		if err != nil {
			vaultError(w, http.StatusBadRequest, "failed to base64-decode plaintext")
			return
		}
		ct := aead.Seal(nil, nil, pt, context)
		reply(map[string]any{"data": map[string]any{"ciphertext": "vault:v1:" + base64.StdEncoding.EncodeToString(ct), "key_version": 1}})
	case "decrypt":
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(in["ciphertext"], "vault:v1:"))
		if err != nil || !strings.HasPrefix(in["ciphertext"], "vault:v1:") || len(raw) < 12+16 {
			vaultError(w, http.StatusBadRequest, "invalid ciphertext")
			return
		}
		pt, err := aead.Open(nil, nil, raw, context)
		if err != nil {
			vaultError(w, http.StatusBadRequest, "cipher: message authentication failed")
			return
		}
		reply(map[string]any{"data": map[string]any{"plaintext": base64.StdEncoding.EncodeToString(pt)}})
	default:
		vaultError(w, http.StatusNotFound, "unsupported path")
	}
}
