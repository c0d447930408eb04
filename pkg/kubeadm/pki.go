package kubeadm

import (
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pkiutil"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// CASet names the shared cluster CA files in kubeadm's layout, relative to
// a PKI directory. Control-plane nodes of one cluster must share them.
var CASet = []string{
	"ca.crt", "ca.key",
	"front-proxy-ca.crt", "front-proxy-ca.key",
	"etcd/ca.crt", "etcd/ca.key",
	"sa.key", "sa.pub",
}

// KeyTypes are the accepted key types of `machineadm pki init`, by
// kubeadm's encryptionAlgorithm names.
var KeyTypes = []string{"ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096"}

// ErrPKIExists is returned by InitPKI when the directory already holds CA
// files; it never overwrites them.
var ErrPKIExists = errors.New("CA files already exist")

// InitPKI creates the shared cluster CA set in dir with kubeadm's own
// certificate code: the cluster CA ("kubernetes"), the front-proxy CA, the
// etcd CA and the service-account key pair, with keys of keyType
// ("ECDSA-P256" default). Private keys are written 0600, the directory
// 0700. It returns the CA cert hash that joining nodes pin. It fails with
// ErrPKIExists rather than overwrite existing CA files.
//
// kubeadm's progress lines ("[certs] Generating …") go to progress (nil
// discards them), never to standard output, so that standard output holds
// only the hash.
func InitPKI(dir, keyType string, progress func(line string)) (hash string, err error) {
	outputMu.Lock()
	defer outputMu.Unlock()
	err = captureStdio(progress, func(io.Writer, io.Writer) error {
		hash, err = initPKI(dir, keyType)
		return err
	})
	return hash, err
}

func initPKI(dir, keyType string) (string, error) {
	if keyType == "" {
		keyType = "ECDSA-P256"
	}
	valid := false
	for _, k := range KeyTypes {
		valid = valid || k == keyType
	}
	if !valid {
		return "", fmt.Errorf("key type %q: must be one of %v", keyType, KeyTypes)
	}
	for _, f := range CASet {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return "", fmt.Errorf("%s: %w; use another directory", filepath.Join(dir, f), ErrPKIExists)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	ic := &kubeadmapi.InitConfiguration{}
	ic.ClusterConfiguration.EncryptionAlgorithm = kubeadmapi.EncryptionAlgorithmType(keyType)
	ic.ClusterConfiguration.CertificatesDir = dir
	var rootCert *x509.Certificate
	for _, ca := range []*certsphase.KubeadmCert{certsphase.KubeadmCertRootCA(), certsphase.KubeadmCertFrontProxyCA(), certsphase.KubeadmCertEtcdCA()} {
		// CreateAsCA also writes the pair into ic.CertificatesDir.
		cert, _, err := ca.CreateAsCA(ic)
		if err != nil {
			return "", fmt.Errorf("creating %s: %w", ca.Name, err)
		}
		if rootCert == nil {
			rootCert = cert
		}
	}
	if err := certsphase.CreateServiceAccountKeyAndPublicKeyFiles(dir, kubeadmapi.EncryptionAlgorithmType(keyType)); err != nil {
		return "", fmt.Errorf("creating the service-account key pair: %w", err)
	}
	return pubkeypin.Hash(rootCert), nil
}

// CACertHash returns the "sha256:<hex>" hash of the SubjectPublicKeyInfo of
// the CA certificate in dir/ca.crt, as joining nodes pin it.
func CACertHash(dir string) (string, error) {
	cert, err := pkiutil.TryLoadCertFromDisk(dir, "ca")
	if err != nil {
		return "", err
	}
	return pubkeypin.Hash(cert), nil
}

// GenerateToken returns a new random bootstrap token
// "[a-z0-9]{6}.[a-z0-9]{16}" from crypto/rand.
func GenerateToken() (string, error) {
	return bootstraputil.GenerateBootstrapToken()
}

// CheckCA loads DIR/ca.crt and DIR/ca.key with kubeadm's own loaders and
// checks that the certificate is a CA and that the key is its private key,
// so that a junk or mismatched pair fails before the host is changed
// rather than making kubeadm silently create a new CA.
func CheckCA(dir string) error {
	cert, key, err := pkiutil.TryLoadCertAndKeyFromDisk(dir, "ca")
	if err != nil {
		return err
	}
	if !cert.IsCA {
		return fmt.Errorf("%s: not a CA certificate", filepath.Join(dir, "ca.crt"))
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return fmt.Errorf("%s does not belong to %s", filepath.Join(dir, "ca.key"), filepath.Join(dir, "ca.crt"))
	}
	return nil
}

// CheckInputs checks the shapes of resolved secrets: bootstrap tokens
// "[a-z0-9]{6}.[a-z0-9]{16}" and the certificate key, 32 bytes in hex.
// Errors name the input, never its value.
func CheckInputs(in Inputs) error {
	if in.JoinToken != "" && !bootstraputil.IsValidBootstrapToken(in.JoinToken) {
		return errors.New("spec.join.token: not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	for i, t := range in.BootstrapTokens {
		if !bootstraputil.IsValidBootstrapToken(t) {
			return fmt.Errorf("spec.controlPlane.bootstrapTokens[%d].token: not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}", i)
		}
	}
	if in.CertificateKey != "" {
		if b, err := hex.DecodeString(in.CertificateKey); err != nil || len(b) != 32 {
			return errors.New("spec.controlPlane.certificateKey: not 64 hex characters (a 32-byte AES key)")
		}
	}
	return nil
}

// CheckCAPEM is CheckCA for a CA certificate and key held in memory (PEM),
// such as the CA set of a sealed spec.
func CheckCAPEM(certPEM, keyPEM []byte) error {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) == 0 {
		return fmt.Errorf("ca.crt: not a PEM certificate")
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("ca.key: not a PEM private key")
	}
	if !certs[0].IsCA {
		return fmt.Errorf("ca.crt: not a CA certificate")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return fmt.Errorf("ca.key: not a signing key")
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(certs[0].PublicKey) {
		return fmt.Errorf("ca.key does not belong to ca.crt")
	}
	return nil
}
