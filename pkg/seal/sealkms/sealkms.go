// Package sealkms holds what the cloud KMS recipient types of machineadm's
// sealed secrets share: the identity line syntax, the binding of the
// envelope's cluster and machine names into each wrap, and the bounds on a
// KMS call. It uses the standard library only; the types themselves live
// in its subpackages, each behind a build tag so that the default binary
// links no cloud SDK:
//
//	aws-kms         pkg/seal/sealkms/awskms        -tags kms_aws
//	gcp-kms         pkg/seal/sealkms/gcpkms        -tags kms_gcp
//	azure-keyvault  pkg/seal/sealkms/azurekeyvault -tags kms_azure
//	vault-transit   pkg/seal/sealkms/vaulttransit  -tags kms_vault
//
// (-tags kms_all enables all four). cmd/machineadm links a type through a
// blank import in a file guarded by the same tag.
//
// A KMS recipient string is the type, a colon and the key's resource name
// ("aws-kms:arn:aws:kms:…"); the stanza's keyID is that resource name. The
// machine's identity is one line in its identity file,
// "MACHINEADM-<TYPE>-IDENTITY", optionally followed by ":" and
// comma-separated key=value options: it holds no key, it says that the
// machine may open stanzas of that type with its own cloud identity
// (instance profile, metadata-server service account, managed identity or
// a Vault auth method), calling the KMS the stanza names.
package sealkms

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/seal"
)

// CallTimeout bounds one wrap or unwrap, retries included (each SDK
// retries a bounded number of times within it): 60 seconds.
const CallTimeout = 60 * time.Second

// Encryption context keys (AWS KMS encryption context, Vault transit
// context): the envelope's cluster and machine names, readable in audit
// logs and usable in key policies.
const (
	ContextCluster = "machineadm.io/cluster"
	ContextMachine = "machineadm.io/machine"
)

// Context returns the encryption context of a wrap: ContextCluster and
// ContextMachine from info (seal.WrapInfo).
func Context(info []byte) (map[string]string, error) {
	b, err := seal.ParseWrapInfo(info)
	if err != nil {
		return nil, err
	}
	return map[string]string{ContextCluster: b.ClusterName, ContextMachine: b.MachineName}, nil
}

// tagSize is the length of the binding tag Pack puts before the data key.
const tagSize = 16

// Pack returns the plaintext a KMS without additional authenticated data
// wraps: the first 16 bytes of SHA-256(info) followed by the 32-byte data
// key. Unpack checks the tag, so a wrapped key copied into an envelope for
// another cluster or machine does not open.
func Pack(info, dataKey []byte) []byte {
	sum := sha256.Sum256(info)
	return append(sum[:tagSize:tagSize], dataKey...)
}

// ErrBinding is returned by Unpack when the wrapped key was made for
// another cluster or machine.
var ErrBinding = errors.New("the wrapped key was made for another cluster or machine")

// Unpack returns the data key of a plaintext Pack made for info.
func Unpack(info, p []byte) ([]byte, error) {
	sum := sha256.Sum256(info)
	if len(p) != tagSize+32 || subtle.ConstantTimeCompare(p[:tagSize], sum[:tagSize]) != 1 {
		return nil, ErrBinding
	}
	return p[tagSize:], nil
}

// IdentityPrefix is the identity line of a KMS type: "MACHINEADM-" and the
// upper-cased type name, then "-IDENTITY" ("MACHINEADM-AWS-KMS-IDENTITY").
func IdentityPrefix(typ string) string {
	return "MACHINEADM-" + strings.ToUpper(typ) + "-IDENTITY"
}

// ParseIdentityLine parses "PREFIX" or "PREFIX:key=value,key=value" for
// the type typ, allowing only the option keys in allowed. Errors name the
// option key, never its value.
func ParseIdentityLine(typ, line string, allowed ...string) (map[string]string, error) {
	prefix := IdentityPrefix(typ)
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return nil, fmt.Errorf("want %s", prefix)
	}
	opts := map[string]string{}
	if rest == "" {
		return opts, nil
	}
	rest, ok = strings.CutPrefix(rest, ":")
	if !ok {
		return nil, fmt.Errorf("want %s or %s:key=value,…", prefix, prefix)
	}
	for kv := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "" || v == "":
			return nil, fmt.Errorf("option %q: want key=value", k)
		case !slices.Contains(allowed, k):
			return nil, fmt.Errorf("unknown option %q (known: %s)", k, strings.Join(allowed, ", "))
		case opts[k] != "":
			return nil, fmt.Errorf("option %q given twice", k)
		}
		opts[k] = v
	}
	return opts, nil
}

// Register registers a cloud KMS recipient type with pkg/seal, the same
// way for every KMS: recipient strings start with recipientPrefix, the
// machine's identity is the one line IdentityPrefix(typ) (its cloud
// identity, no key), and the type is FIPS-approved (the KMS holds the key;
// the data key wrap on this side is AES-GCM).
func Register(typ, recipientPrefix string, parseRecipient func(string) (seal.Recipient, error), parseIdentity func(string) (seal.Identity, error)) {
	seal.Register(seal.RecipientType{
		Name:              typ,
		RecipientPrefixes: []string{recipientPrefix},
		ParseRecipient:    parseRecipient,
		IdentityPrefixes:  []string{IdentityPrefix(typ)},
		ParseIdentity:     parseIdentity,
		FIPS:              true,
	})
}

// Unavailable returns err wrapped with seal.ErrUnavailable when it says
// that the key service did not answer, so that the machine retries (class
// PayloadUnavailable, exit code 1) instead of refusing the envelope as
// tampered (VerificationFailed, exit code 2): a network error (net.Error:
// refused or reset connections, name resolution, timeouts; a *url.Error
// by its cause, so that an untrusted certificate is not one), a
// connection closed before the answer, a context deadline, or status,
// the HTTP status the service answered (0 when
// unknown; also read from an error with an HTTPStatusCode method, as
// the AWS SDK's response errors have), of 408, 429 or 5xx. Any other err
// (nil included) is returned as it is: a denied key or a bad ciphertext
// is not retried.
func Unavailable(err error, status int) error {
	if err == nil || errors.Is(err, seal.ErrUnavailable) {
		return err
	}
	var sc interface{ HTTPStatusCode() int }
	if status == 0 && errors.As(err, &sc) {
		status = sc.HTTPStatusCode()
	}
	if noAnswer(err) || retryableStatus(status) {
		return fmt.Errorf("%w: %w", seal.ErrUnavailable, err)
	}
	return err
}

// noAnswer reports whether err says the service was not reached or did
// not answer: a net.Error, a connection closed before the answer (EOF) or
// a context deadline. A *url.Error (every error of an HTTP client) is a
// net.Error whatever its cause, so its cause is looked at instead: a
// certificate that does not verify is an answer, not retried.
func noAnswer(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// retryableStatus reports whether an HTTP status means "try again later".
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 && status <= 599
}
