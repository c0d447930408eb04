package controller

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ClusterSecretType is the type of the Secrets Cluster API components
// keep cluster material in (sigs.k8s.io/cluster-api/util/secret).
const ClusterSecretType corev1.SecretType = "cluster.x-k8s.io/secret"

// Keys of Cluster API's certificate Secrets.
const (
	tlsCrt = "tls.crt"
	tlsKey = "tls.key"
)

// caSpec is one of Cluster API's standard CA Secrets and where its parts
// go in kubeadm's layout (pki.dir).
type caSpec struct {
	suffix     string // Secret name is "<cluster>-<suffix>"
	commonName string
	crt, key   string // file names under pki.dir
	keyPair    bool   // the service-account key pair: tls.crt holds the public key
}

// caSet lists the four standard CA Secrets.
var caSet = []caSpec{
	{suffix: "ca", commonName: "kubernetes", crt: "ca.crt", key: "ca.key"},
	{suffix: "etcd", commonName: "etcd-ca", crt: "etcd/ca.crt", key: "etcd/ca.key"},
	{suffix: "proxy", commonName: "front-proxy-ca", crt: "front-proxy-ca.crt", key: "front-proxy-ca.key"},
	{suffix: "sa", crt: "sa.pub", key: "sa.key", keyPair: true},
}

// MissingCAError says a CA Secret is missing after the control plane was
// initialised; it is never regenerated.
type MissingCAError struct{ Name string }

func (e *MissingCAError) Error() string {
	return fmt.Sprintf("Secret %s is missing: the control plane is initialised, so it is not regenerated; restore it from a backup", e.Name)
}

// InvalidCAError says a CA Secret's certificate and key do not belong
// together (CheckCAMaterial): whatever the machines signed with them would
// not verify against the certificate the cluster trusts.
type InvalidCAError struct {
	// Name is the Secret's name; Problem says what is wrong, never
	// quoting the key.
	Name, Problem string
}

func (e *InvalidCAError) Error() string {
	return fmt.Sprintf("Secret %s: %s; replace it with a CA certificate and its own key", e.Name, e.Problem)
}

// CheckCAMaterial checks a CA Secret's tls.crt and tls.key (PEM): the key
// is a private signing key whose public half is the certificate's, and the
// certificate is a CA; with keyPair (the service-account Secret) tls.crt is
// the PEM public key of tls.key instead. It returns "" or the problem,
// which never quotes the key.
func CheckCAMaterial(crt, key []byte, keyPair bool) string {
	k, err := keyutil.ParsePrivateKeyPEM(key)
	if err != nil {
		return tlsKey + " is not a PEM private key"
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return tlsKey + " is not a signing key"
	}
	var pub crypto.PublicKey
	if keyPair {
		keys, err := keyutil.ParsePublicKeysPEM(crt)
		if err != nil || len(keys) == 0 {
			return tlsCrt + " is not a PEM public key"
		}
		pub = keys[0]
	} else {
		certs, err := certutil.ParseCertsPEM(crt)
		if err != nil || len(certs) == 0 {
			return tlsCrt + " is not a PEM certificate"
		}
		if !certs[0].IsCA {
			return tlsCrt + " is not a CA certificate"
		}
		pub = certs[0].PublicKey
	}
	if p, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !p.Equal(pub) {
		return tlsKey + " is not the key of " + tlsCrt
	}
	return ""
}

func secretName(cluster, suffix string) string { return cluster + "-" + suffix }

// ensureCAs returns the CA set's files for pki.dir, reading Cluster API's
// standard Secrets and creating the missing ones (owned by the Cluster, so
// deleting a Machine's config never takes them along). Secrets another
// component made are used as they are.
// withEtcdCA false leaves out the etcd CA (<cluster>-etcd): a cluster with
// an external etcd needs none of its own.
func ensureCAs(ctx context.Context, c client.Client, cl *clusterv1.Cluster, alg string, withEtcdCA bool) ([]SecretFile, error) {
	return caFiles(ctx, c, cl, alg, true, withEtcdCA)
}

// readCAs is ensureCAs that never creates: a missing Secret is a
// *MissingCAError (after init).
func readCAs(ctx context.Context, c client.Client, cl *clusterv1.Cluster, withEtcdCA bool) ([]SecretFile, error) {
	return caFiles(ctx, c, cl, "", false, withEtcdCA)
}

