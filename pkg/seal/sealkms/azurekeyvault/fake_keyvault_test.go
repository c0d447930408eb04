//go:build kms_azure || kms_all

package azurekeyvault

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeVaultHost is the Key Vault host name of the tests; fakeTransport
// sends it, and the instance metadata service address, to loopback.
const fakeVaultHost = "machineadm-test.vault.azure.net"

// fakeKeyVault is a local test double of the Azure Key Vault REST API
// (POST /keys/{name}/{version}/wrapkey and /unwrapkey with RSA-OAEP-256)
// on a loopback TLS server with a certificate for *.vault.azure.net. It
// answers a request without a token with the bearer challenge Key Vault
// sends, and accepts the tokens in tokens (token → who); calls records
// "<op> by <who>".
type fakeKeyVault struct {
	*httptest.Server
	// down, when not 0, is the status every request is answered with:
	// the service is unavailable or throttles.
	down   int
	mu     sync.Mutex
	keys   map[string]*rsa.PrivateKey // by name; every key has the one version "v1"
	tokens map[string]string
	calls  []string
}

func newFakeKeyVault(t *testing.T, names ...string) *fakeKeyVault {
	f := &fakeKeyVault{keys: map[string]*rsa.PrivateKey{}, tokens: map[string]string{}}
	for _, n := range names {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		f.keys[n] = k
	}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.TLS = &tls.Config{Certificates: []tls.Certificate{fakeCert}}
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func kvError(w http.ResponseWriter, code int, kvCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": kvCode, "message": msg}})
}

func (f *fakeKeyVault) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != 0 {
		w.WriteHeader(f.down)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	who := f.tokens[tok]
	if !ok || who == "" {
		w.Header().Set("WWW-Authenticate", `Bearer authorization="https://login.microsoftonline.com/00000000-0000-0000-0000-000000000001", resource="https://vault.azure.net"`)
		kvError(w, http.StatusUnauthorized, "Unauthorized", "AKV10000: Request is missing a Bearer or PoP token.")
		return
	}
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(p) == 3 { // /keys/NAME/op: the current version
		p = []string{p[0], p[1], "v1", p[2]}
	}
	if r.Method != http.MethodPost || len(p) != 4 || p[0] != "keys" || r.URL.Query().Get("api-version") == "" {
		kvError(w, http.StatusNotFound, "NotFound", "no such operation")
		return
	}
	f.calls = append(f.calls, p[3]+" by "+who)
	k := f.keys[p[1]]
	if k == nil || p[2] != "v1" {
		kvError(w, http.StatusNotFound, "KeyNotFound", "A key with (name/id) "+p[1]+" was not found in this key vault.")
		return
	}
	var in struct{ Alg, Value string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Alg != "RSA-OAEP-256" {
		kvError(w, http.StatusBadRequest, "BadParameter", "want alg RSA-OAEP-256")
		return
	}
	v, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(in.Value, "="))
	if err != nil {
		kvError(w, http.StatusBadRequest, "BadParameter", "value is not base64url")
		return
	}
	var res []byte
	switch p[3] {
	case "wrapkey":
		res, err = rsa.EncryptOAEP(sha256.New(), rand.Reader, &k.PublicKey, v, nil)
	case "unwrapkey":
		res, err = rsa.DecryptOAEP(sha256.New(), nil, k, v, nil)
	default:
		err = fmt.Errorf("unknown operation %s", p[3])
	}
	if err != nil {
		kvError(w, http.StatusBadRequest, "BadParameter", "Error decrypting or unwrapping: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{
		"kid":   "https://" + fakeVaultHost + "/keys/" + p[1] + "/v1",
		"value": base64.RawURLEncoding.EncodeToString(res),
	})
}

// newFakeIMDS is a local test double of the Azure instance metadata
// service's managed identity endpoint
// (GET /metadata/identity/oauth2/token): it issues "token-system" to the
// system-assigned identity and "token-<client_id>" to a user-assigned one,
// and records the client IDs it was asked for.
func newFakeIMDS(t *testing.T, asked *[]string) *httptest.Server {
	var mu sync.Mutex
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/metadata/identity/oauth2/token" || r.Header.Get("Metadata") != "true" || q.Get("resource") == "" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest) // also the answer to the SDK's probe
			return
		}
		mu.Lock()
		*asked = append(*asked, q.Get("client_id"))
		mu.Unlock()
		tok := "token-system"
		if id := q.Get("client_id"); id != "" {
			tok = "token-" + id
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{
			"access_token": tok, "expires_in": "3599", "expires_on": fmt.Sprint(time.Now().Add(time.Hour).Unix()),
			"resource": q.Get("resource"), "token_type": "Bearer",
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// fakeCert is a self-signed certificate for *.vault.azure.net.
var fakeCert, fakeRoots = func() (tls.Certificate, *x509.CertPool) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), DNSNames: []string{"*.vault.azure.net"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		panic(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, pool
}()

// fakeTransport sends the Key Vault host to kv and the instance metadata
// service (169.254.169.254:80) to imds, both on loopback, and refuses
// every other address, so a test can never reach a real cloud.
func fakeTransport(kv, imds *httptest.Server) *http.Client {
	routes := map[string]string{
		fakeVaultHost + ":443": kv.Listener.Addr().String(),
		"169.254.169.254:80":   imds.Listener.Addr().String(),
	}
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: fakeRoots},
		Proxy:           nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			to, ok := routes[addr]
			if !ok {
				return nil, fmt.Errorf("fakeTransport: refusing to dial %s outside loopback", addr)
			}
			return d.DialContext(ctx, network, to)
		},
	}}
}
