package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// Identification of the envelope document.
const (
	// APIVersion is the envelope's apiVersion, "machineadm.io/v1alpha2":
	// the envelope that binds the clear spec (SpecDigest) into every item's
	// additional data. Its version is the envelope's own, apart from the
	// machine spec's.
	APIVersion = "machineadm.io/v1alpha2"
	// APIVersionV1Alpha1 is the first envelope version, written by earlier
	// releases. It authenticated the cluster and machine names but not the
	// clear spec beside it, so Parse refuses it with a request to seal the
	// spec again rather than open what may have been edited.
	APIVersionV1Alpha1 = "machineadm.io/v1alpha1"
	// Kind is the envelope's kind.
	Kind = "SealedSecrets"
	// AlgorithmAES256GCM is the only item algorithm of v1alpha1: AES-256-GCM
	// (NIST SP 800-38D) with a 256-bit data key, a 12-byte random nonce per
	// item and a 16-byte tag.
	AlgorithmAES256GCM = "AES-256-GCM"
	// AnyMachine is the machine name of an envelope sealed for a template:
	// it opens on any machine of its cluster.
	AnyMachine = "*"
)

// Limits of a parsed envelope. Parse refuses anything larger before it
// decodes further, so a hostile document cannot make the machine allocate
// without bound.
const (
	// MaxEnvelopeBytes bounds the whole document (1 MiB; user data is at
	// most 64 KiB on every cloud).
	MaxEnvelopeBytes = 1 << 20
	// MaxRecipients bounds the recipient stanzas.
	MaxRecipients = 16
	// MaxItems bounds the sealed items.
	MaxItems = 256
	// MaxItemBytes bounds one item's decoded nonce, ciphertext and tag
	// (256 KiB).
	MaxItemBytes = 256 << 10
	// MaxPlaintextBytes bounds one item's plaintext after decompression
	// (1 MiB).
	MaxPlaintextBytes = 1 << 20
	// MaxWrappedKeyBytes bounds one stanza's decoded wrapped key (8 KiB; a
	// hybrid ML-KEM-1024 encapsulation is about 1.7 KiB, KMS blobs under 1 KiB).
	MaxWrappedKeyBytes = 8 << 10
	// MaxNameBytes bounds the cluster name, machine name, key IDs, suites
	// and item paths.
	MaxNameBytes = 512
)

const (
	dataKeySize = 32
	nonceSize   = 12
	tagSize     = 16
)

// Envelope is a SealedSecrets document. Build one with Seal, read one with
// Parse, open it with Open. The zero value is not valid.
type Envelope struct {
	// APIVersion is "machineadm.io/v1alpha2" (APIVersion).
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	// Kind is "SealedSecrets".
	Kind string `json:"kind" yaml:"kind"`
	// ClusterName is the spec's spec.kubernetes.clusterName the envelope
	// was sealed for. Required.
	ClusterName string `json:"clusterName" yaml:"clusterName"`
	// MachineName is the node name the envelope was sealed for, or
	// AnyMachine ("*") for a template. Required.
	MachineName string `json:"machineName" yaml:"machineName"`
	// SpecDigest is the canonical digest (SpecDigest) of the clear spec
	// document the envelope was sealed with: "sha256:" and 64 hex digits.
	// Every item's additional data holds it, and Open compares it with the
	// digest of the spec the envelope came with, so the clear spec cannot
	// be edited (a node name, an endpoint, a file's path or mode) or
	// swapped. Required.
	SpecDigest string `json:"specDigest" yaml:"specDigest"`
	// Algorithm is the item algorithm, AlgorithmAES256GCM.
	Algorithm string `json:"algorithm" yaml:"algorithm"`
	// Recipients wrap the data key, one stanza per recipient; any one
	// unwraps it. At least one, at most MaxRecipients.
	Recipients []Stanza `json:"recipients" yaml:"recipients"`
	// Items map a spec field path (ItemPath) to the base64 (RFC 4648
	// standard alphabet, padded) of nonce | ciphertext | tag. At least one,
	// at most MaxItems.
	Items map[string]string `json:"items" yaml:"items"`
}