func caFiles(ctx context.Context, c client.Client, cl *clusterv1.Cluster, alg string, create, withEtcdCA bool) ([]SecretFile, error) {
	var out []SecretFile
	for _, ca := range caSet {
		if ca.suffix == etcdCASuffix && !withEtcdCA {
			continue
		}
		s, err := getOrCreateCA(ctx, c, cl, ca, alg, create)
		if err != nil {
			return nil, err
		}
		crt, key := s.Data[tlsCrt], s.Data[tlsKey]
		if len(crt) == 0 || len(key) == 0 {
			return nil, fmt.Errorf("Secret %s lacks %s or %s", s.Name, tlsCrt, tlsKey)
		}
		if p := CheckCAMaterial(crt, key, ca.keyPair); p != "" {
			return nil, &InvalidCAError{Name: s.Name, Problem: p}
		}
		out = append(out,
			SecretFile{Path: path.Join(pkiDir, ca.crt), Data: crt},
			SecretFile{Path: path.Join(pkiDir, ca.key), Data: key})
	}
	return out, nil
}

func getOrCreateCA(ctx context.Context, c client.Client, cl *clusterv1.Cluster, ca caSpec, alg string, create bool) (*corev1.Secret, error) {
	name := secretName(cl.Name, ca.suffix)
	s := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, s)
	if err == nil {
		return s, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if !create {
		return nil, &MissingCAError{Name: name}
	}
	crt, key, err := newCA(ca, alg)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	s = clusterSecret(cl, name, map[string][]byte{tlsCrt: crt, tlsKey: key})
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another reconcile won the race; use what it made.
			return s, c.Get(ctx, client.ObjectKeyFromObject(s), s)
		}
		return nil, err
	}
	return s, nil
}

// clusterSecret is a Secret owned by the Cluster, labelled with its name.
func clusterSecret(cl *clusterv1.Cluster, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: cl.Namespace,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cl.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(),
				Kind:       "Cluster",
				Name:       cl.Name,
				UID:        cl.UID,
			}},
		},
		Type: ClusterSecretType,
		Data: data,
	}
}

// newCA makes a self-signed CA (or, for the service-account entry, a bare
// key pair) with the configured key type, PEM-encoded (NewCAMaterial).
func newCA(ca caSpec, alg string) (crtPEM, keyPEM []byte, err error) {
	return NewCAMaterial(ca.commonName, ca.keyPair, alg)
}

// NewCAMaterial makes the PEM of a self-signed CA certificate named
// commonName and its private key — or, with keyPair (the service-account
// signing key), a public key instead of a certificate — with a key of alg,
// spec.controlPlane.encryptionAlgorithm ("" or "ECDSA-P256", "ECDSA-P384",
// "RSA-2048", "RSA-3072", "RSA-4096"; another is an error). The
// bootstrap provider and the control-plane provider make the Cluster's
// CAs with it.
func NewCAMaterial(commonName string, keyPair bool, alg string) (crtPEM, keyPEM []byte, err error) {
	key, err := newKey(alg)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, err
	}
	if keyPair {
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), keyPEM, nil
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, nil, err
	}
	crtPEM, err = certutil.EncodeCertificates(cert)
	return crtPEM, keyPEM, err
}

func newKey(alg string) (crypto.Signer, error) {
	switch alg {
	case "", "ECDSA-P256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSA-P384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "RSA-2048":
		return rsa.GenerateKey(rand.Reader, 2048)
	case "RSA-3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA-4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	}
	return nil, fmt.Errorf("unknown encryptionAlgorithm %q", alg)
}

// caCertHashFrom returns kubeadm's discovery pin for the CA Secret s:
// "sha256:" and the hex SHA-256 of the SubjectPublicKeyInfo of the first
// certificate in its tls.crt.
func caCertHashFrom(s *corev1.Secret) (string, error) {
	certs, err := certutil.ParseCertsPEM(s.Data[tlsCrt])
	if err != nil || len(certs) == 0 {
		return "", fmt.Errorf("Secret %s: %s is not a PEM certificate: %v", s.Name, tlsCrt, err)
	}
	return pin(certs[0]), nil
}

func pin(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var errNoKubeconfig = errors.New("no kubeconfig")
