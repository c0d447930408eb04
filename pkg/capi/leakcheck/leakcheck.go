// Package leakcheck looks for secrets in the clear in bootstrap data: PEM
// private keys, bootstrap tokens, certificate keys and any caller-given
// secret value, in the bytes as given and in every encoding the renderers
// and bootstrappers use to carry content (base64 of either alphabet, with
// or without padding, wrapped over lines or glued to other base64
// characters; gzip, also cut short or among other bytes; data URLs and
// other percent-encoding; JSON strings and the backslash escapes of
// double-quoted strings; hex of either case for known values), nested up
// to a few layers deep.
//
// The controller runs it on every data Secret before writing it, and the
// tests run it on every data Secret they see.
package leakcheck

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Finding is one secret found in the clear.
type Finding struct {
	// What names the kind of secret ("PEM private key", "bootstrap token",
	// "certificate key" or "known secret N"), never its value, or says
	// that part of the data could not be checked ("gzip content past 16
	// MiB, not checked").
	What string
	// Layer describes how it was reached, for example
	// "base64 > gzip > text".
	Layer string
}

func (f Finding) String() string { return f.What + " in " + f.Layer }

// maxDepth bounds how many encodings deep Check looks.
const maxDepth = 6

// maxDecoded bounds how much of one gzip layer is read (16 MiB); a layer
// that expands further is a finding.
const maxDecoded = 16 << 20

var (
	// pemKey is a PEM private key's header; "+" stands for a space where
	// the text was form-encoded.
	pemKey = regexp.MustCompile(`-----BEGIN[ +]([A-Z0-9]+[ +])*PRIVATE[ +]KEY-----`)
	// token is a bootstrap token, "[a-z0-9]{6}.[a-z0-9]{16}" (k8s.io/cluster-bootstrap).
	token = regexp.MustCompile(`(^|[^a-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}($|[^a-z0-9])`)
	// certKey is kubeadm's certificate key: 32 bytes as 64 hex digits.
	certKey = regexp.MustCompile(`(^|[^0-9a-fA-F])[0-9a-f]{64}($|[^0-9a-fA-F])`)
	// dataURL is an RFC 2397 data URL (Ignition file contents).
	dataURL = regexp.MustCompile(`data:[^,"'\s]*,[^"'\s]*`)
)

// Options tune Check.
type Options struct {
	// Known are exact secret values to look for besides the patterns (for
	// example the token and certificate key the controller created). Each
	// is also looked for hex- and base64-encoded.
	Known [][]byte
	// AllowHex lists 64-hex-digit strings that are not secrets (for
	// example the agent's SHA-256 digest, which has the certificate key's
	// shape).
	AllowHex []string
	// KnownOnly drops the token and certificate-key shape patterns and
	// looks only for PEM private keys and Known values: the shapes can
	// match harmless text (a host name, a digest), which must not stop the
	// controller, while tests want them.
	KnownOnly bool
}

// Check returns every secret found in data.
func Check(data []byte, o Options) []Finding {
	c := &checker{o: o, seen: map[string]bool{}, seed: maphash.MakeSeed(), walked: map[uint64]int{}}
	// Each known value's forms are made once, not at every layer.
	c.known = make([][][]byte, len(o.Known))
	for i, k := range o.Known {
		if len(k) > 0 {
			// Unpadded base64 forms: each is in its padded form too.
			h := hex.EncodeToString(k)
			c.known[i] = [][]byte{k, []byte(h), []byte(strings.ToUpper(h)), []byte(base64.RawStdEncoding.EncodeToString(k)), []byte(base64.RawURLEncoding.EncodeToString(k))}
		}
	}
	c.walk(data, "text", 0)
	return c.out
}

type checker struct {
	o     Options
	known [][][]byte // per Options.Known: the value, lower and upper hex, base64, URL base64
	out   []Finding
	seen  map[string]bool
	// walked holds the depth each layer (by its bytes' hash) was walked
	// from.
	seed   maphash.Seed
	walked map[uint64]int
}

