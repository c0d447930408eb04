package seal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"

	sigsyaml "sigs.k8s.io/yaml"
)

// specDigestRE is the form of Envelope.SpecDigest: "sha256:" and 64
// lower-case hex digits.
var specDigestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

// SpecDigest returns the canonical digest of a clear spec document (the
// spec of a sealed file, as Split returns it): "sha256:" and the hex
// SHA-256 of the document converted to JSON (strictly: a duplicate key is
// an error) and encoded again with object keys sorted, no white space and
// numbers as written. It covers every value of the clear spec, the places
// of the sealed items (the file references and emptied fields sealing
// left) included, and nothing else: comments, key order, indentation and
// the quoting style of a string do not change it; any changed, added or
// removed value does. An envelope binds it (Envelope.SpecDigest, in every
// item's additional data), so a clear spec edited after sealing does not
// open (ErrSpecMismatch).
func SpecDigest(clearSpec []byte) (string, error) {
	js, err := sigsyaml.YAMLToJSONStrict(clearSpec)
	if err != nil {
		return "", fmt.Errorf("spec digest: not a YAML document: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("spec digest: %w", err)
	}
	if v == nil {
		return "", errors.New("spec digest: empty document")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // map keys sorted by encoding/json
		return "", fmt.Errorf("spec digest: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// quoteName quotes an envelope value for an error, cut to 80 bytes.
func quoteName(v string) string {
	if len(v) > 80 {
		return fmt.Sprintf("%q…(%d bytes)", v[:80], len(v))
	}
	return fmt.Sprintf("%q", v)
}