// Stanza is one recipient's copy of the data key.
type Stanza struct {
	// Type is the recipient type: "hpke", "tpm2", "age", "aws-kms",
	// "gcp-kms", "azure-keyvault" or "vault-transit".
	Type string `json:"type" yaml:"type"`
	// KeyID identifies the recipient key: for key-pair types the first 8
	// bytes, in hex, of the SHA-256 of the recipient string; for KMS types
	// the key's resource name. Reported when the stanza opens the envelope.
	KeyID string `json:"keyID" yaml:"keyID"`
	// Suite names the recipient's algorithm where the type has several, for
	// example "DHKEM(P-384)+HKDF-SHA384+AES-256-GCM".
	Suite string `json:"suite,omitempty" yaml:"suite,omitempty"`
	// WrappedKey is the base64 of the wrapped data key, in the type's own
	// format (HPKE enc | ciphertext, an age file, a KMS ciphertext blob).
	WrappedKey string `json:"wrappedKey" yaml:"wrappedKey"`
}

var (
	// itemPathRE is a spec field path as field.Path prints it, optionally
	// followed by "/" and a relative file name for a directory's files
	// (spec.controlPlane.pki.dir/etcd/ca.key).
	itemPathRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^spec(\.[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])*)+(/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*)?$`)
	})
	// nameRE is a cluster name, machine name, key ID or suite: printable
	// ASCII without white space.
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[!-~]+$`) })
)

// ValidItemPath reports whether p is a valid item path: "spec." followed by
// field names and list indices (spec.host.files[2].content), optionally
// "/" and a relative file name (spec.controlPlane.pki.dir/etcd/ca.key);
// no "." or ".." file name components.
func ValidItemPath(p string) bool {
	if len(p) > MaxNameBytes || !itemPathRE().MatchString(p) {
		return false
	}
	if _, rel, ok := strings.Cut(p, "/"); ok {
		for _, c := range strings.Split(rel, "/") {
			if c == "." || c == ".." {
				return false
			}
		}
	}
	return true
}

// Parse decodes and checks a SealedSecrets document (YAML or JSON):
// strictly (unknown and duplicate fields are errors), bounded by the Max*
// limits, every problem reported with its field path in a *ParseError
// (wrapped in an *errclass.Error of class InvalidSpec). It does not open
// anything.
func Parse(data []byte) (*Envelope, error) {
	pe := &ParseError{}
	if len(data) > MaxEnvelopeBytes {
		pe.add("", "document is %d bytes, more than the limit of %d", len(data), MaxEnvelopeBytes)
		return nil, pe.orNil()
	}
	js, err := sigsyaml.YAMLToJSONStrict(data)
	if err != nil {
		pe.add("", "not a YAML document: %v", err)
		return nil, pe.orNil()
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		pe.add("", "empty document")
		return nil, pe.orNil()
	}
	var env Envelope
	strict, err := sigsjson.UnmarshalStrict(js, &env)
	if err != nil {
		pe.add(jsonErrPath(err), "%v", err)
		return nil, pe.orNil()
	}
	for _, se := range strict {
		pe.add("", "%v", se)
	}
	env.check(pe)
	if err := pe.orNil(); err != nil {
		return nil, err
	}
	return &env, nil
}

// jsonErrPath extracts the field path of a JSON type error, if any.
func jsonErrPath(err error) string {
	var fe interface{ FieldPath() string }
	if errors.As(err, &fe) {
		return fe.FieldPath()
	}
	return ""
}

