package leakcheck

import (
	"encoding/base64"
	"encoding/json"
	mrand "math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// A known secret carried through random chains of the encodings the
// renderers and hand-written templates use (base64 of either alphabet,
// padded or not, wrapped over indented lines, glued to a word; gzip;
// percent-encoding; a JSON string; a double-quoted string's escapes) is
// found, whatever the chain (up to four encodings) and the text around.
func TestFindsKnownSecretThroughEncodingChains(t *testing.T) {
	known := []byte("s3cr3t-value-here-0123")
	rnd := mrand.New(mrand.NewPCG(3, 4))
	word := func() string {
		const a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_-+"
		b := make([]byte, rnd.IntN(9))
		for i := range b {
			b[i] = a[rnd.IntN(len(a))]
		}
		return string(b)
	}
	encs := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"std", func(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }},
		{"rawurl", func(b []byte) []byte { return []byte(base64.RawURLEncoding.EncodeToString(b)) }},
		{"glued", func(b []byte) []byte {
			return []byte("x: " + word() + base64.RawStdEncoding.EncodeToString(b) + word() + "\n")
		}},
		{"wrapped", func(b []byte) []byte {
			w := 4 + rnd.IntN(72)
			return []byte("v: |\n    " + strings.Join(chunks(base64.StdEncoding.EncodeToString(b), w), "\n    ") + "\n" + word() + ": x\n")
		}},
		{"gzip", func(b []byte) []byte { return gz(t, b) }},
		{"percent", func(b []byte) []byte { return []byte("u=" + url.QueryEscape(string(b))) }},
		{"json", func(b []byte) []byte {
			if !utf8.Valid(b) { // JSON strings carry text; binary goes as base64
				b = []byte(base64.StdEncoding.EncodeToString(b))
			}
			j, _ := json.Marshal(map[string]string{"k": string(b)})
			return j
		}},
		{"quoted", func(b []byte) []byte {
			if !utf8.Valid(b) { // as JSON
				b = []byte(base64.StdEncoding.EncodeToString(b))
			}
			r := strings.NewReplacer("\\", `\\`, "\"", `\"`, "\n", `\n`, "\t", `\t`)
			return []byte(`key: "` + r.Replace(string(b)) + `"`)
		}},
	}
	for i := range 3000 {
		data := append([]byte(word()+" "), known...)
		data = append(data, []byte(" "+word())...)
		var chain []string
		for range 1 + rnd.IntN(4) {
			e := encs[rnd.IntN(len(encs))]
			chain = append(chain, e.name)
			data = e.f(data)
		}
		if f := Check(data, Options{Known: [][]byte{known}, KnownOnly: true}); len(f) == 0 {
			t.Fatalf("case %d: not found through %s:\n%q", i, strings.Join(chain, " > "), data)
		}
	}
}