func (c *checker) add(what, layer string) {
	k := what + "\x00" + layer
	if !c.seen[k] {
		c.seen[k] = true
		c.out = append(c.out, Finding{What: what, Layer: layer})
	}
}

func (c *checker) walk(data []byte, layer string, depth int) {
	if len(data) == 0 || depth > maxDepth {
		return
	}
	// The same bytes are reached by several ways (a string in the text
	// and in its JSON value, a run in a line and in the joined lines, a
	// layer with and without its escapes undone): each is looked into once
	// from the shallowest depth that reaches it.
	h := maphash.Bytes(c.seed, data)
	if d, ok := c.walked[h]; ok && d <= depth {
		return
	}
	c.walked[h] = depth
	c.scan(data, layer)
	if depth == maxDepth {
		return
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		if out := c.gunzip(data, layer); len(out) > 0 {
			c.walk(out, layer+" > gzip", depth+1)
		}
		return
	}
	// A gzip stream after other bytes (base64 decoded from a run that
	// starts with other text).
	for i, n := 0, 0; n < maxGzipStarts; n++ {
		j := bytes.Index(data[i:], gzipMagic)
		if j < 0 {
			break
		}
		if out := c.gunzip(data[i+j:], layer); len(out) > 0 {
			c.walk(out, layer+" > gzip", depth+1)
		}
		i += j + 1
	}
	// JSON documents (Ignition): walk every string value unescaped.
	isJSON := false
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var v any
		if json.Unmarshal(t, &v) == nil {
			isJSON = true
			for _, s := range jsonStrings(v, nil) {
				c.walk([]byte(s), layer+" > json", depth+1)
			}
		}
	}
	if bytes.Contains(data, []byte("data:")) {
		for _, m := range dataURL.FindAll(data, -1) {
			if out, ok := decodeDataURL(string(m)); ok {
				c.walk(out, layer+" > data-url", depth+1)
			}
		}
	}
	// Text only, or text between bytes of noise (base64 decoded at the
	// right offset from a glued run); noise alone is not looked into:
	// percent-encoding outside a data URL (a URL's query, a form body; a
	// lone data URL was unescaped above), and the backslash escapes of a
	// double-quoted string that is not JSON (YAML, shell, PowerShell):
	// "\n" between the lines of a wrapped payload.
	if utf8.Valid(data) || mostlyText(data) {
		if !bytes.HasPrefix(data, []byte("data:")) {
			if out, ok := unpercent(data); ok {
				c.walk(out, layer+" > percent", depth+1)
				// Form encoding: "+" is a space (a "+" of the text
				// is %2B).
				if bytes.IndexByte(data, '+') >= 0 {
					form, _ := unpercent(bytes.ReplaceAll(data, []byte("+"), []byte(" ")))
					c.walk(form, layer+" > percent", depth+1)
				}
			}
		}
		if !isJSON {
			if out, ok := unbackslash(data); ok {
				c.walk(out, layer+" > escapes", depth+1)
			}
		}
	}
	// Folded YAML block scalars and PEM-style wrapping split base64 over
	// lines; join them (each line without its surrounding white space) so
	// a wrapped payload decodes as one.
	joined := make([]byte, 0, len(data))
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		joined = append(joined, bytes.TrimSpace(line)...)
	}
	for _, src := range [][]byte{data, joined} {
		for _, m := range b64Runs(src) {
			first, others := decodeB64Run(m)
			c.walk(first, layer+" > base64", depth+1)
			for _, out := range others {
				// Noise at the wrong offsets is only scanned; the
				// payload at the right one is text or gzip.
				if bytes.Contains(out, gzipMagic) || mostlyText(out) {
					c.walk(out, layer+" > base64", depth+1)
				} else {
					c.scan(out, layer+" > base64")
				}
			}
		}
	}
}

// minB64Run is the shortest run of base64 text looked into: long enough
// to hold a secret.
const minB64Run = 16

