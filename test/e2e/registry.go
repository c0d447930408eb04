//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// registryBin is Debian's distribution registry (package docker-registry,
// hack/install-deps.sh).
const registryBin = "/usr/bin/docker-registry"

// Names the registry's token authentication uses.
const (
	registryService = "machineadm-e2e-registry"
	registryIssuer  = "machineadm-e2e-token-issuer"
)

// tokenRegistry is the real distribution registry configured for token
// authentication, with the token issuer it trusts: both listen on the
// harness bridge address only, inside the e2e's network namespace. The
// issuer hands out anonymous pull tokens, as public registries do:
// GET /token?service=S&scope=repository:NAME:pull answers a JWT (ES256,
// its certificate in the x5c header, the certificate in the registry's
// rootcertbundle) granting pull on NAME. Push tokens are made in-process
// for the test only.
type tokenRegistry struct {
	base    string // http://10.213.0.1:PORT of the registry
	storage string // the registry's filesystem storage root
	cmd     *exec.Cmd
	issuer  *http.Server

	key  *ecdsa.PrivateKey
	cert []byte // DER

	mu     sync.Mutex
	issued []string // tokens handed out over HTTP
}

// startTokenRegistry starts the issuer and the registry under dir and
// waits until the registry answers /v2/ with a Bearer challenge.
func startTokenRegistry(ctx context.Context, dir string) (*tokenRegistry, error) {
	if _, err := os.Stat(registryBin); err != nil {
		return nil, fmt.Errorf("%s: %w (install the docker-registry package: hack/install-deps.sh)", registryBin, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	r := &tokenRegistry{storage: filepath.Join(dir, "storage")}
	var err error
	if r.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: registryIssuer},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	if r.cert, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &r.key.PublicKey, r.key); err != nil {
		return nil, err
	}
	bundle := filepath.Join(dir, "token-ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.cert}), 0o644); err != nil {
		return nil, err
	}

	tln, err := net.Listen("tcp", net.JoinHostPort(bridgeIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("token issuer: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/token", r.serveToken)
	r.issuer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.issuer.Serve(tln) }()

	// A free port for the registry, which takes its address from the
	// configuration.
	rln, err := net.Listen("tcp", net.JoinHostPort(bridgeIP, "0"))
	if err != nil {
		r.close()
		return nil, err
	}
	addr := rln.Addr().String()
	_ = rln.Close()
	r.base = "http://" + addr
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	conf := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog: {disabled: false}
storage:
  filesystem: {rootdirectory: %q}
http:
  addr: %q
  secret: %q
auth:
  token:
    realm: %q
    service: %q
    issuer: %q
    rootcertbundle: %q
`, r.storage, addr, hex.EncodeToString(secret), "http://"+tln.Addr().String()+"/token", registryService, registryIssuer, bundle)
	confPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		r.close()
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		r.close()
		return nil, err
	}
	r.cmd = exec.Command(registryBin, "serve", confPath)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		r.close()
		return nil, err
	}
	go func() { _ = r.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(r.base + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized && strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				return r, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.close()
			return nil, fmt.Errorf("the registry did not answer /v2/ with a Bearer challenge within 30 s (last: %v); log in %s", err, dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serveToken is the anonymous token endpoint: pull only.
func (r *tokenRegistry) serveToken(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	repo, ok := strings.CutPrefix(q.Get("scope"), "repository:")
	repo, ok2 := strings.CutSuffix(repo, ":pull")
	if q.Get("service") != registryService || !ok || !ok2 || repo == "" {
		http.Error(w, "anonymous tokens are for pulls of this registry only", http.StatusBadRequest)
		return
	}
	tok, err := r.token(repo, "pull")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r.mu.Lock()
	r.issued = append(r.issued, tok)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": 300, "issued_at": time.Now().UTC().Format(time.RFC3339)})
}

// token makes a JWS (RFC 7515, ES256) the registry accepts: issuer,
// audience (the service), validity, and the actions on one repository.
func (r *tokenRegistry) token(repo string, actions ...string) (string, error) {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(r.cert)}})
	jti := make([]byte, 12)
	_, _ = rand.Read(jti)
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{
		"iss": registryIssuer, "sub": "", "aud": registryService,
		"exp": now.Add(5 * time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(),
		"jti":    hex.EncodeToString(jti),
		"access": []map[string]any{{"type": "repository", "name": repo, "actions": actions}},
	})
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	der, err := ecdsa.SignASN1(rand.Reader, r.key, sum[:])
	if err != nil {
		return "", err
	}
	var rs struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &rs); err != nil {
		return "", err
	}
	sig := make([]byte, 64) // JWS ES256: R and S, 32 bytes each
	rs.R.FillBytes(sig[:32])
	rs.S.FillBytes(sig[32:])
	return signed + "." + enc.EncodeToString(sig), nil
}

// push uploads blob into repo (a monolithic upload: POST, then PUT with
// the digest) with a push token made in-process, and returns its blob URL.
func (r *tokenRegistry) push(repo string, blob []byte) (string, error) {
	tok, err := r.token(repo, "pull", "push")
	if err != nil {
		return "", err
	}
	do := func(method, url string, body []byte) (*http.Response, error) {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/octet-stream")
		return http.DefaultClient.Do(req)
	}
	resp, err := do(http.MethodPost, r.base+"/v2/"+repo+"/blobs/uploads/", nil)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusAccepted || loc == "" {
		return "", fmt.Errorf("starting an upload to %s: %s", repo, resp.Status)
	}
	if strings.HasPrefix(loc, "/") {
		loc = r.base + loc
	}
	sum := sha256.Sum256(blob)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	resp, err = do(http.MethodPut, loc+sep+"digest="+digest, blob)
	if err != nil {
		return "", err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("uploading %s to %s: %s %s", digest, repo, resp.Status, msg)
	}
	return r.base + "/v2/" + repo + "/blobs/" + digest, nil
}

// blobData is the registry's storage file of a blob (filesystem driver
// layout), which a test overwrites to tamper with what it serves.
func (r *tokenRegistry) blobData(blob []byte) string {
	sum := sha256.Sum256(blob)
	h := hex.EncodeToString(sum[:])
	return filepath.Join(r.storage, "docker/registry/v2/blobs/sha256", h[:2], h, "data")
}

// tokens returns the tokens handed out over HTTP so far.
func (r *tokenRegistry) tokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.issued...)
}

func (r *tokenRegistry) close() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
	}
	if r.issuer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.issuer.Shutdown(ctx)
	}
}
