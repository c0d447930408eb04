package controller

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapctl "github.com/machineadm/machineadm/pkg/capi/controller"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// ClusterSecretType is the type of Cluster API's cluster Secrets
// (sigs.k8s.io/cluster-api/util/secret).
const ClusterSecretType corev1.SecretType = "cluster.x-k8s.io/secret"

// Keys of the certificate Secrets and the kubeconfig Secret.
const (
	tlsCrt        = "tls.crt"
	tlsKey        = "tls.key"
	kubeconfigKey = "value"
)

// Kubeconfig client certificate lifetime and renewal: a year, renewed
// when less than half is left (as the kubeadm control-plane provider).
const (
	kubeconfigCertLifetime = 365 * 24 * time.Hour
	kubeconfigRenewBefore  = kubeconfigCertLifetime / 2
)

// ca is one of Cluster API's standard CA Secrets, "<cluster>-<suffix>".
type ca struct {
	suffix     string
	commonName string
	keyPair    bool // service-account keys: tls.crt holds the public key
}

var cas = []ca{
	{suffix: "ca", commonName: "kubernetes"},
	{suffix: "etcd", commonName: "etcd-ca"},
	{suffix: "proxy", commonName: "front-proxy-ca"},
	{suffix: "sa", keyPair: true},
}

func secretName(cluster, suffix string) string { return cluster + "-" + suffix }

// controllerRef is the control plane's controller owner reference.
func controllerRef(mcp *cpv1.MachineadmControlPlane) metav1.OwnerReference {
	return *metav1.NewControllerRef(mcp, cpv1.GroupVersion.WithKind("MachineadmControlPlane"))
}

// ensureCertificates makes the Cluster's CA Secrets the control plane
// needs (the etcd CA only with a stacked etcd) and takes ownership of
// existing ones that have no controller, so that they live as long as the
// control plane, as the kubeadm control-plane provider does. Secrets
// another controller owns are used as they are.
func ensureCertificates(ctx context.Context, c client.Client, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster) error {
	alg := ""
	if cp := mcp.Spec.MachineadmConfigSpec.ControlPlane; cp != nil {
		alg = cp.EncryptionAlgorithm
	}
	for _, a := range cas {
		if a.suffix == "etcd" && externalEtcd(mcp) {
			continue
		}
		name := secretName(cl.Name, a.suffix)
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, s)
		if err == nil {
			if metav1.GetControllerOf(s) == nil {
				// ownerReferences is a list a merge patch replaces whole:
				// refused if the Secret changed since it was read.
				patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
				s.OwnerReferences = append(s.OwnerReferences, controllerRef(mcp))
				if err := c.Patch(ctx, s, patch); err != nil {
					return fmt.Errorf("adopting Secret %s: %w", name, err)
				}
			}
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		crt, key, err := newCA(a, alg)
		if err != nil {
			return fmt.Errorf("creating %s: %w", name, err)
		}
		s = clusterSecret(mcp, cl, name, map[string][]byte{tlsCrt: crt, tlsKey: key})
		if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
	}
	return nil
}

func externalEtcd(mcp *cpv1.MachineadmControlPlane) bool {
	cp := mcp.Spec.MachineadmConfigSpec.ControlPlane
	return cp != nil && cp.Etcd != nil && cp.Etcd.External != nil
}

// clusterSecret is a cluster Secret controlled by the control plane.
func clusterSecret(mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cl.Namespace,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: cl.Name},
			OwnerReferences: []metav1.OwnerReference{controllerRef(mcp)},
		},
		Type: ClusterSecretType,
		Data: data,
	}
}

// newCA makes a CA's PEM as the bootstrap provider makes it
// (bootstrapctl.NewCAMaterial).
func newCA(a ca, alg string) (crtPEM, keyPEM []byte, err error) {
	return bootstrapctl.NewCAMaterial(a.commonName, a.keyPair, alg)
}

