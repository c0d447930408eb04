// Package redact removes secrets — bootstrap tokens, certificate keys and
// private key material — from text before it reaches a log, a report, the
// console or a file. A Redactor knows the secret values of one run (from
// the machine spec) and a fixed set of patterns for secrets it was not told
// about; every match is replaced by Placeholder.
//
// Text is redacted line by line: the patterns never span lines, and the
// state needed for multi-line secrets (PEM private key blocks, a certificate
// key printed on the line after its label, as kubeadm's upload-certs phase
// does) is carried from one line to the next by a Stream.
package redact

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Placeholder replaces every redacted secret.
const Placeholder = "<redacted>"

// MinSecretLen is the shortest known secret value a Redactor accepts, in
// bytes. Shorter values are ignored by Add: replacing every occurrence of a
// two-letter string would destroy the text and protect nothing. Every secret
// machineadm handles is longer (a bootstrap token secret has 16 characters,
// a certificate key 64).
const MinSecretLen = 8

// linePattern is a per-line pattern: group 1 (when keep is set) is kept,
// the rest of the match is replaced. The pattern is only tried on lines
// that contain hint (in any letter case when fold is set), which keeps
// redaction of ordinary output cheap.
type linePattern struct {
	hint string
	fold bool
	re   *regexp.Regexp
	keep bool
}

// Patterns for secrets that were not registered as values. Bootstrap
// tokens are found by replaceTokens, without a regular expression.
// Compiled on first use: most commands never redact a line.
var patterns = sync.OnceValue(func() []linePattern {
	return []linePattern{
		// Command-line flags that carry a secret: kubeadm's --token,
		// --discovery-token, --tls-bootstrap-token and --certificate-key,
		// as "--flag value", "--flag=value" or "--flag: value".
		{hint: "--", re: regexp.MustCompile(`(--(?:discovery-|tls-bootstrap-)?token(?:=|:?\s+)|--certificate-key(?:=|:?\s+))"?[^\s"]+`), keep: true},
		// A certificate key (32 bytes, 64 hex digits) after its label, as in
		// "certificate key: <hex>" or "certificateKey": "<hex>".
		{hint: "key", fold: true, re: regexp.MustCompile(`(?i)(certificate[ _-]?key\W{0,8})[0-9a-f]{64}\b`), keep: true},
		// Key material and credentials in kubeconfig and JSON/YAML documents.
		{hint: "token", re: regexp.MustCompile(`("?token"?\s*[:=]\s*"?)[A-Za-z0-9+/=._-]{16,}`), keep: true},
		// The secret half of a bootstrap token in kubeadm's bootstrap-token
		// Secret, in clear (stringData) or base64 (data).
		{hint: "token-secret", re: regexp.MustCompile(`(token-secret"?\s*[:=]\s*"?)[A-Za-z0-9+/=_-]{16,}`), keep: true},
		{hint: "client-key-data", re: regexp.MustCompile(`(client-key-data\s*[:=]\s*"?)[A-Za-z0-9+/=._-]{16,}`), keep: true},
	}
})

