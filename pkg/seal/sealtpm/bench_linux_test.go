package sealtpm

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"testing"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealage"
)

// benchItems are a worker join's secrets: a token and a certificate key.
var benchItems = map[string][]byte{
	"spec.join.token":                  []byte("abcdef.0123456789abcdef"),
	"spec.controlPlane.certificateKey": []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
}

// BenchmarkBaselineAESGCM is the baseline: AES-256-GCM of the same items
// with a key already in hand (no key wrap, no framing, no envelope).
func BenchmarkBaselineAESGCM(b *testing.B) {
	key := make([]byte, 32)
	rand.Read(key)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCMWithRandomNonce(block)
	for b.Loop() {
		for p, v := range benchItems {
			ct := aead.Seal(nil, nil, v, []byte(p))
			if _, err := aead.Open(nil, nil, ct, []byte(p)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

type benchID interface {
	seal.Identity
	Recipient() string
}

func benchmarkType(b *testing.B, id seal.Identity, recipient string) {
	r, err := seal.ParseRecipient(recipient)
	if err != nil {
		b.Fatal(err)
	}
	bind := seal.Binding{ClusterName: "kubernetes", MachineName: "w1", SpecDigest: specDigestForTest}
	env, err := seal.Seal(bind, benchItems, r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			if _, err := seal.Seal(bind, benchItems, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			if _, err := seal.Open(env, seal.Expect{SpecDigest: specDigestForTest, ClusterName: "kubernetes", MachineName: "w1"}, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkHPKEP384(b *testing.B) {
	id, _ := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	benchmarkType(b, id, id.Recipient())
}

func BenchmarkHPKEMLKEM768P256(b *testing.B) {
	id, _ := seal.GenerateHPKEIdentity(seal.HPKESuiteMLKEM768P256)
	benchmarkType(b, id, id.Recipient())
}

func benchAge(b *testing.B, hybrid bool) {
	line, rcpt, err := sealage.Generate(hybrid)
	if err != nil {
		b.Fatal(err)
	}
	id, err := seal.ParseIdentity(line)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkType(b, id, rcpt)
}

func BenchmarkAgeX25519(b *testing.B) { benchAge(b, false) }
func BenchmarkAgeHybrid(b *testing.B) { benchAge(b, true) }

// BenchmarkTPM2SWTPM opens through a real software TPM (swtpm over a unix
// socket); open is dominated by the TPM's CreatePrimary, Load and
// ECDH_ZGen.
func BenchmarkTPM2SWTPM(b *testing.B) {
	startSWTPM(b)
	id, err := Generate()
	if err != nil {
		b.Fatal(err)
	}
	benchmarkType(b, id, id.Recipient())
}
