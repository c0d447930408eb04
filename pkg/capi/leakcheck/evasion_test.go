package leakcheck

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"net/url"
	"strings"
	"testing"
)

// Each way of carrying a secret that a renderer, a template or a careless
// hand can produce is found: base64 whose run is glued to other base64
// characters before or after it (a YAML tag, the next line of a folded
// block, a path), percent-encoding outside a data URL, upper-case hex, a
// gzip stream with bytes after it or cut short, backslash escapes of a
// YAML or shell double-quoted string.
func TestFindsSecretsGluedCutOrEscaped(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(k)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	b64 := base64.StdEncoding.EncodeToString
	raw := base64.RawStdEncoding.EncodeToString
	known := []byte("s3cr3t-value-here-0123")
	zipped := gz(t, keyPEM)
	wrapped := strings.Join(chunks(raw(zipped), 60), "\n  ")
	cases := map[string]struct {
		data []byte
		want string
	}{
		"glued after a word":      {[]byte("content: !!binary\n  " + wrapped + "\n"), "PEM private key"},
		"glued before a word":     {[]byte("content: |\n  " + wrapped + "\n  owner: root\n"), "PEM private key"},
		"after a path":            {[]byte("/var/lib/x/" + b64(keyPEM)), "PEM private key"},
		"url and std alphabet":    {[]byte("my_file-" + b64(keyPEM)), "PEM private key"},
		"unpadded after a word":   {[]byte("abc" + raw(append(keyPEM, 'x', 'y'))), "PEM private key"},
		"percent outside a url":   {[]byte("curl -d 'key=" + url.QueryEscape(string(keyPEM)) + "' https://x/"), "PEM private key"},
		"percent known":           {[]byte("u=" + strings.ReplaceAll(url.QueryEscape(string(known)), "-", "%2D")), "known secret 0"},
		"upper hex known":         {[]byte("v: " + strings.ToUpper(hex.EncodeToString(known))), "known secret 0"},
		"gzip with bytes after":   {[]byte("c: " + b64(append(gz(t, keyPEM), "trailer"...))), "PEM private key"},
		"gzip cut short":          {[]byte("c: " + b64(zipped[:len(zipped)-4])), "PEM private key"},
		"escaped newlines":        {[]byte(`"c": ` + strings.ReplaceAll(`"`+strings.Join(chunks(b64(zipped), 40), "\n")+`"`, "\n", `\n`)), "PEM private key"},
		"escaped pem in yaml":     {[]byte(`key: "` + strings.ReplaceAll(string(keyPEM), "\n", `\n`) + `"`), "PEM private key"},
		"known raw std base64 x3": {[]byte("a: " + raw(append([]byte("ab"), known...))), "known secret 0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := Check(c.data, Options{Known: [][]byte{known}, KnownOnly: true})
			if !has(f, c.want) {
				t.Fatalf("want %q, got %v in %q", c.want, f, c.data)
			}
		})
	}
}

// A gzip layer that expands past what the check reads is a finding: a
// secret after 16 MiB of padding was passed as clean.
func TestGzipPastTheLimitIsAFinding(t *testing.T) {
	known := []byte("s3cr3t-value-here-0123")
	big := append(make([]byte, maxDecoded+1024), known...)
	data := []byte("c: " + base64.StdEncoding.EncodeToString(gz(t, big)))
	if f := Check(data, Options{Known: [][]byte{known}, KnownOnly: true}); len(f) == 0 {
		t.Fatal("a secret past 16 MiB of gzip content was passed as clean")
	}
	small := []byte("c: " + base64.StdEncoding.EncodeToString(gz(t, make([]byte, maxDecoded))))
	if f := Check(small, Options{Known: [][]byte{known}, KnownOnly: true}); len(f) != 0 {
		t.Fatalf("exactly 16 MiB of clean gzip content: %v", f)
	}
}