var (
	// pemBegin and pemEnd delimit a PEM private key block (RFC 7468):
	// "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"...
	pemBegin = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`) })
	pemEnd   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY-----`) })
	// certKeyLabel ends a line whose next line is the certificate key, as
	// kubeadm prints it: "[upload-certs] Using certificate key:".
	certKeyLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)certificate[ _-]?key\W*$`) })
	// hex64Line is a line that is only a 64-digit hex value.
	hex64Line = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*[0-9a-fA-F]{64}\s*$`) })
	// tokenShape is a whole bootstrap token; its secret half is also
	// registered by Add.
	tokenShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]{6}\.([a-z0-9]{16})$`) })
)

// Redactor replaces known secret values and secret-shaped text with
// Placeholder. It is safe for concurrent use; Add may be called while other
// goroutines redact. The zero value is not usable: call New.
type Redactor struct {
	mu       sync.RWMutex
	secrets  []string
	replacer *strings.Replacer
}

// New returns a Redactor that knows the given secret values (see Add).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// encodings are the base64 forms a secret is registered in besides itself.
var encodings = []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}

// Add registers secret values: tokens, keys, passwords, or the contents of
// private key files. For each value it registers these parts:
//   - the value;
//   - the secret half of a bootstrap token ("[a-z0-9]{6}.<secret>"), which
//     kubeadm's bootstrap-token Secret holds alone, base64-encoded, in
//     its token-secret field;
//   - every line of a multi-line value (a PEM body line appears alone in
//     line-by-line output), except PEM "-----BEGIN/END" lines;
//
// each as it is and in base64, with and without padding, in the standard
// and the URL alphabet (Secret data fields, kubeconfig *-data fields).
//
// Surrounding white space is trimmed; values shorter than MinSecretLen are
// ignored.
func (r *Redactor) Add(secrets ...string) {
	var add []string
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinSecretLen {
			continue
		}
		parts := []string{s}
		if m := tokenShape().FindStringSubmatch(s); m != nil {
			parts = append(parts, m[1])
		}
		if strings.Contains(s, "\n") {
			for _, line := range strings.Split(s, "\n") {
				line = strings.TrimSpace(line)
				if len(line) >= MinSecretLen && !strings.HasPrefix(line, "-----") {
					parts = append(parts, line)
				}
			}
		}
		// Every part in every encoding output carries it in: as it is, and
		// base64 with and without padding, standard and URL alphabets
		// (Secret data fields, kubeconfig *-data, JSON).
		for _, part := range parts {
			add = append(add, part)
			for _, enc := range encodings {
				add = append(add, enc.EncodeToString([]byte(part)))
			}
		}
	}
	if len(add) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range add {
		if !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(r.secrets))
	for _, s := range r.secrets {
		pairs = append(pairs, s, Placeholder)
	}
	r.replacer = strings.NewReplacer(pairs...)
}

// String returns s with every secret replaced. Multi-line text is handled
// as a Stream would handle its lines.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	st := r.NewStream()
	if !strings.Contains(s, "\n") {
		return st.Line(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = st.Line(l)
	}
	return strings.Join(lines, "\n")
}

// Strings redacts every element of ss in place and returns ss, carrying
// multi-line state from one element to the next (ss are consecutive lines).
func (r *Redactor) Strings(ss []string) []string {
	if r == nil {
		return ss
	}
	st := r.NewStream()
	for i, s := range ss {
		ss[i] = st.Line(s)
	}
	return ss
}

// replaceKnown replaces the registered secret values in one line and
// applies the patterns.
func (r *Redactor) replaceKnown(line string) string {
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep != nil {
		line = rep.Replace(line)
	}
	line = replaceTokens(line)
	for _, p := range patterns() {
		if !(strings.Contains(line, p.hint) || p.fold && containsFold(line, p.hint)) {
			continue
		}
		if p.keep {
			line = p.re.ReplaceAllString(line, "${1}"+Placeholder)
		} else {
			line = p.re.ReplaceAllLiteralString(line, Placeholder)
		}
	}
	return line
}

// replaceTokens replaces every bootstrap token, "[a-z0-9]{6}.[a-z0-9]{16}"
// (k8s.io/cluster-bootstrap/token/api BootstrapTokenPattern) standing
// alone — not inside a longer run of letters and digits.
func replaceTokens(line string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(line); i++ {
		if line[i] != '.' || i < 6 || i+17 > len(line) {
			continue
		}
		start, end := i-6, i+17
		if !tokenRun(line[start:i]) || !tokenRun(line[i+1:end]) ||
			(start > 0 && isWordByte(line[start-1])) || (end < len(line) && isWordByte(line[end])) {
			continue
		}
		b.WriteString(line[last:start])
		b.WriteString(Placeholder)
		last = end
		i = end - 1
	}
	if last == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}

// tokenRun reports whether s is only [a-z0-9].
func tokenRun(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// isWordByte reports whether c is a regexp word character [0-9A-Za-z_].
func isWordByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// containsFold reports whether s contains the lower-case ASCII word sub in
// any letter case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
