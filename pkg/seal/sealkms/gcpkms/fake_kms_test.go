//go:build kms_gcp || kms_all

package gcpkms

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeKMS is a local test double of the Cloud KMS REST API
// (POST /v1/{cryptoKey}:encrypt and :decrypt) on loopback. Each CryptoKey
// is an AES-256-GCM key of its own, authenticated with the request's
// additional authenticated data as Cloud KMS does; CRC32C fields are
// checked and returned as the real API does. Requests must carry a bearer
// token that one of the accepted checks approves; the fake records which.
type fakeKMS struct {
	*httptest.Server
	// down, when not 0, is the status every request is answered with:
	// the service is unavailable or throttles.
	down   int
	mu     sync.Mutex
	keys   map[string]cipher.AEAD
	accept map[string]func(token string) bool
	calls  []string // "<op> by <identity>"
}

func newFakeKMS(t *testing.T, names ...string) *fakeKMS {
	f := &fakeKMS{keys: map[string]cipher.AEAD{}, accept: map[string]func(string) bool{}}
	for _, n := range names {
		k := make([]byte, 32)
		rand.Read(k)
		b, _ := aes.NewCipher(k)
		f.keys[n], _ = cipher.NewGCMWithRandomNonce(b)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func gcpError(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "status": status, "message": msg}})
}

var table = crc32.MakeTable(crc32.Castagnoli)

// crcOK checks an optional CRC32C field (protojson prints int64 as a string).
func crcOK(field *string, b []byte) bool {
	return field == nil || *field == strconv.FormatUint(uint64(crc32.Checksum(b, table)), 10)
}

func crcOf(b []byte) string { return strconv.FormatUint(uint64(crc32.Checksum(b, table)), 10) }

func (f *fakeKMS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != 0 {
		w.WriteHeader(f.down)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	who := ""
	for name, check := range f.accept {
		if ok && check(token) {
			who = name
		}
	}
	if who == "" {
		gcpError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "missing or invalid credentials")
		return
	}
	name, op, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), ":")
	var in struct {
		Plaintext, Ciphertext, AdditionalAuthenticatedData []byte
		PlaintextCrc32c, CiphertextCrc32c                  *string
		AdditionalAuthenticatedDataCrc32c                  *string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		gcpError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		return
	}
	f.calls = append(f.calls, op+" by "+who)
	aead := f.keys[name]
	if aead == nil {
		gcpError(w, http.StatusNotFound, "NOT_FOUND", name+" not found")
		return
	}
	if !crcOK(in.AdditionalAuthenticatedDataCrc32c, in.AdditionalAuthenticatedData) || !crcOK(in.CiphertextCrc32c, in.Ciphertext) {
		gcpError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "checksum mismatch")
		return
	}
	out := map[string]any{"protectionLevel": "SOFTWARE"}
	switch op {
	case "encrypt":
		if !crcOK(in.PlaintextCrc32c, in.Plaintext) {
			gcpError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "checksum mismatch")
			return
		}
		ct := aead.Seal(nil, nil, in.Plaintext, in.AdditionalAuthenticatedData)
		out["name"] = name + "/cryptoKeyVersions/1"
		out["ciphertext"], out["ciphertextCrc32c"] = ct, crcOf(ct)
		out["verifiedPlaintextCrc32c"] = in.PlaintextCrc32c != nil
		out["verifiedAdditionalAuthenticatedDataCrc32c"] = in.AdditionalAuthenticatedDataCrc32c != nil
	case "decrypt":
		if len(in.Ciphertext) < 12+16 {
			gcpError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Decryption failed: the ciphertext is invalid.")
			return
		}
		pt, err := aead.Open(nil, nil, in.Ciphertext, in.AdditionalAuthenticatedData)
		if err != nil {
			gcpError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Decryption failed: the ciphertext is invalid.")
			return
		}
		out["plaintext"], out["plaintextCrc32c"], out["usedPrimary"] = pt, crcOf(pt), true
	default:
		gcpError(w, http.StatusNotFound, "NOT_FOUND", "unknown method "+op)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// jwtFrom accepts a self-signed service-account JWT (RS256) of the key pub
// and issuer iss, as the SDK sends for service-account credentials.
func jwtFrom(pub *rsa.PublicKey, iss string) func(string) bool {
	return func(tok string) bool {
		p := strings.Split(tok, ".")
		if len(p) != 3 {
			return false
		}
		sig, err1 := base64.RawURLEncoding.DecodeString(p[2])
		body, err2 := base64.RawURLEncoding.DecodeString(p[1])
		var claims struct{ Iss string }
		if err1 != nil || err2 != nil || json.Unmarshal(body, &claims) != nil || claims.Iss != iss {
			return false
		}
		h := sha256.Sum256([]byte(p[0] + "." + p[1]))
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
	}
}

// newFakeTokenEndpoint is a local test double of Google's OAuth 2.0 token
// endpoint for service accounts (RFC 7523 JWT bearer grant): it exchanges
// an assertion that check accepts for token.
func newFakeTokenEndpoint(t *testing.T, check func(string) bool, token string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || !check(r.PostForm.Get("assertion")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
	}))
	t.Cleanup(s.Close)
	return s
}

// newFakeMetadata is a local test double of the Compute Engine metadata
// server: the default service account's access token.
func newFakeMetadata(t *testing.T, token string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "Metadata-Flavor: Google required", http.StatusForbidden)
			return
		}
		w.Header().Set("Metadata-Flavor", "Google")
		switch r.URL.Path {
		case "/computeMetadata/v1/instance/service-accounts/default/token":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
		case "/computeMetadata/v1/instance/service-accounts/default/email":
			w.Write([]byte("machine@p.iam.gserviceaccount.com"))
		case "/computeMetadata/v1/project/project-id":
			w.Write([]byte("p"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}
