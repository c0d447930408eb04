package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// defaultNodeTokenGroup is the group kubeadm's join RBAC is bound to
// (kubeadm constants.NodeBootstrapTokenAuthGroup).
const defaultNodeTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

// newToken creates a bootstrap token in the workload cluster that expires
// after ttl, and returns it ("id.secret").
func newToken(ctx context.Context, wc corev1client.CoreV1Interface, machine string, ttl time.Duration, now time.Time) (string, error) {
	tok, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", err
	}
	id, secret, _ := strings.Cut(tok, ".")
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      bootstraputil.BootstrapTokenSecretName(id),
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{"bootstrap.machineadm.io/machine": machine},
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               id,
			bootstrapapi.BootstrapTokenSecretKey:           secret,
			bootstrapapi.BootstrapTokenDescriptionKey:      "machineadm-controller: join token of Machine " + machine,
			bootstrapapi.BootstrapTokenExpirationKey:       now.Add(ttl).UTC().Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      defaultNodeTokenGroup,
		},
	}
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	if _, err := wc.Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating bootstrap token in the workload cluster: %w", err)
	}
	return tok, nil
}

// refreshToken moves the token's expiration to now+ttl when less than
// three quarters of ttl is left. It returns false when the token is gone.
func refreshToken(ctx context.Context, wc corev1client.CoreV1Interface, id string, ttl time.Duration, now time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	secrets := wc.Secrets(metav1.NamespaceSystem)
	s, err := secrets.Get(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	exp, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	if err == nil && exp.Sub(now) > ttl*3/4 {
		return true, nil
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(ttl).UTC().Format(time.RFC3339))
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	return true, err
}

// deleteToken deletes the token; a token already gone is no error.
func deleteToken(ctx context.Context, wc corev1client.CoreV1Interface, id string) error {
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	err := wc.Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
