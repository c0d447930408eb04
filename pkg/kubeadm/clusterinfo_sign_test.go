//go:build !windows

// The real kube-apiserver (internal/testapiserver, envtest) does not build
// for Windows.

package kubeadm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	discoverytoken "k8s.io/kubernetes/cmd/kubeadm/app/discovery/token"
	clusterinfophase "k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/clusterinfo"
	nodebootstraptokenphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/node"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
	bootstrapcontroller "k8s.io/kubernetes/pkg/controller/bootstrap"

	"github.com/machineadm/machineadm/internal/testapiserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testapiserver.Stop()
	os.Exit(code)
}

// Tokens of these tests (IDs distinct from the other tests').
const (
	signTokenA = "sgnaaa.0123456789abcdef"
	signTokenB = "sgnbbb.fedcba9876543210"
	authOnly   = "sgnccc.0123456789aaaaaa"
	expired    = "sgnddd.0123456789bbbbbb"
	deleted    = "sgneee.0123456789cccccc"
)

// kubeadmBootstrapToken is a spec's bootstrap token as kubeadm's init
// configuration holds it.
func kubeadmBootstrapToken(t *testing.T, token string, usages ...string) bootstraptokenv1.BootstrapToken {
	t.Helper()
	ts, err := bootstraptokenv1.NewBootstrapTokenString(token)
	if err != nil {
		t.Fatal(err)
	}
	if len(usages) == 0 {
		usages = []string{"signing", "authentication"}
	}
	return bootstraptokenv1.BootstrapToken{Token: ts, TTL: &metav1.Duration{Duration: time.Hour}, Usages: usages,
		Groups: []string{"system:bootstrappers:kubeadm:default-node-token"}}
}

// bootstrapTokenPhase does what kubeadm init's bootstrap-token phase does
// to the API, with kubeadm's own functions: the tokens' Secrets, the
// cluster-info ConfigMap from the admin kubeconfig (written anew: earlier
// tests' signatures go, as a rerun of kubeadm's phase drops them) and its
// RBAC rules for anonymous discovery. Other tests' token Secrets are
// deleted first.
func bootstrapTokenPhase(t *testing.T, srv *testapiserver.Server, tokens ...bootstraptokenv1.BootstrapToken) {
	t.Helper()
	ctx := context.Background()
	cs := srv.Client
	list, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(bootstrapapi.SecretTypeBootstrapToken)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodebootstraptokenphase.UpdateOrCreateTokens(cs, false, tokens); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := clusterinfophase.CreateBootstrapConfigMapIfNotExists(cs, kc); err != nil {
		t.Fatal(err)
	}
	if err := clusterinfophase.CreateClusterInfoRBACRules(cs); err != nil {
		t.Fatal(err)
	}
}

