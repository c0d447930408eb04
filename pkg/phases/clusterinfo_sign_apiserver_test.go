//go:build !windows

// The real kube-apiserver (internal/testapiserver, envtest) does not build
// for Windows.

package phases

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/machineadm/machineadm/internal/testapiserver"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testapiserver.Stop()
	os.Exit(code)
}

// clusterInfoKubeconfig is the kubeconfig kubeadm's bootstrap-token phase
// puts into cluster-info: admin.conf's cluster alone (server and CA).
func clusterInfoKubeconfig(t *testing.T, srv *testapiserver.Server) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: srv.Config.Host, CertificateAuthorityData: srv.Config.CAData}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Against a real API server, as kubeadm's bootstrap-token phase leaves it
// (the token's Secret, cluster-info unsigned, anonymous read of it),
// `bootstrap phase sign-cluster-info` signs cluster-info through
// admin.conf so that wait-cluster-info's verification (kubeadm's token
// discovery checks, CA pinned) passes at its first request; run again it
// is Unchanged. Neither the token secret nor the signature is logged.
func TestSignClusterInfoPhaseRealAPIServer(t *testing.T) {
	srv := testapiserver.Start(t)
	ctx := context.Background()
	cs := srv.Client
	// The token Secret and cluster-info as kubeadm's bootstrap-token phase
	// writes them (pkg/kubeadm's tests use kubeadm's own functions).
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-sgnphs", Namespace: metav1.NamespaceSystem},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": "sgnphs", "token-secret": signTestSecret, "usage-bootstrap-signing": "true",
			"usage-bootstrap-authentication": "true", "expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}
	if _, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: metav1.NamespacePublic},
		Data: map[string]string{"kubeconfig": clusterInfoKubeconfig(t, srv)}}
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := allowAnonymousClusterInfo(ctx, srv); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	d := initData(t, srv.Kubeconfig, &buf)
	obs := &recordObs{}
	if _, err := Bootstrap(d.Config).Run(ctx, d, obs, RunOptions{Only: SignClusterInfoName}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(obs.events, "Succeeded "+SignClusterInfoName) {
		t.Errorf("first run: %v", obs.events)
	}
	got, err := cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sig := got.Data["jws-kubeconfig-sgnphs"]
	if sig == "" {
		t.Fatalf("not signed: keys %v", got.Data)
	}
	pin := caPin(t, srv.Config.CAData)
	w, err := kubeadm.WaitClusterInfo(ctx, kubeadm.ClusterInfoWait{Endpoint: srv.Endpoint, Token: signTestToken, CACertHashes: []string{pin}, Timeout: 10 * time.Second})
	if err != nil || w.Attempts != 1 || !w.Pinned {
		t.Errorf("wait-cluster-info: %+v %v", w, err)
	}

	obs = &recordObs{}
	if _, err := Bootstrap(d.Config).Run(ctx, d, obs, RunOptions{Only: SignClusterInfoName}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(obs.events, "Unchanged "+SignClusterInfoName) {
		t.Errorf("second run: %v", obs.events)
	}
	if log := buf.String(); strings.Contains(log, signTestSecret) || strings.Contains(log, sig) {
		t.Errorf("token secret or signature logged:\n%s", log)
	}
}

// caPin is the "sha256:<hex>" pin of the CA certificate in caPEM: the
// hash of its SubjectPublicKeyInfo, as spec.join.caCertHashes holds it.
func caPin(t *testing.T, caPEM []byte) string {
	t.Helper()
	b, _ := pem.Decode(caPEM)
	if b == nil {
		t.Fatal("no PEM in the test server's CA data")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// allowAnonymousClusterInfo lets unauthenticated clients read cluster-info,
// the rule kubeadm's bootstrap-token phase creates (a Role and RoleBinding
// in kube-public for system:anonymous).
func allowAnonymousClusterInfo(ctx context.Context, srv *testapiserver.Server) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "machineadm-test:cluster-info", Namespace: metav1.NamespacePublic},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cluster-info"}}}}
	if _, err := srv.Client.RbacV1().Roles(metav1.NamespacePublic).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "machineadm-test:cluster-info", Namespace: metav1.NamespacePublic},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "system:anonymous"}}}
	if _, err := srv.Client.RbacV1().RoleBindings(metav1.NamespacePublic).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
