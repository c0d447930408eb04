package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/copycerts"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/stdio"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// CASet names the shared cluster CA files in kubeadm's layout, relative to
// a PKI directory. Control-plane nodes of one cluster must share them.
var CASet = []string{
	"ca.crt", "ca.key",
	"front-proxy-ca.crt", "front-proxy-ca.key",
	"etcd/ca.crt", "etcd/ca.key",
	"sa.key", "sa.pub",
}

// EncryptionKeyFile is the file, relative to a PKI directory, that holds
// the cluster's encryption-at-rest key beside the CA set: the base64
// encoding of 32 random bytes (an AES-256 key for the API server's aescbc
// provider), mode 0600. `machineadm pki init` writes it; under a
// compliance profile a control plane whose spec gives pki.dir (or the
// sealed CA set) and no spec.controlPlane.apiServer.encryption encrypts
// Secrets with it. Every control plane of a cluster must hold the same
// key, which is why it travels with the CA set rather than being made on
// a node.
const EncryptionKeyFile = machineadm.CASetEncryptionKeyFile

// KeyTypes are the accepted key types of `machineadm pki init`, by
// kubeadm's encryptionAlgorithm names.
var KeyTypes = []string{"ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096"}

// ErrPKIExists is returned by InitPKI when the directory already holds CA
// files; it never overwrites them.
var ErrPKIExists = errors.New("CA files already exist")

// ErrPKIDirInUse is returned by InitPKI when the directory exists and
// holds other files: it writes a CA set only into a new or empty
// directory, since it makes the directory 0700 (`pki init --out /etc`
// would have locked every other user out of /etc, and --out / out of the
// whole file system).
var ErrPKIDirInUse = errors.New("holds other files; pki init writes the CA set into a new or empty directory")

// ErrPKINotDir is returned by InitPKI, changing nothing, when its
// directory names a file that is not a directory (a regular file, a FIFO,
// a device).
var ErrPKINotDir = errors.New("not a directory")

