package controller

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// CheckCAMaterial accepts every CA kubeadm accepts: RSA, ECDSA P-256 and
// P-384 keys in PKCS#1, SEC 1 or PKCS#8, an intermediate CA,
// a bundle whose first certificate is the CA (kubeadm signs with the
// first), a service-account key pair in PKIX; and refuses a bundle whose
// first certificate is another, a PKCS#1 public key (kubeadm reads sa.pub
// as PKIX) and another CA's key.
func TestCheckCAMaterialKinds(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert := func(key crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer, cn string) (*x509.Certificate, []byte) {
		t.Helper()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	pkcs8 := func(k crypto.Signer) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	sec1 := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	pkix := func(k crypto.PublicKey) []byte {
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	root, rootPEM := cert(rsaKey, nil, nil, "root")
	_, p384PEM := cert(p384, nil, nil, "p384")
	_, p256PEM := cert(p256, nil, nil, "p256")
	_, interPEM := cert(p384, root, rsaKey, "intermediate")
	for _, tc := range []struct {
		name     string
		crt, key []byte
		keyPair  bool
		ok       bool
	}{
		{"RSA PKCS#1", rootPEM, pkcs1, false, true},
		{"RSA PKCS#8", rootPEM, pkcs8(rsaKey), false, true},
		{"ECDSA P-384 SEC 1", p384PEM, sec1(p384), false, true},
		{"ECDSA P-256 PKCS#8", p256PEM, pkcs8(p256), false, true},
		{"intermediate CA", interPEM, sec1(p384), false, true},
		{"bundle, the CA first", append(append([]byte{}, interPEM...), rootPEM...), sec1(p384), false, true},
		{"bundle, the CA second", append(append([]byte{}, rootPEM...), interPEM...), sec1(p384), false, false},
		{"service-account PKIX", pkix(rsaKey.Public()), pkcs1, true, true},
		// kubeadm reads sa.pub with keyutil, which takes PKIX only.
		{"service-account PKCS#1 public key", pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)}), pkcs1, true, false},
		{"key of another CA", p384PEM, sec1(p256), false, false},
	} {
		if p := CheckCAMaterial(tc.crt, tc.key, tc.keyPair); (p == "") != tc.ok {
			t.Errorf("%s: %q, want ok %v", tc.name, p, tc.ok)
		}
	}
}