// b64Runs returns, in order, each maximal run of at least minB64Run
// characters of the standard and URL base64 alphabets in data, with up to
// two "=" of padding after it: the matches of the regular expression
// `[A-Za-z0-9+/_-]{16,}={0,2}`, found in one pass.
func b64Runs(data []byte) [][]byte {
	var out [][]byte
	for i := 0; i < len(data); {
		if !isB64(data[i]) {
			i++
			continue
		}
		start := i
		for i < len(data) && isB64(data[i]) {
			i++
		}
		if i-start < minB64Run {
			continue
		}
		for pad := 0; pad < 2 && i < len(data) && data[i] == '='; pad++ {
			i++
		}
		out = append(out, data[start:i])
	}
	return out
}

func isB64(b byte) bool {
	return b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '+' || b == '/' || b == '_' || b == '-'
}

func (c *checker) scan(data []byte, layer string) {
	if bytes.Contains(data, []byte("KEY-----")) && pemKey.Match(data) {
		c.add("PEM private key", layer)
	}
	if !c.o.KnownOnly {
		c.shapes(data, layer)
	}
	for i, forms := range c.known {
		for _, form := range forms {
			if bytes.Contains(data, form) {
				c.add(fmt.Sprintf("known secret %d", i), layer)
				break
			}
		}
	}
}

// shapes looks for bootstrap tokens and certificate keys by their shape.
func (c *checker) shapes(data []byte, layer string) {
	if token.Match(data) {
		c.add("bootstrap token", layer)
	}
	for _, loc := range certKey.FindAllIndex(data, -1) {
		m := string(data[loc[0]:loc[1]])
		start := loc[0] + strings.IndexFunc(m, isLowerHex)
		h := string(data[start : start+64])
		// "sha256:<hex>" is a digest (a CA certificate hash, a file's
		// pin), not a key.
		if bytes.HasSuffix(data[:start], []byte("sha256:")) || allowed(h, c.o.AllowHex) {
			continue
		}
		c.add("certificate key", layer)
	}
}

func isLowerHex(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' }

func allowed(h string, list []string) bool {
	for _, a := range list {
		if strings.EqualFold(a, h) {
			return true
		}
	}
	return false
}

// gzipMagic starts a gzip stream of deflate data (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// maxGzipStarts bounds how many gzip starts inside one layer are tried.
const maxGzipStarts = 8

// gunzip returns what data decompresses to, as far as it can be read: a
// stream cut short or followed by other bytes still yields its start. One
// that expands past maxDecoded is a finding of its own: what follows is
// not looked at, so the data is not known to be clean.
func (c *checker) gunzip(data []byte, layer string) []byte {
	out, _ := gunzipAll(data)
	if len(out) > maxDecoded {
		c.add("gzip content past 16 MiB, not checked", layer)
		out = out[:maxDecoded]
	}
	return out
}

func gunzipAll(data []byte) ([]byte, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	defer func() {
		if zr != nil {
			gzipReaders.Put(zr)
		}
	}()
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(data))
	} else {
		err = zr.Reset(bytes.NewReader(data))
	}
	if err != nil {
		zr = nil // not reusable
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, maxDecoded+1))
}

// gzipReaders reuses gzip readers: each holds tens of kilobytes of
// decompression state, and every data Secret the controller checks holds
// gzip layers.
var gzipReaders sync.Pool