// check validates a decoded envelope into pe.
func (e *Envelope) check(pe *ParseError) {
	switch e.APIVersion {
	case APIVersion:
	case APIVersionV1Alpha1:
		pe.add("apiVersion", "%s is the envelope of an earlier machineadm, which did not authenticate the clear spec beside it; "+
			"this release opens only %s: seal the spec again with `machineadm seal`", APIVersionV1Alpha1, APIVersion)
	default:
		pe.add("apiVersion", "must be %q, got %q", APIVersion, e.APIVersion)
	}
	if e.APIVersion != APIVersionV1Alpha1 && !specDigestRE().MatchString(e.SpecDigest) { // v1alpha1 had none
		pe.add("specDigest", "must be sha256: and 64 lower-case hex digits (the digest of the clear spec), got %s", quoteName(e.SpecDigest))
	}
	if e.Kind != Kind {
		pe.add("kind", "must be %q, got %q", Kind, e.Kind)
	}
	if e.Algorithm != AlgorithmAES256GCM {
		pe.add("algorithm", "unsupported algorithm %q; supported: %s", e.Algorithm, AlgorithmAES256GCM)
	}
	checkName(pe, "clusterName", e.ClusterName)
	checkName(pe, "machineName", e.MachineName)
	switch n := len(e.Recipients); {
	case n == 0:
		pe.add("recipients", "required: at least one recipient")
	case n > MaxRecipients:
		pe.add("recipients", "%d recipients, more than the limit of %d", n, MaxRecipients)
	}
	for i, st := range e.Recipients {
		if i >= MaxRecipients {
			break
		}
		p := fmt.Sprintf("recipients[%d]", i)
		if lookup(st.Type) == nil {
			pe.add(p+".type", "unknown recipient type %q; this binary supports %s", st.Type, strings.Join(Types(), ", "))
		}
		checkName(pe, p+".keyID", st.KeyID)
		if st.Suite != "" {
			checkName(pe, p+".suite", st.Suite)
		}
		if b, ok := checkBase64(pe, p+".wrappedKey", st.WrappedKey, MaxWrappedKeyBytes); ok && len(b) == 0 {
			pe.add(p+".wrappedKey", "required")
		}
	}
	switch n := len(e.Items); {
	case n == 0:
		pe.add("items", "required: at least one item")
	case n > MaxItems:
		pe.add("items", "%d items, more than the limit of %d", n, MaxItems)
		return
	}
	for _, path := range e.itemPaths() {
		p := "items[" + path + "]"
		if !ValidItemPath(path) {
			pe.add(p, "not a spec field path such as spec.join.token or spec.controlPlane.pki.dir/ca.key")
			continue
		}
		if b, ok := checkBase64(pe, p, e.Items[path], MaxItemBytes); ok && len(b) < nonceSize+tagSize+1 {
			pe.add(p, "%d bytes, shorter than nonce, one byte and tag", len(b))
		}
	}
}

func checkName(pe *ParseError, path, v string) {
	if err := CheckName(v); err != nil {
		pe.add(path, "%s", err)
	}
}

// CheckName checks a cluster name, machine name, key ID or suite as an
// envelope holds it: required, at most MaxNameBytes, printable ASCII
// without white space. The error never quotes v.
func CheckName(v string) error {
	switch {
	case v == "":
		return errors.New("required")
	case len(v) > MaxNameBytes:
		return fmt.Errorf("longer than %d bytes", MaxNameBytes)
	case !nameRE().MatchString(v):
		return errors.New("must be printable ASCII without spaces")
	}
	return nil
}

// checkBase64 decodes v, bounded by max decoded bytes.
func checkBase64(pe *ParseError, path, v string, max int) ([]byte, bool) {
	if base64.StdEncoding.DecodedLen(len(v)) > max {
		pe.add(path, "longer than %d bytes", max)
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v)
	if err != nil {
		pe.add(path, "not standard padded base64: %v", err)
		return nil, false
	}
	return b, true
}

// itemPaths returns the item paths in byte order.
func (e *Envelope) itemPaths() []string {
	paths := make([]string, 0, len(e.Items))
	for p := range e.Items {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// Marshal encodes e as a YAML document (fields in the order of the type,
// items sorted by path), ready to follow a spec after a "---" line.
func (e *Envelope) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encoding SealedSecrets: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding SealedSecrets: %w", err)
	}
	return b.Bytes(), nil
}
