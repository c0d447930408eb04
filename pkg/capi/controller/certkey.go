package controller

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The certificate key (kubeadm's --certificate-key: 32 random bytes, hex)
// encrypts the shared CA set that control-plane Machines joining later
// download from kube-system/kubeadm-certs. The provider keeps one per
// Cluster in "<cluster>-machineadm-certificate-key" (key "value"), owned by
// the Cluster.

const (
	certKeySuffix     = "machineadm-certificate-key"
	kubeadmCertsName  = "kubeadm-certs" // kubeadm constants.KubeadmCertsSecret
	certKeyValueField = "value"
)

// ensureCertificateKey returns the Cluster's certificate key, creating it
// only when create is true (before the control plane is initialised).
func ensureCertificateKey(ctx context.Context, c client.Client, cl *clusterv1.Cluster, create bool) (string, error) {
	name := secretName(cl.Name, certKeySuffix)
	s := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, s)
	if err == nil {
		k := strings.TrimSpace(string(s.Data[certKeyValueField]))
		if b, err := hex.DecodeString(k); err != nil || len(b) != 32 {
			return "", fmt.Errorf("Secret %s: %s is not 64 hex digits", name, certKeyValueField)
		}
		return k, nil
	}
	if !apierrors.IsNotFound(err) {
		return "", err
	}
	if !create {
		return "", &MissingCAError{Name: name}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s = clusterSecret(cl, name, map[string][]byte{certKeyValueField: []byte(hex.EncodeToString(b))})
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return ensureCertificateKey(ctx, c, cl, false)
		}
		return "", err
	}
	return string(s.Data[certKeyValueField]), nil
}

// uploadKubeadmCerts writes kube-system/kubeadm-certs in the workload
// cluster the way `kubeadm init phase upload-certs` does (each file
// AES-256-GCM encrypted with the certificate key, the nonce prepended;
// "/" in names turned into "-"), owned by the joining Machine's bootstrap
// token so it expires with it. kubeadm's own copy is owned by a 2-hour
// token; re-uploading keeps later control-plane joins working after that.
// The RBAC that lets joining nodes read it is created by kubeadm init.
// extra are further entries by their kubeadm-certs name (an external
// etcd's client certificate, externalEtcdCerts).
func uploadKubeadmCerts(ctx context.Context, wc corev1client.CoreV1Interface, key string, cas []SecretFile, extra map[string][]byte, tokenID string) error {
	k, err := hex.DecodeString(key)
	if err != nil {
		return err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	for _, f := range cas {
		nonce := make([]byte, gcm.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		name := strings.ReplaceAll(strings.TrimPrefix(f.Path, pkiDir+"/"), "/", "-")
		data[name] = gcm.Seal(nonce, nonce, f.Data, nil)
	}
	for name, v := range extra {
		nonce := make([]byte, gcm.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		data[name] = gcm.Seal(nonce, nonce, v, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	secrets := wc.Secrets(metav1.NamespaceSystem)
	tok, err := secrets.Get(ctx, bootstraputil.BootstrapTokenSecretName(tokenID), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the join token: %w", err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: tok.Name, UID: types.UID(tok.UID)}
	s, err := secrets.Get(ctx, kubeadmCertsName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: kubeadmCertsName, Namespace: metav1.NamespaceSystem}}
		s.OwnerReferences = []metav1.OwnerReference{owner}
		s.Data = data
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	s.Data = data
	if !hasOwner(s.OwnerReferences, owner.UID) {
		s.OwnerReferences = append(s.OwnerReferences, owner)
	}
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	return err
}

func hasOwner(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}