// decodeB64Run returns what a run of base64 characters may carry: the run
// decoded as it is (nil when it does not decode), and, unless that decoded
// into text or a gzip stream, the run decoded
// from each of its first four characters with both alphabets taken as one
// and any tail that cannot be decoded dropped. A payload glued to other
// base64 characters (a word before it, the next line of a folded block
// after it) decodes at one of those offsets, between bytes of noise.
func decodeB64Run(m []byte) (first []byte, others [][]byte) {
	first, ok := decodeB64(m)
	// Decoded into text or a gzip stream: the run is aligned (noise is
	// neither). Padding proves nothing: the "=" may be the next word's.
	if ok && (bytes.HasPrefix(first, gzipMagic) || utf8.Valid(first)) {
		return first, nil
	}
	norm := bytes.TrimRight(m, "=")
	if bytes.ContainsAny(norm, "-_") {
		norm = bytes.Map(func(r rune) rune {
			switch r {
			case '-':
				return '+'
			case '_':
				return '/'
			}
			return r
		}, norm)
	}
	for off := range 4 {
		if len(norm)-off < minB64Run {
			break
		}
		s := norm[off:]
		if len(s)%4 == 1 {
			s = s[:len(s)-1]
		}
		d := make([]byte, base64.RawStdEncoding.DecodedLen(len(s)))
		n, err := base64.RawStdEncoding.Decode(d, s)
		if err != nil || n == 0 || bytes.Equal(d[:n], first) {
			continue
		}
		others = append(others, d[:n])
	}
	return first, others
}

// mostlyText reports whether at least three quarters of b are printable
// ASCII or white space (noise decoded at the wrong offset is about a
// third).
func mostlyText(b []byte) bool {
	n := 0
	for _, c := range b {
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\r' || c == '\t' {
			n++
		}
	}
	return 4*n >= 3*len(b)
}

// unpercent decodes the %XX escapes of data, leaving any "%" that starts
// none as it is; false when there is none.
func unpercent(data []byte) ([]byte, bool) {
	i := bytes.IndexByte(data, '%')
	if i < 0 {
		return nil, false
	}
	out := make([]byte, 0, len(data))
	found := false
	for ; i < len(data); i++ {
		if data[i] == '%' && i+2 < len(data) && isHex(data[i+1]) && isHex(data[i+2]) {
			b, _ := hex.DecodeString(string(data[i+1 : i+3]))
			if !found {
				out = append(out, data[:i]...)
				found = true
			}
			out = append(out, b[0])
			i += 2
			continue
		}
		if found {
			out = append(out, data[i])
		}
	}
	return out, found
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// unbackslash undoes the backslash escapes of double-quoted strings (\n,
// \r, \t, \", \', \\, \/ and \xHH), leaving any other backslash as
// it is; false when there is none.
func unbackslash(data []byte) ([]byte, bool) {
	if bytes.IndexByte(data, '\\') < 0 {
		return nil, false
	}
	out := make([]byte, 0, len(data))
	found := false
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 >= len(data) {
			out = append(out, data[i])
			continue
		}
		switch c := data[i+1]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case '\\':
			// Kept, and no reason for a layer alone (Windows paths).
			out = append(out, c)
			i++
			continue
		case '"', '\'', '/':
			out = append(out, c)
		case 'x':
			if i+3 < len(data) && isHex(data[i+2]) && isHex(data[i+3]) {
				b, _ := hex.DecodeString(string(data[i+2 : i+4]))
				out = append(out, b[0])
				i += 3
				found = true
				continue
			}
			out = append(out, data[i])
			continue
		default:
			out = append(out, data[i])
			continue
		}
		i++
		found = true
	}
	return out, found
}

func decodeB64(m []byte) ([]byte, bool) {
	s := string(m)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if out, err := enc.DecodeString(s); err == nil && len(out) > 0 {
			return out, true
		}
	}
	return nil, false
}

func decodeDataURL(u string) ([]byte, bool) {
	head, body, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok {
		return nil, false
	}
	if strings.HasSuffix(head, ";base64") {
		if un, err := url.PathUnescape(body); err == nil {
			body = un
		}
		return decodeB64([]byte(body))
	}
	un, err := url.PathUnescape(body)
	if err != nil {
		return nil, false
	}
	return []byte(un), true
}

func jsonStrings(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = jsonStrings(e, out)
		}
	case map[string]any:
		for _, e := range x {
			out = jsonStrings(e, out)
		}
	}
	return out
}