func clusterInfo(t *testing.T, cs clientset.Interface) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(context.Background(), bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ids(tokens ...string) []string { return TokenIDs(tokens) }

func outcomes(res ClusterInfoSignResult) map[string]TokenSigning {
	m := map[string]TokenSigning{}
	for _, t := range res.Tokens {
		m[t.ID] = t.Outcome
	}
	return m
}

// The signature written verifies with kubeadm's own token discovery
// (discovery/token.RetrieveValidatedConfigInfo: the JWS with the token,
// the CA pinned, the second read over verified TLS) and with
// wait-cluster-info's; with another secret for the same ID kubeadm
// refuses it. Run again, nothing is written.
func TestSignClusterInfoVerifiedByKubeadmDiscovery(t *testing.T) {
	srv := testapiserver.Start(t)
	bootstrapTokenPhase(t, srv, kubeadmBootstrapToken(t, signTokenA))
	if _, ok := clusterInfo(t, srv.Client).Data["jws-kubeconfig-sgnaaa"]; ok {
		t.Fatal("cluster-info signed before the test signed it")
	}

	res, err := SignClusterInfo(context.Background(), srv.Client, ClusterInfoSigning{TokenIDs: ids(signTokenA)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Updated || res.Attempts != 1 || outcomes(res)["sgnaaa"] != TokenSigned {
		t.Fatalf("result %+v", res)
	}

	cas, err := certutil.ParseCertsPEM(srv.Config.CAData)
	if err != nil || len(cas) == 0 {
		t.Fatalf("the test API server's CA: %v", err)
	}
	pin := pubkeypin.Hash(cas[0])
	disc := func(token string) (*kubeadmapi.Discovery, error) {
		d := &kubeadmapi.Discovery{BootstrapToken: &kubeadmapi.BootstrapTokenDiscovery{Token: token, APIServerEndpoint: srv.Endpoint, CACertHashes: []string{pin}}}
		_, err := discoverytoken.RetrieveValidatedConfigInfo(nil, d, 20*time.Second)
		return d, err
	}
	if _, err := disc(signTokenA); err != nil {
		t.Errorf("kubeadm's discovery refused the signed cluster-info: %v", err)
	}
	if _, err := disc("sgnaaa.aaaaaaaaaaaaaaaa"); err == nil {
		t.Error("kubeadm's discovery accepted the signature with another secret")
	}
	w, err := WaitClusterInfo(context.Background(), ClusterInfoWait{Endpoint: srv.Endpoint, Token: signTokenA, CACertHashes: []string{pin}, Timeout: 10 * time.Second})
	if err != nil || !w.Pinned || w.Attempts != 1 {
		t.Errorf("wait-cluster-info: %+v %v", w, err)
	}

	before := clusterInfo(t, srv.Client).ResourceVersion
	res, err = SignClusterInfo(context.Background(), srv.Client, ClusterInfoSigning{TokenIDs: ids(signTokenA)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated || outcomes(res)["sgnaaa"] != TokenAlreadySigned {
		t.Errorf("rerun: %+v", res)
	}
	if after := clusterInfo(t, srv.Client).ResourceVersion; after != before {
		t.Errorf("rerun wrote cluster-info: resourceVersion %s -> %s", before, after)
	}
}

// Tokens the bootstrap signer does not sign for are skipped: usages
// without signing, expired, deleted. With only such tokens nothing is
// written.
func TestSignClusterInfoSkipsTokensTheSignerSkips(t *testing.T) {
	srv := testapiserver.Start(t)
	exp := kubeadmBootstrapToken(t, expired)
	exp.TTL = nil
	exp.Expires = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	bootstrapTokenPhase(t, srv, kubeadmBootstrapToken(t, authOnly, "authentication"), exp, kubeadmBootstrapToken(t, deleted))
	if err := srv.Client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(context.Background(), "bootstrap-token-sgneee", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := clusterInfo(t, srv.Client)
	res, err := SignClusterInfo(context.Background(), srv.Client, ClusterInfoSigning{TokenIDs: ids(authOnly, expired, deleted)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated || len(res.Tokens) != 3 {
		t.Fatalf("result %+v", res)
	}
	want := map[string]string{"sgnccc": "usage-bootstrap-signing", "sgnddd": "expired", "sgneee": "deleted"}
	for _, tok := range res.Tokens {
		if tok.Outcome != TokenNotSigned || !strings.Contains(tok.Reason, want[tok.ID]) {
			t.Errorf("token %s: %s %q, want NotSigned for %q", tok.ID, tok.Outcome, tok.Reason, want[tok.ID])
		}
	}
	after := clusterInfo(t, srv.Client)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("cluster-info written: %v", after.Data)
	}
	// A signable token next to them is signed, alone.
	if err := nodebootstraptokenphase.UpdateOrCreateTokens(srv.Client, false, []bootstraptokenv1.BootstrapToken{kubeadmBootstrapToken(t, signTokenB)}); err != nil {
		t.Fatal(err)
	}
	res, err = SignClusterInfo(context.Background(), srv.Client, ClusterInfoSigning{TokenIDs: ids(authOnly, signTokenB)})
	if err != nil || !res.Updated || outcomes(res)["sgnbbb"] != TokenSigned || outcomes(res)["sgnccc"] != TokenNotSigned {
		t.Fatalf("%+v %v", res, err)
	}
	for k := range clusterInfo(t, srv.Client).Data {
		if strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) && k != "jws-kubeconfig-sgnbbb" {
			t.Errorf("signature %s written for a token the signer skips", k)
		}
	}
}

// interceptor runs before, once per PUT of cluster-info that reaches the
// API server, the first n times: a writer that gets in between the
// signing's read and its update.
type interceptor struct {
	next   http.RoundTripper
	n      int
	before func()
	mu     sync.Mutex
	puts   int
}

func (i *interceptor) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/namespaces/kube-public/configmaps/cluster-info") {
		i.mu.Lock()
		i.puts++
		run := i.puts <= i.n
		i.mu.Unlock()
		if run {
			i.before()
		}
	}
	return i.next.RoundTrip(r)
}

// interceptedClient is srv's client with ic in its transport.
func interceptedClient(t *testing.T, srv *testapiserver.Server, ic *interceptor) clientset.Interface {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { ic.next = rt; return ic }
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A write between the read and the update makes the API server refuse
// the update (409 Conflict, resourceVersion); the signing reads again and
// keeps the other writer's keys. When the other writer is the bootstrap
// signer with the same signature, the second read finds it and nothing
// more is written.
func TestSignClusterInfoConflict(t *testing.T) {
	srv := testapiserver.Start(t)
	bootstrapTokenPhase(t, srv, kubeadmBootstrapToken(t, signTokenA))
	cm := func() *corev1.ConfigMap { return clusterInfo(t, srv.Client) }

	ic := &interceptor{n: 1, before: func() {
		c := cm()
		c.Data["other-writer"] = "1"
		if _, err := srv.Client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}}
	res, err := SignClusterInfo(context.Background(), interceptedClient(t, srv, ic), ClusterInfoSigning{TokenIDs: ids(signTokenA)})
	if err != nil {
		t.Fatal(err)
	}
	got := cm()
	if res.Attempts != 2 || !res.Updated || ic.puts != 2 || got.Data["other-writer"] != "1" || got.Data["jws-kubeconfig-sgnaaa"] == "" {
		t.Errorf("after a conflict: %+v, %d PUTs, data keys %v", res, ic.puts, keys(got.Data))
	}

	// The signer got in first with the same value.
	bootstrapTokenPhase(t, srv, kubeadmBootstrapToken(t, signTokenA))
	ic = &interceptor{n: 1, before: func() {
		c := cm()
		sig, err := tokenjws.ComputeDetachedSignature(c.Data[bootstrapapi.KubeConfigKey], "sgnaaa", "0123456789abcdef")
		if err != nil {
			t.Error(err)
		}
		c.Data["jws-kubeconfig-sgnaaa"] = sig
		if _, err := srv.Client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}}
	res, err = SignClusterInfo(context.Background(), interceptedClient(t, srv, ic), ClusterInfoSigning{TokenIDs: ids(signTokenA)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Updated || ic.puts != 1 || outcomes(res)["sgnaaa"] != TokenAlreadySigned {
		t.Errorf("signer first: %+v, %d PUTs", res, ic.puts)
	}

	// A writer that always gets in between: bounded by Attempts, the
	// conflict in the error.
	bootstrapTokenPhase(t, srv, kubeadmBootstrapToken(t, signTokenA))
	n := 0
	ic = &interceptor{n: 100, before: func() {
		n++
		c := cm()
		c.Data["other-writer"] = strings.Repeat("x", n)
		if _, err := srv.Client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}}
	res, err = SignClusterInfo(context.Background(), interceptedClient(t, srv, ic), ClusterInfoSigning{TokenIDs: ids(signTokenA), Attempts: 3})
	if err == nil || !apierrors.IsConflict(err) || res.Attempts != 3 || ic.puts != 3 {
		t.Errorf("endless conflicts: %+v, %d PUTs, %v", res, ic.puts, err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The controller-manager's own bootstrap signer
// (k8s.io/kubernetes/pkg/controller/bootstrap), run against the same API
// server after SignClusterInfo signed for token A: when a second token B
// makes it write cluster-info, the value it computes for A is the one
// SignClusterInfo wrote, byte for byte; SignClusterInfo then finds both A
// and the signer's B already signed, and writes nothing.
func TestSignClusterInfoAgreesWithTheBootstrapSigner(t *testing.T) {
	srv := testapiserver.Start(t)
	bootstrapTokenPhase(t, srv, kubeadmBootstrapToken(t, signTokenA))
	if _, err := SignClusterInfo(context.Background(), srv.Client, ClusterInfoSigning{TokenIDs: ids(signTokenA)}); err != nil {
		t.Fatal(err)
	}
	ours := clusterInfo(t, srv.Client).Data["jws-kubeconfig-sgnaaa"]

	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(srv.Client, 0)
	signer, err := bootstrapcontroller.NewSigner(srv.Client, factory.Core().V1().Secrets(), factory.Core().V1().ConfigMaps(), bootstrapcontroller.DefaultSignerOptions())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { signer.Run(ctx) })
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); wg.Wait(); factory.Shutdown() })

	if err := nodebootstraptokenphase.UpdateOrCreateTokens(srv.Client, false, []bootstraptokenv1.BootstrapToken{kubeadmBootstrapToken(t, signTokenB)}); err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm = clusterInfo(t, srv.Client)
		return cm.Data["jws-kubeconfig-sgnbbb"] != "", nil
	}); err != nil {
		t.Fatalf("the bootstrap signer did not sign for token B: %v", err)
	}
	if cm.Data["jws-kubeconfig-sgnaaa"] != ours {
		t.Error("the bootstrap signer rewrote token A's signature with another value")
	}
	res, err := SignClusterInfo(context.Background(), srv.Client, ClusterInfoSigning{TokenIDs: ids(signTokenA, signTokenB)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated || outcomes(res)["sgnaaa"] != TokenAlreadySigned || outcomes(res)["sgnbbb"] != TokenAlreadySigned {
		t.Errorf("after the signer: %+v", res)
	}
}

// No API server at the address: each attempt fails at once, the signing
// gives up after the bound, and the error names the ConfigMap or Secret
// it could not read.
func TestSignClusterInfoUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cs, err := clientset.NewForConfig(&rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := SignClusterInfo(context.Background(), cs, ClusterInfoSigning{TokenIDs: ids(signTokenA), Attempts: 3})
	if err == nil || res.Attempts != 3 || !strings.Contains(err.Error(), "bootstrap-token-sgnaaa") || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Errorf("%+v %v", res, err)
	}
	// ctx ended: no further attempts.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = SignClusterInfo(ctx, cs, ClusterInfoSigning{TokenIDs: ids(signTokenA)})
	if !errors.Is(err, context.Canceled) || res.Attempts != 1 {
		t.Errorf("cancelled: %+v %v", res, err)
	}
}

func TestTokenIDs(t *testing.T) {
	got := TokenIDs([]string{signTokenA, "not-a-token", signTokenB, "sgnaaa.ffffffffffffffff"})
	if strings.Join(got, ",") != "sgnaaa,sgnbbb" {
		t.Errorf("TokenIDs = %v", got)
	}
}
