//go:build kms_gcp || kms_all

// Package gcpkms registers the "gcp-kms" recipient type of machineadm's
// sealed secrets (build tag kms_gcp or kms_all): the 32-byte data key is
// encrypted by a Cloud KMS symmetric key (purpose ENCRYPT_DECRYPT,
// GOOGLE_SYMMETRIC_ENCRYPTION, that is AES-256-GCM) through
// cloud.google.com/go/kms/apiv1 over its REST transport, with the
// envelope's seal.WrapInfo (cluster and machine names) as additional
// authenticated data, and CRC32C integrity checks on every request and
// response as Cloud KMS recommends.
//
// Recipient string: "gcp-kms:" and the CryptoKey resource name
// ("gcp-kms:projects/P/locations/L/keyRings/R/cryptoKeys/K"); it is the
// stanza's keyID (Cloud KMS picks the key version from the ciphertext).
// Sealing uses the operator's Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default
// login`, …); cloudkms.cryptoKeyVersions.useToEncrypt is needed
// (roles/cloudkms.cryptoKeyEncrypter).
//
// Identity line: "MACHINEADM-GCP-KMS-IDENTITY", optionally
// ":endpoint=URL" for a Private Service Connect or regional endpoint. The
// machine decrypts with Application Default Credentials, on Compute Engine
// the instance's service account from the metadata server (GCE_METADATA_HOST
// overrides its address); cloudkms.cryptoKeyVersions.useToDecrypt is
// needed (roles/cloudkms.cryptoKeyDecrypter).
package gcpkms

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms"
)

// Type is the stanza type of Cloud KMS recipients.
const Type = "gcp-kms"

// Suite is the Cloud KMS algorithm of gcp-kms stanzas.
const Suite = "GOOGLE_SYMMETRIC_ENCRYPTION"

const recipientPrefix = Type + ":"

var keyNameRE = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)

// testOptions are appended to every client's options by tests.
var testOptions []option.ClientOption

func newClient(ctx context.Context, endpoint string) (*kms.KeyManagementClient, error) {
	var opts []option.ClientOption
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	c, err := kms.NewKeyManagementRESTClient(ctx, append(opts, testOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("creating the Cloud KMS client (Application Default Credentials): %w", err)
	}
	return c, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, castagnoli)))
}

// errCorrupted reports a CRC32C mismatch: the request or response was
// corrupted in transit.
var errCorrupted = errors.New("Cloud KMS request or response corrupted in transit (CRC32C mismatch)")

type recipient struct{ name string }

func (r *recipient) Type() string   { return Type }
func (r *recipient) String() string { return recipientPrefix + r.name }

func (r *recipient) Wrap(dataKey, info []byte) (seal.Stanza, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	c, err := newClient(ctx, "")
	if err != nil {
		return seal.Stanza{}, err
	}
	defer c.Close()
	out, err := c.Encrypt(ctx, &kmspb.EncryptRequest{
		Name:                              r.name,
		Plaintext:                         dataKey,
		PlaintextCrc32C:                   crc(dataKey),
		AdditionalAuthenticatedData:       info,
		AdditionalAuthenticatedDataCrc32C: crc(info),
	})
	if err != nil {
		return seal.Stanza{}, fmt.Errorf("cloudkms Encrypt with %s: %w", r.name, err)
	}
	if !out.VerifiedPlaintextCrc32C || !out.VerifiedAdditionalAuthenticatedDataCrc32C ||
		out.CiphertextCrc32C == nil || out.CiphertextCrc32C.Value != crc(out.Ciphertext).Value {
		return seal.Stanza{}, errCorrupted
	}
	return seal.Stanza{Type: Type, KeyID: r.name, Suite: Suite, WrappedKey: base64.StdEncoding.EncodeToString(out.Ciphertext)}, nil
}

// ParseRecipient parses "gcp-kms:projects/P/locations/L/keyRings/R/cryptoKeys/K".
func ParseRecipient(s string) (seal.Recipient, error) {
	name := strings.TrimPrefix(s, recipientPrefix)
	if !keyNameRE.MatchString(name) {
		return nil, fmt.Errorf("want a CryptoKey name projects/P/locations/L/keyRings/R/cryptoKeys/K, got %q", name)
	}
	return &recipient{name: name}, nil
}

// identity is the machine's own Google identity.
type identity struct{ endpoint string }

func (identity) Type() string  { return Type }
func (identity) KeyID() string { return "" }

// Unwrap is unwrap with a key service that did not answer marked as
// such (sealkms.Unavailable), so the machine retries rather than refuses.
func (id identity) Unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	key, err := id.unwrap(st, info)
	return key, sealkms.Unavailable(err, grpcStatus(err))
}

func (id identity) unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	if !keyNameRE.MatchString(st.KeyID) {
		return nil, fmt.Errorf("keyID %q is not a CryptoKey name", st.KeyID)
	}
	if st.Suite != Suite {
		return nil, fmt.Errorf("unsupported suite %q, want %s", st.Suite, Suite)
	}
	ct, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	c, err := newClient(ctx, id.endpoint)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	out, err := c.Decrypt(ctx, &kmspb.DecryptRequest{
		Name:                              st.KeyID,
		Ciphertext:                        ct,
		CiphertextCrc32C:                  crc(ct),
		AdditionalAuthenticatedData:       info,
		AdditionalAuthenticatedDataCrc32C: crc(info),
	})
	if err != nil {
		return nil, fmt.Errorf("cloudkms Decrypt with %s: %w", st.KeyID, err)
	}
	if out.PlaintextCrc32C == nil || out.PlaintextCrc32C.Value != crc(out.Plaintext).Value {
		clear(out.Plaintext)
		return nil, errCorrupted
	}
	if len(out.Plaintext) != 32 {
		clear(out.Plaintext)
		return nil, errors.New("Cloud KMS returned a plaintext that is not a 32-byte data key")
	}
	return out.Plaintext, nil
}

// ParseIdentity parses "MACHINEADM-GCP-KMS-IDENTITY[:endpoint=URL]".
func ParseIdentity(line string) (seal.Identity, error) {
	opts, err := sealkms.ParseIdentityLine(Type, line, "endpoint")
	if err != nil {
		return nil, err
	}
	return identity{endpoint: opts["endpoint"]}, nil
}

func init() {
	sealkms.Register(Type, recipientPrefix, ParseRecipient, ParseIdentity)
}

// grpcStatus maps the gRPC status of a Cloud KMS error to the HTTP status
// that means the same for sealkms.Unavailable: Unavailable and Internal
// 503, ResourceExhausted (quota) 429, DeadlineExceeded 408. An error of
// the REST transport carries its HTTP status (HTTPCode), returned as it
// is. Others 0.
func grpcStatus(err error) int {
	var he interface{ HTTPCode() int }
	if errors.As(err, &he) && he.HTTPCode() > 0 {
		return he.HTTPCode()
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Internal:
		return 503
	case codes.ResourceExhausted:
		return 429
	case codes.DeadlineExceeded:
		return 408
	}
	return 0
}
