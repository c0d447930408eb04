package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caPEM makes a self-signed certificate valid from notBefore for d, with
// its key.
func caPEM(t *testing.T, isCA bool, notBefore time.Time, d time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: notBefore, NotAfter: notBefore.Add(d), IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestCheckCASet(t *testing.T) {
	now := time.Now()
	good, goodKey := caPEM(t, true, now.Add(-time.Hour), 24*time.Hour)
	_, otherKey := caPEM(t, true, now.Add(-time.Hour), 24*time.Hour)
	expired, expiredKey := caPEM(t, true, now.Add(-48*time.Hour), 24*time.Hour)
	future, futureKey := caPEM(t, true, now.Add(time.Hour), 24*time.Hour)
	leaf, leafKey := caPEM(t, false, now.Add(-time.Hour), 24*time.Hour)
	saPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	saDER, _ := x509.MarshalECPrivateKey(saPriv)
	saPubDER, _ := x509.MarshalPKIXPublicKey(&saPriv.PublicKey)
	saKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER})
	saPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})
	_, wrongSAKey := caPEM(t, true, now, time.Hour)

	for name, tc := range map[string]struct {
		files map[string][]byte
		want  string // "" for valid
	}{
		"valid":            {map[string][]byte{"ca.crt": good, "ca.key": goodKey, "etcd/ca.crt": good, "etcd/ca.key": goodKey, "sa.key": saKey, "sa.pub": saPub}, ""},
		"no ca.key":        {map[string][]byte{"ca.crt": good}, "ca.crt and ca.key are required"},
		"expired":          {map[string][]byte{"ca.crt": expired, "ca.key": expiredKey}, "ca.crt: expired at"},
		"not yet valid":    {map[string][]byte{"ca.crt": future, "ca.key": futureKey}, "ca.crt: not valid before"},
		"not a CA":         {map[string][]byte{"ca.crt": leaf, "ca.key": leafKey}, "ca.crt: not a CA certificate"},
		"other key":        {map[string][]byte{"ca.crt": good, "ca.key": otherKey}, "ca.key does not belong to ca.crt"},
		"junk":             {map[string][]byte{"ca.crt": []byte("junk"), "ca.key": goodKey}, "ca.crt: not a PEM certificate"},
		"etcd CA expired":  {map[string][]byte{"ca.crt": good, "ca.key": goodKey, "etcd/ca.crt": expired, "etcd/ca.key": expiredKey}, "etcd/ca.crt: expired"},
		"front-proxy half": {map[string][]byte{"ca.crt": good, "ca.key": goodKey, "front-proxy-ca.crt": good}, "front-proxy-ca.crt and front-proxy-ca.key come together"},
		"sa mismatch":      {map[string][]byte{"ca.crt": good, "ca.key": goodKey, "sa.key": wrongSAKey, "sa.pub": saPub}, "sa.key does not belong to sa.pub"},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckCASet(tc.files, now)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("valid set refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("error quotes key material: %v", err)
			}
		})
	}
	// CheckCA reads the same set from a directory.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etcd"), 0o700)
	os.WriteFile(filepath.Join(dir, "ca.crt"), expired, 0o644)
	os.WriteFile(filepath.Join(dir, "ca.key"), expiredKey, 0o600)
	if err := CheckCA(dir); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("CheckCA of an expired CA: %v", err)
	}
}
