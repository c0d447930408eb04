package seal

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// MaxSealedSpecBytes bounds a whole multi-document file: a spec and its
// SealedSecrets (2 MiB).
const MaxSealedSpecBytes = 2 << 20

// Split separates a multi-document YAML file into the machine spec and its
// SealedSecrets document, for the spec loader and Parse. Documents are
// separated by lines that start with "---"; empty documents are skipped.
// It accepts one spec document (any kind other than SealedSecrets) and at
// most one SealedSecrets document, in either order; sealed is nil when the
// file has none, and a file without any "---" line is returned whole as
// the spec. Errors name the document by its 1-based position.
func Split(data []byte) (spec, sealed []byte, err error) {
	if len(data) > MaxSealedSpecBytes {
		return nil, nil, fmt.Errorf("file is %d bytes, more than the limit of %d", len(data), MaxSealedSpecBytes)
	}
	docs := splitDocuments(data)
	for i, d := range docs {
		var head struct {
			Kind string `yaml:"kind"`
		}
		if err := yaml.Unmarshal(d, &head); err != nil {
			return nil, nil, fmt.Errorf("document %d: not YAML: %v", i+1, err)
		}
		if head.Kind == Kind {
			if sealed != nil {
				return nil, nil, fmt.Errorf("document %d: a second %s document; a file holds at most one", i+1, Kind)
			}
			sealed = d
			continue
		}
		if spec != nil {
			return nil, nil, fmt.Errorf("document %d: a second spec document (kind %q); a file holds one spec and at most one %s", i+1, head.Kind, Kind)
		}
		spec = d
	}
	if spec == nil {
		return nil, nil, fmt.Errorf("no spec document, only %s", Kind)
	}
	return spec, sealed, nil
}

// splitDocuments cuts data at "---" lines, dropping documents that hold
// only white space and comments. A file without a "---" line is one
// document, kept byte for byte.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	marker := false
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	// The buffer grows to the longest line (at most MaxSealedSpecBytes);
	// it starts no larger than data.
	sc.Buffer(make([]byte, 0, min(len(data)+1, 64<<10)), MaxSealedSpecBytes)
	for sc.Scan() {
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t") {
			marker = true
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if !marker {
		return [][]byte{data}
	}
	flush()
	return docs
}

func hasContent(d []byte) bool {
	for _, l := range strings.Split(string(d), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}

// Join writes a spec and its SealedSecrets document as one file: the spec,
// a "---" line, the envelope.
func Join(spec, sealed []byte) []byte {
	var b bytes.Buffer
	b.Write(spec)
	if len(spec) > 0 && spec[len(spec)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("---\n")
	b.Write(sealed)
	return b.Bytes()
}