// InitPKI creates the shared cluster CA set in dir with kubeadm's own
// certificate code: the cluster CA ("kubernetes"), the front-proxy CA, the
// etcd CA and the service-account key pair, with keys of keyType
// ("ECDSA-P256" default). Private keys are written 0600, the directory
// 0700. Beside the CA set it writes the cluster's encryption-at-rest key
// (EncryptionKeyFile, 0600; WriteEncryptionKey). It returns the CA cert
// hash that joining nodes pin. It fails with
// ErrPKIExists rather than overwrite existing CA files, with
// ErrPKIDirInUse, changing nothing, when dir exists and is not empty, and
// with ErrPKINotDir when dir names a file that is not a directory.
//
// kubeadm's progress lines ("[certs] Generating …") go to progress (nil
// discards them), never to standard output, so that standard output holds
// only the hash.
func InitPKI(dir, keyType string, progress func(line string)) (hash string, err error) {
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	err = stdio.Capture(progress, func(io.Writer, io.Writer) error {
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
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return "", fmt.Errorf("%s: %w (it is %s)", dir, ErrPKINotDir, readlimit.Describe(fi.Mode()))
	}
	if err := dirEmptyBut(dir, ""); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// The checks above are for the clear message; two runs at once both
	// pass them, and kubeadm's writes replace files, so the CA set would
	// mix both runs' certificates and keys (a ca.crt without its ca.key).
	// The run that creates the claim file writes; it checks again that the
	// directory holds nothing else (a run that claimed and finished before
	// has left its CA set) and removes the claim when done.
	claim := filepath.Join(dir, initClaimFile)
	cf, err := os.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%s %w (%s: another pki init is writing there, or one was interrupted: remove the directory's contents)", dir, ErrPKIDirInUse, initClaimFile)
	}
	if err != nil {
		return "", err
	}
	cf.Close()
	defer os.Remove(claim)
	if err := dirEmptyBut(dir, initClaimFile); err != nil {
		return "", err
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
	if _, err := WriteEncryptionKey(filepath.Join(dir, EncryptionKeyFile)); err != nil {
		return "", fmt.Errorf("creating the encryption key: %w", err)
	}
	return pubkeypin.Hash(rootCert), nil
}

// MaxCAFileSize bounds each file of a CA set that machineadm reads (1
// MiB): a CA certificate, key or service-account key is a few KiB, so a
// larger file is not one.
const MaxCAFileSize = 1 << 20

// readCAFile reads one file of a CA set through readlimit.File: a regular
// file of at most MaxCAFileSize bytes. A FIFO, device or directory at the
// path is refused without blocking and a larger file without being read
// whole, so that a misplaced path can neither hang a run nor exhaust its
// memory.
func readCAFile(path string) ([]byte, error) {
	data, err := readlimit.File(path, MaxCAFileSize)
	if err != nil {
		var nr *readlimit.NotRegularError
		if errors.As(err, &nr) || readlimit.IsTooLarge(err) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	return data, nil
}

// CACertHash returns the "sha256:<hex>" hash of the SubjectPublicKeyInfo of
// the CA certificate in dir/ca.crt (the first certificate of the file), as
// joining nodes pin it. ca.crt is read with readCAFile's bounds.
func CACertHash(dir string) (string, error) {
	path := filepath.Join(dir, "ca.crt")
	data, err := readCAFile(path)
	if err != nil {
		return "", fmt.Errorf("couldn't load the certificate file: %w", err)
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return "", fmt.Errorf("couldn't load the certificate file %s: %w", path, err)
	}
	return pubkeypin.Hash(certs[0]), nil
}

// GenerateToken returns a new random bootstrap token
// "[a-z0-9]{6}.[a-z0-9]{16}" from crypto/rand.
func GenerateToken() (string, error) {
	return bootstraputil.GenerateBootstrapToken()
}

// GenerateCertificateKey returns a new random certificate key, the
// AES-256 key kubeadm encrypts the shared certificates with in the
// kubeadm-certs Secret (spec.controlPlane.certificateKey): 64 lower-case
// hex characters from crypto/rand, made by kubeadm's own copycerts code.
func GenerateCertificateKey() (string, error) {
	return copycerts.CreateCertificateKey()
}

// GenerateEncryptionKey returns a new encryption-at-rest key for the API
// server's aescbc provider: the standard base64 encoding of 32 random
// bytes from crypto/rand (AES-256).
func GenerateEncryptionKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// initClaimFile is the file, in the directory InitPKI writes a CA set
// into, that the one run writing there holds while it does.
const initClaimFile = ".machineadm-pki-init"

// dirEmptyBut returns ErrPKIDirInUse when dir holds a file other than
// except (a missing dir is empty).
func dirEmptyBut(dir, except string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if n != except {
			return fmt.Errorf("%s %w (%s)", dir, ErrPKIDirInUse, n)
		}
	}
	return nil
}

// WriteEncryptionKey writes a new key (GenerateEncryptionKey) followed by
// a newline to path, mode 0600, unless path exists: a key other control
// planes may already hold, and that encrypts data in etcd, is never
// replaced. It reports whether it wrote one. The file appears whole
// (atomicfile.Create: a hard link of the complete, synced temporary
// file), so a run that finds it, at the same time or after a crash, never
// takes an empty or partial key for the cluster's; a link planted at path
// is not followed.
func WriteEncryptionKey(path string) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	key, err := GenerateEncryptionKey()
	if err != nil {
		return false, err
	}
	err = atomicfile.Create(path, []byte(key+"\n"), 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// CheckCA reads the CA set in dir (kubeadm's layout, CASet), each file
// with readCAFile's bounds, and checks it with CheckCASet.
func CheckCA(dir string) error {
	files := map[string][]byte{}
	for _, name := range CASet {
		data, err := readCAFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		files[filepath.ToSlash(name)] = data
	}
	return CheckCASet(files, time.Now())
}

// caPairs are the CA certificates of a CA set with their keys.
var caPairs = []string{"ca", "front-proxy-ca", "etcd/ca"}

// CheckCASet checks a CA set held as files by name relative to its
// directory ("ca.crt", "etcd/ca.key", "sa.pub"): ca.crt and ca.key are
// required; each CA certificate present must parse, be a CA, be valid at
// now (its NotBefore and NotAfter), and come with the private key that
// belongs to it; sa.key and sa.pub, when present, must be one key pair.
// A junk, expired or mismatched set fails before the host is changed
// rather than making kubeadm silently create a new CA. Errors name the
// file, never key material.
func CheckCASet(files map[string][]byte, now time.Time) error {
	if files["ca.crt"] == nil || files["ca.key"] == nil {
		return errors.New("ca.crt and ca.key are required")
	}
	for _, base := range caPairs {
		certPEM, keyPEM := files[base+".crt"], files[base+".key"]
		if certPEM == nil && keyPEM == nil {
			continue
		}
		if certPEM == nil || keyPEM == nil {
			return fmt.Errorf("%s.crt and %s.key come together", base, base)
		}
		certs, err := certutil.ParseCertsPEM(certPEM)
		if err != nil || len(certs) == 0 {
			return fmt.Errorf("%s.crt: not a PEM certificate", base)
		}
		cert := certs[0]
		switch {
		case !cert.IsCA:
			return fmt.Errorf("%s.crt: not a CA certificate", base)
		case now.Before(cert.NotBefore):
			return fmt.Errorf("%s.crt: not valid before %s", base, cert.NotBefore.UTC().Format(time.RFC3339))
		case now.After(cert.NotAfter):
			return fmt.Errorf("%s.crt: expired at %s", base, cert.NotAfter.UTC().Format(time.RFC3339))
		}
		if err := keyMatches(keyPEM, cert.PublicKey); err != nil {
			return fmt.Errorf("%s.key does not belong to %s.crt: %w", base, base, err)
		}
	}
	if keyPEM, pubPEM := files["sa.key"], files["sa.pub"]; keyPEM != nil && pubPEM != nil {
		pubs, err := keyutil.ParsePublicKeysPEM(pubPEM)
		if err != nil || len(pubs) == 0 {
			return errors.New("sa.pub: not a PEM public key")
		}
		if err := keyMatches(keyPEM, pubs[0]); err != nil {
			return fmt.Errorf("sa.key does not belong to sa.pub: %w", err)
		}
	}
	return nil
}

// keyMatches checks that the PEM private key is the private half of pub.
func keyMatches(keyPEM []byte, pub crypto.PublicKey) error {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return errors.New("not a PEM private key")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return errors.New("not a signing key")
	}
	if p, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !p.Equal(pub) {
		return errors.New("another key")
	}
	return nil
}

// CheckInputs checks the shapes of resolved secrets
// (validation.SecretShapeProblem): bootstrap tokens
// "[a-z0-9]{6}.[a-z0-9]{16}" and the certificate key, 32 bytes in hex.
// Errors name the input, never its value.
func CheckInputs(in translate.Inputs) error {
	if in.JoinToken != "" {
		if p := validation.SecretShapeProblem(machineadm.SecretFormatBootstrapToken, in.JoinToken); p != "" {
			return errors.New("spec.join.token: " + p)
		}
	}
	for i, t := range in.BootstrapTokens {
		if p := validation.SecretShapeProblem(machineadm.SecretFormatBootstrapToken, t); p != "" {
			return fmt.Errorf("spec.controlPlane.bootstrapTokens[%d].token: %s", i, p)
		}
	}
	if in.CertificateKey != "" {
		if p := validation.SecretShapeProblem(machineadm.SecretFormatCertificateKey, in.CertificateKey); p != "" {
			return errors.New("spec.controlPlane.certificateKey: " + p)
		}
	}
	return nil
}