// readCA reads a CA Secret's certificate and key. A certificate that is
// not a CA, or a key that is not the certificate's, is an error naming the
// Secret: what it signed would not verify against the certificate the
// machines trust.
func readCA(ctx context.Context, c client.Client, namespace, name string) (*x509.Certificate, crypto.Signer, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, nil, fmt.Errorf("Secret %s: %w", name, err)
	}
	certs, err := certutil.ParseCertsPEM(s.Data[tlsCrt])
	if err != nil || len(certs) == 0 {
		return nil, nil, fmt.Errorf("Secret %s: %s is not a PEM certificate", name, tlsCrt)
	}
	k, err := keyutil.ParsePrivateKeyPEM(s.Data[tlsKey])
	if err != nil {
		return nil, nil, fmt.Errorf("Secret %s: %s is not a PEM private key", name, tlsKey)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("Secret %s: %s is not a signing key", name, tlsKey)
	}
	if p := bootstrapctl.CheckCAMaterial(s.Data[tlsCrt], s.Data[tlsKey], false); p != "" {
		return nil, nil, &bootstrapctl.InvalidCAError{Name: name, Problem: p}
	}
	return certs[0], signer, nil
}

// signClientCert makes a client certificate (ECDSA P-256) signed by the
// CA, valid from a minute ago for lifetime.
func signClientCert(caCert *x509.Certificate, caKey crypto.Signer, cn string, orgs []string, now time.Time, lifetime time.Duration) (crtPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// ensureKubeconfig writes "<cluster>-kubeconfig" (key "value"): an admin
// kubeconfig for the Cluster's endpoint with a client certificate
// (CN kubernetes-admin, O system:masters) signed by "<cluster>-ca", valid
// a year. It is renewed when less than half its lifetime is left, if the
// control plane controls the Secret; one that another component made is
// left alone.
func ensureKubeconfig(ctx context.Context, c client.Client, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, now time.Time) error {
	name := secretName(cl.Name, "kubeconfig")
	s := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil
	if exists {
		ctl := metav1.GetControllerOf(s)
		if ctl == nil || ctl.UID != mcp.UID || !needsRenewal(s.Data[kubeconfigKey], now) {
			return nil
		}
	}
	data, err := adminKubeconfig(ctx, c, cl, now)
	if err != nil {
		return err
	}
	if !exists {
		s = clusterSecret(mcp, cl, name, map[string][]byte{kubeconfigKey: data})
		if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
		return nil
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Data = map[string][]byte{kubeconfigKey: data}
	return c.Patch(ctx, s, patch)
}

// needsRenewal reports whether a kubeconfig's client certificate is
// missing, unreadable or past half its life.
func needsRenewal(kubeconfig []byte, now time.Time) bool {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return true
	}
	for _, a := range cfg.AuthInfos {
		certs, err := certutil.ParseCertsPEM(a.ClientCertificateData)
		if err != nil || len(certs) == 0 {
			return true
		}
		return certs[0].NotAfter.Sub(now) < kubeconfigRenewBefore
	}
	return true
}

func adminKubeconfig(ctx context.Context, c client.Client, cl *clusterv1.Cluster, now time.Time) ([]byte, error) {
	caCert, caKey, err := readCA(ctx, c, cl.Namespace, secretName(cl.Name, "ca"))
	if err != nil {
		return nil, err
	}
	crt, key, err := signClientCert(caCert, caKey, "kubernetes-admin", []string{"system:masters"}, now, kubeconfigCertLifetime)
	if err != nil {
		return nil, err
	}
	server := "https://" + net.JoinHostPort(cl.Spec.ControlPlaneEndpoint.Host, strconv.Itoa(int(cl.Spec.ControlPlaneEndpoint.Port)))
	user := cl.Name + "-admin"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cl.Name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	ctxName := user + "@" + cl.Name
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: cl.Name, AuthInfo: user}
	cfg.CurrentContext = ctxName
	return clientcmd.Write(*cfg)
}
