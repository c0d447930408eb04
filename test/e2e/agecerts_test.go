//go:build e2e

package e2e

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"path"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
)

// ageCertificates re-issues, on m, the kubeadm certificates named (files
// under /etc/kubernetes/pki, signed by the cluster CA ca.crt) and the client certificates of the
// kubeconfig files named (under /etc/kubernetes): same subject, usages and
// key, signed by the cluster's CA, but valid for one day from now, so that
// a renewal window of a few days takes them. The components keep running
// on their current certificates (same key, still valid). kubeadm issues
// its certificates for a year from the start of the process that issues
// them (a version upgrade renews them all), and a renewal window is
// shorter than a year: without this, a renewal shortly after an upgrade
// has nothing to renew.
func ageCertificates(m *Machine, certs, kubeconfigs []string) error {
	caPEM, err := m.ReadFile("/etc/kubernetes/pki/ca.crt")
	if err != nil {
		return err
	}
	b, _ := pem.Decode(caPEM)
	if b == nil {
		return fmt.Errorf("ca.crt: no PEM block")
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return err
	}
	keyPEM, err := m.ReadFile("/etc/kubernetes/pki/ca.key")
	if err != nil {
		return err
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return err
	}
	caKey, ok := k.(crypto.Signer)
	if !ok {
		return fmt.Errorf("ca.key: not a signing key")
	}
	reissue := func(name string, certPEM []byte) ([]byte, error) {
		b, _ := pem.Decode(certPEM)
		if b == nil {
			return nil, fmt.Errorf("%s: no PEM block", name)
		}
		old, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		if err != nil {
			return nil, err
		}
		now := time.Now()
		tmpl := &x509.Certificate{
			SerialNumber: serial, Subject: old.Subject,
			NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: old.KeyUsage, ExtKeyUsage: old.ExtKeyUsage, BasicConstraintsValid: true,
			DNSNames: old.DNSNames, IPAddresses: old.IPAddresses,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, old.PublicKey, caKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
	}
	for _, name := range certs {
		p := path.Join("/etc/kubernetes/pki", name)
		data, err := m.ReadFile(p)
		if err != nil {
			return err
		}
		aged, err := reissue(name, data)
		if err != nil {
			return err
		}
		if err := m.WriteFile(p, aged, 0o644); err != nil {
			return err
		}
	}
	for _, name := range kubeconfigs {
		p := path.Join("/etc/kubernetes", name)
		data, err := m.ReadFile(p)
		if err != nil {
			return err
		}
		kc, err := clientcmd.Load(data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		c := kc.Contexts[kc.CurrentContext]
		if c == nil || kc.AuthInfos[c.AuthInfo] == nil {
			return fmt.Errorf("%s: no user in its current context", name)
		}
		u := kc.AuthInfos[c.AuthInfo]
		if u.ClientCertificateData, err = reissue(name, u.ClientCertificateData); err != nil {
			return err
		}
		out, err := clientcmd.Write(*kc)
		if err != nil {
			return err
		}
		if err := m.WriteFile(p, out, 0o600); err != nil {
			return err
		}
	}
	return nil
}
