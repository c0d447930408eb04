package leakcheck

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	mrand "math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestFindsSecretsInEveryEncoding(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(k)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	tok := []byte("abcdef.0123456789abcdef")
	ck := []byte(strings.Repeat("3f", 32))
	b64 := base64.StdEncoding.EncodeToString
	ign, _ := json.Marshal(map[string]any{"storage": map[string]any{"files": []any{map[string]any{
		"contents": map[string]any{"source": "data:;base64," + b64(gz(t, keyPEM))}}}}})
	cases := map[string]struct {
		data []byte
		want string
	}{
		"plain pem":           {keyPEM, "PEM private key"},
		"base64 pem":          {[]byte("content: " + b64(keyPEM)), "PEM private key"},
		"gzip+base64 pem":     {[]byte("content: " + b64(gz(t, keyPEM))), "PEM private key"},
		"wrapped base64":      {[]byte("value: |\n  " + strings.Join(chunks(b64(gz(t, keyPEM)), 60), "\n  ")), "PEM private key"},
		"ignition data url":   {ign, "PEM private key"},
		"percent data url":    {[]byte(`"source":"data:,` + url.PathEscape(string(keyPEM)) + `"`), "PEM private key"},
		"token":               {[]byte("token: " + string(tok) + "\n"), "bootstrap token"},
		"token base64 gzip":   {[]byte(b64(gz(t, []byte("join:\n  token: "+string(tok))))), "bootstrap token"},
		"certificate key":     {[]byte("certificateKey: " + string(ck)), "certificate key"},
		"double base64":       {[]byte(b64([]byte(b64(tok)))), "bootstrap token"},
		"known secret in b64": {[]byte(b64([]byte("x" + "s3cr3t-value-here"))), ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := Check(c.data, Options{})
			if c.want == "" {
				if len(f) != 0 {
					t.Fatalf("unexpected findings %v", f)
				}
				return
			}
			if !has(f, c.want) {
				t.Fatalf("want %q, got %v", c.want, f)
			}
		})
	}
}

func TestKnownSecrets(t *testing.T) {
	secret := []byte("s3cr3t-value-here")
	data := []byte(base64.StdEncoding.EncodeToString(gz(t, []byte("x: "+base64.StdEncoding.EncodeToString(secret)))))
	f := Check(data, Options{Known: [][]byte{secret}, KnownOnly: true})
	if !has(f, "known secret 0") {
		t.Fatalf("known secret not found: %v", f)
	}
}

func TestNoFalsePositives(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	clean := []byte("#cloud-config\nwrite_files:\n- path: /etc/x\n  content: hello\nruncmd:\n- [sh, -c, 'echo " + digest + "']\n" +
		"caCertHashes: [sha256:" + strings.Repeat("cd", 32) + "]\nendpoint: registry.example.com:5000\n")
	if f := Check(clean, Options{AllowHex: []string{digest}}); len(f) != 0 {
		t.Fatalf("clean data flagged: %v", f)
	}
	if f := Check(clean, Options{}); !has(f, "certificate key") {
		t.Fatalf("a bare 64-hex string that is not allowed must be flagged: %v", f)
	}
	if f := Check([]byte("token: abcdef.0123456789abcdef"), Options{KnownOnly: true}); len(f) != 0 {
		t.Fatalf("KnownOnly must skip shape patterns: %v", f)
	}
}

func has(f []Finding, what string) bool {
	for _, x := range f {
		if x.What == what {
			return true
		}
	}
	return false
}

func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// b64Runs finds exactly what the regular expression it replaces finds,
// on random text over an alphabet dense in base64 characters, padding and
// separators, and on the edge cases of run length and padding.
func TestB64RunsMatchesTheExpression(t *testing.T) {
	re := regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)
	cases := []string{
		"", "aaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa===", "=aaaaaaaaaaaaaaaa=b",
		"x aaaaaaaaaaaaaaaa\naaaaaaaaaaaaaaa= bbbbbbbbbbbbbbbbbbbb==c",
	}
	rnd := mrand.New(mrand.NewPCG(1, 2))
	const alphabet = "aZ09+/_-===. \n\x00\xff"
	for range 2000 {
		b := make([]byte, rnd.IntN(200))
		for i := range b {
			if rnd.IntN(8) == 0 {
				b[i] = alphabet[rnd.IntN(len(alphabet))]
			} else {
				b[i] = "abcXYZ019+/_-"[rnd.IntN(13)]
			}
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		want := re.FindAll([]byte(c), -1)
		got := b64Runs([]byte(c))
		if len(got) != len(want) {
			t.Fatalf("%q: %d runs, the expression finds %d", c, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: run %d is %q, the expression finds %q", c, i, got[i], want[i])
			}
		}
	}
}

// gzip layers are read with reused readers: each check sees its own
// data's content, never a previous one's.
func TestGzipReadersReused(t *testing.T) {
	secret := []byte("a-known-secret-value-0001")
	for i := range 3 {
		leaky := base64.StdEncoding.EncodeToString(gz(t, append([]byte("x: "), secret...)))
		clean := base64.StdEncoding.EncodeToString(gz(t, []byte("x: nothing to see here, nothing at all")))
		if f := Check([]byte(leaky), Options{Known: [][]byte{secret}, KnownOnly: true}); len(f) == 0 {
			t.Fatalf("round %d: the gzipped secret is not found", i)
		}
		if f := Check([]byte(clean), Options{Known: [][]byte{secret}, KnownOnly: true}); len(f) != 0 {
			t.Fatalf("round %d: found %v in clean data", i, f)
		}
		if f := Check([]byte("H4sIAAAAbroken-gzip-header-and-more"), Options{Known: [][]byte{secret}, KnownOnly: true}); len(f) != 0 {
			t.Fatalf("round %d: found %v in broken gzip", i, f)
		}
	}
}
