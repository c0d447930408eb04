//go:build kms_aws || kms_all

package awskms

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// fakeKMS is a local test double of the AWS KMS JSON 1.1 API
// (TrentService.Encrypt and TrentService.Decrypt) on loopback. Each key is
// an AES-256-GCM key of its own; a ciphertext blob is the key's index, a
// random nonce and the GCM output, authenticated with the encryption context, as
// the real KMS binds it. It records the access key ID of every request's
// SigV4 credential scope and its session token.
type fakeKMS struct {
	*httptest.Server
	// down, when not 0, is the status every request is answered with:
	// the service is unavailable or throttles.
	down    int
	mu      sync.Mutex
	keys    []string // key ARNs, by index
	aeads   []cipher.AEAD
	aliases map[string]string
	calls   []fakeCall
}

type fakeCall struct {
	Op, AccessKeyID, Region, SessionToken string
	Context                               map[string]string
}

func newFakeKMS(t *testing.T, keyARNs ...string) *fakeKMS {
	f := &fakeKMS{aliases: map[string]string{}}
	for _, arn := range keyARNs {
		k := make([]byte, 32)
		rand.Read(k)
		b, _ := aes.NewCipher(k)
		g, _ := cipher.NewGCMWithRandomNonce(b) // FIPS 140-3 only mode allows this GCM
		f.keys, f.aeads = append(f.keys, arn), append(f.aeads, g)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeKMS) lookup(id string) int {
	if a, ok := f.aliases[id]; ok {
		id = a
	}
	for i, k := range f.keys {
		if k == id {
			return i
		}
	}
	return -1
}

// contextAAD is the canonical form of an encryption context.
func contextAAD(ec map[string]string) []byte {
	keys := make([]string, 0, len(ec))
	for k := range ec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		b = append(b, k+"\x00"+ec[k]+"\x00"...)
	}
	return b
}

func kmsError(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (f *fakeKMS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != 0 {
		w.WriteHeader(f.down)
		return
	}
	auth := r.Header.Get("Authorization")
	_, scope, ok := strings.Cut(auth, "Credential=")
	parts := strings.Split(strings.SplitN(scope, ",", 2)[0], "/")
	if r.Method != http.MethodPost || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !ok || len(parts) != 5 || parts[3] != "kms" {
		kmsError(w, "MissingAuthenticationTokenException", "request is not SigV4-signed for kms")
		return
	}
	var in struct {
		KeyId             string
		Plaintext         []byte
		CiphertextBlob    []byte
		EncryptionContext map[string]string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		kmsError(w, "SerializationException", err.Error())
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "TrentService.")
	f.calls = append(f.calls, fakeCall{Op: op, AccessKeyID: parts[0], Region: parts[2], SessionToken: r.Header.Get("X-Amz-Security-Token"), Context: in.EncryptionContext})
	out := map[string]any{"EncryptionAlgorithm": "SYMMETRIC_DEFAULT"}
	switch op {
	case "Encrypt":
		i := f.lookup(in.KeyId)
		if i < 0 {
			kmsError(w, "NotFoundException", "key "+in.KeyId+" does not exist")
			return
		}
		out["CiphertextBlob"] = f.aeads[i].Seal([]byte{byte(i)}, nil, in.Plaintext, contextAAD(in.EncryptionContext))
		out["KeyId"] = f.keys[i]
	case "Decrypt":
		if len(in.CiphertextBlob) < 1+12+16 || int(in.CiphertextBlob[0]) >= len(f.keys) {
			kmsError(w, "InvalidCiphertextException", "")
			return
		}
		i := int(in.CiphertextBlob[0])
		if in.KeyId != "" && f.lookup(in.KeyId) != i {
			kmsError(w, "IncorrectKeyException", "the key ID in the request does not identify the key that encrypted the ciphertext")
			return
		}
		pt, err := f.aeads[i].Open(nil, nil, in.CiphertextBlob[1:], contextAAD(in.EncryptionContext))
		if err != nil {
			kmsError(w, "InvalidCiphertextException", "")
			return
		}
		out["Plaintext"], out["KeyId"] = pt, f.keys[i]
	default:
		kmsError(w, "UnknownOperationException", op)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}

// fakeIMDS is a local test double of the EC2 instance metadata service
// (IMDSv2) serving one instance profile's role credentials.
func newFakeIMDS(t *testing.T, role, accessKeyID, sessionToken string) *httptest.Server {
	const token = "fake-imds-session-token"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds"))
			w.Write([]byte(token))
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != token {
			http.Error(w, "IMDSv2 token required", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/latest/meta-data/iam/security-credentials/", "/latest/meta-data/iam/security-credentials-extended/":
			w.Write([]byte(role))
		case "/latest/meta-data/iam/security-credentials/" + role, "/latest/meta-data/iam/security-credentials-extended/" + role:
			json.NewEncoder(w).Encode(map[string]string{
				"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": accessKeyID, "SecretAccessKey": "fake-secret",
				"Token": sessionToken, "Expiration": "2099-01-01T00:00:00Z", "LastUpdated": "2026-01-01T00:00:00Z",
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}
