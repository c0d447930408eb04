package kubeadm

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	discoverytoken "k8s.io/kubernetes/cmd/kubeadm/app/discovery/token"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/machineadm/machineadm/pkg/errclass"
)

const (
	testTokenID     = "abcdef"
	testTokenSecret = "0123456789abcdef"
	testToken       = testTokenID + "." + testTokenSecret
)

// testCA is a CA key pair of the test's own making.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newTestCA returns a self-signed CA.
func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	return makeCA(t, name, nil)
}

// makeCA returns a CA certified by parent, or self-signed when parent is
// nil.
func makeCA(t testing.TB, name string, parent *testCA) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	issuer, signer := tmpl, key
	if parent != nil {
		tmpl.SerialNumber = big.NewInt(3)
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serving returns a serving certificate for 127.0.0.1 signed by ca.
func (ca *testCA) serving(t testing.TB) tls.Certificate {
	t.Helper()
	return ca.servingWith(t, nil)
}

// intermediate returns a CA certified by ca.
func (ca *testCA) intermediate(t *testing.T, name string) *testCA {
	t.Helper()
	return makeCA(t, name, ca)
}

// servingWith is serving with the template changed by mod (nil: as is).
func (ca *testCA) servingWith(t testing.TB, mod func(*x509.Certificate)) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	if mod != nil {
		mod(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// clusterInfoServer is an API server's cluster-info endpoint on loopback
// TLS: it answers the ConfigMap unsigned for the first unsignedFor
// requests, then signed with secret (the token's secret unless changed).
type clusterInfoServer struct {
	srv         *httptest.Server
	endpoint    string
	mu          sync.Mutex
	requests    int
	unsignedFor int
	secret      string
	// kubeconfigs, when set, is served in turn (the last one repeated)
	// instead of the one naming caPEM.
	kubeconfigs []string
	caPEM       []byte
	// protos are the requests' HTTP major versions.
	protos []int
}

// newClusterInfoServer serves with a certificate of serving, naming the CA
// caPEM in its cluster-info.
func newClusterInfoServer(t testing.TB, serving *testCA, caPEM []byte, unsignedFor int) *clusterInfoServer {
	t.Helper()
	return newClusterInfoServerProto(t, serving, caPEM, unsignedFor, false)
}

// newClusterInfoServerProto is newClusterInfoServer speaking HTTP/2 (as
// kube-apiserver does) when h2, else HTTP/1.1.
func newClusterInfoServerProto(t testing.TB, serving *testCA, caPEM []byte, unsignedFor int, h2 bool) *clusterInfoServer {
	t.Helper()
	s := &clusterInfoServer{unsignedFor: unsignedFor, secret: testTokenSecret, caPEM: caPEM}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// A refused handshake (the impostor test) is expected, not news.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving.serving(t)}}
	s.srv.EnableHTTP2 = h2
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.endpoint = s.srv.Listener.Addr().String()
	return s
}

func (s *clusterInfoServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/kube-public/configmaps/cluster-info" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	n := s.requests
	s.requests++
	s.protos = append(s.protos, r.ProtoMajor)
	kc := ""
	switch {
	case len(s.kubeconfigs) > 0:
		kc = s.kubeconfigs[min(n, len(s.kubeconfigs)-1)]
	default:
		kc = s.kubeconfigFor(s.caPEM)
	}
	signed := n >= s.unsignedFor
	secret := s.secret
	s.mu.Unlock()
	cm := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: kc},
	}
	if signed {
		sig, err := tokenjws.ComputeDetachedSignature(kc, testTokenID, secret)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cm.Data[bootstrapapi.JWSSignatureKeyPrefix+testTokenID] = sig
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&cm)
}

// kubeconfigFor is cluster-info's kubeconfig as kubeadm's bootstrap-token
// phase writes it: one cluster named "" with the endpoint and the CA caPEM.
func (s *clusterInfoServer) kubeconfigFor(caPEM []byte) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: "https://" + s.endpoint, CertificateAuthorityData: caPEM}
	b, _ := clientcmd.Write(*cfg)
	return string(b)
}

func (s *clusterInfoServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// checkRefused checks that err is a DiscoveryFailed refusal whose message
// contains want and never the token's secret.
func checkRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatal("cluster-info accepted, want a refusal")
	}
	if c, hint := errclass.Of(err); c != errclass.DiscoveryFailed || hint == "" {
		t.Errorf("class %s hint %q, want DiscoveryFailed with a hint; error: %v", c, hint, err)
	}
	if errors.Is(err, ErrClusterInfoPending) {
		t.Errorf("refusal wraps ErrClusterInfoPending: %v", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if strings.Contains(err.Error(), testTokenSecret) {
		t.Errorf("error contains the token's secret: %v", err)
	}
}

// checkRefusedTLS is checkRefused for a server certificate the pinned CA
// does not vouch for: the hint is the TLS one.
func checkRefusedTLS(t *testing.T, err error, want string) {
	t.Helper()
	checkRefused(t, err, want)
	if _, hint := errclass.Of(err); hint != hintTLS {
		t.Errorf("hint %q, want the server certificate's (hintTLS)", hint)
	}
}

// newTLSServer is a loopback TLS server (HTTP/1.1) with cfg answering with h.
func newTLSServer(t *testing.T, cfg *tls.Config, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestWaitClusterInfoUnsignedThenSigned(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 3)
	res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Three unsigned answers, then the signed one, whose server
	// certificate is verified with the pinned CA: no second read.
	if res.Attempts != 4 || !res.Pinned || s.count() != 4 {
		t.Errorf("attempts %d pinned %v requests %d, want 4 true 4", res.Attempts, res.Pinned, s.count())
	}
	// The signed answer came after three unsigned ones and three sleeps
	// of the interval: at least that long unsigned, never more than the
	// whole wait.
	if res.Unsigned < 3*20*time.Millisecond || res.Unsigned > res.Waited {
		t.Errorf("unsigned for %s of %s, want at least 60ms and at most the wait", res.Unsigned, res.Waited)
	}
}

// A cluster-info signed already: the first request finds it, nothing of
// the wait was spent waiting for the signer.
func TestWaitClusterInfoSignedAtOnce(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 0)
	res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 1 || res.Unsigned != 0 || !res.Pinned || s.count() != 1 {
		t.Errorf("attempts %d unsigned %s pinned %v requests %d, want 1 0s true 1", res.Attempts, res.Unsigned, res.Pinned, s.count())
	}
}

func TestWaitClusterInfoWrongCAHash(t *testing.T) {
	ca, other := newTestCA(t, "cluster-ca"), newTestCA(t, "other-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 0)
	res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(other.cert)},
		Interval: 20 * time.Millisecond, Timeout: time.Minute,
	})
	checkRefused(t, err, "not pinned by spec.join.caCertHashes")
	// Refused at once: no retries, and no read trusting the wrong CA.
	if res.Attempts != 1 || res.Pinned || s.count() != 1 {
		t.Errorf("attempts %d pinned %v requests %d, want 1 false 1", res.Attempts, res.Pinned, s.count())
	}
}

func TestWaitClusterInfoBadSignature(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 0)
	s.secret = "ffffffffffffffff" // the same token ID, another secret
	_, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 20 * time.Millisecond, Timeout: time.Minute,
	})
	checkRefused(t, err, "does not verify with spec.join.token")
}

// The pinned CA is in cluster-info, but the server's certificate is from
// another CA (someone replaying a signed cluster-info): the certificate the
// server presented does not verify with the pinned CA, and the wait
// refuses at once instead of retrying.
func TestWaitClusterInfoServerNotFromPinnedCA(t *testing.T) {
	ca, impostor := newTestCA(t, "cluster-ca"), newTestCA(t, "impostor-ca")
	s := newClusterInfoServer(t, impostor, ca.pem, 0)
	res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 20 * time.Millisecond, Timeout: time.Minute,
	})
	checkRefusedTLS(t, err, "verified with the pinned CA: x509: certificate signed by unknown authority")
	if res.Pinned || s.count() != 1 {
		t.Errorf("pinned %v, %d requests reached the server, want false 1", res.Pinned, s.count())
	}
}

// Over HTTP/2, as kube-apiserver answers, the chain of the answer's
// connection is verified too: a pinned server is accepted with one
// request, an impostor refused.
func TestWaitClusterInfoHTTP2(t *testing.T) {
	ca, impostor := newTestCA(t, "cluster-ca"), newTestCA(t, "impostor-ca")
	for _, tc := range []struct {
		name    string
		serving *testCA
	}{{"pinned", ca}, {"impostor", impostor}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newClusterInfoServerProto(t, tc.serving, ca.pem, 1, true)
			res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
				Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
				Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
			})
			if tc.serving == impostor {
				checkRefusedTLS(t, err, "x509: certificate signed by unknown authority")
			} else if err != nil || !res.Pinned || res.Attempts != 2 {
				t.Errorf("attempts %d pinned %v err %v, want 2 true nil", res.Attempts, res.Pinned, err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.protos) != 2 || s.protos[0] != 2 || s.protos[1] != 2 {
				t.Errorf("requests' HTTP versions %v, want [2 2]", s.protos)
			}
		})
	}
}

// The server's certificate is from the pinned CA but names another host
// than the endpoint (it is issued for 127.0.0.1; the wait asks
// localhost): refused, as a TLS client verifying with that CA would.
func TestWaitClusterInfoServerCertificateForAnotherHost(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 0)
	_, port, err := net.SplitHostPort(s.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	_, err = WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: net.JoinHostPort("localhost", port), Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 20 * time.Millisecond, Timeout: time.Minute,
	})
	checkRefusedTLS(t, err, "certificate is not valid for any names, but wanted to match localhost")
}

// verifyServer accepts a chain through an intermediate CA that the server
// presents (the pinned CA is the root), and refuses a chain that is
// expired or not for server authentication, or none at all.
func TestVerifyServer(t *testing.T) {
	root := newTestCA(t, "root-ca")
	inter := root.intermediate(t, "intermediate-ca")
	leaf := func(issuer *testCA, mod func(*x509.Certificate)) *x509.Certificate {
		c, err := x509.ParseCertificate(issuer.servingWith(t, mod).Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := verifyServer([]*x509.Certificate{leaf(inter, nil), inter.cert}, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err != nil {
		t.Errorf("chain through an intermediate: %v", err)
	}
	if err := verifyServer([]*x509.Certificate{leaf(inter, nil)}, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err == nil {
		t.Error("a leaf without its intermediate verified")
	}
	expired := leaf(root, func(c *x509.Certificate) { c.NotAfter = time.Now().Add(-time.Minute) })
	if err := verifyServer([]*x509.Certificate{expired}, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired serving certificate: %v", err)
	}
	client := leaf(root, func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} })
	if err := verifyServer([]*x509.Certificate{client}, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err == nil {
		t.Error("a client certificate verified as the server's")
	}
	if err := verifyServer(nil, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err == nil {
		t.Error("no chain verified")
	}
	// What the server presents is never trusted as a root: an impostor
	// sending its own CA, and the pinned one, after its leaf is refused.
	impostor := newTestCA(t, "impostor-ca")
	if err := verifyServer([]*x509.Certificate{leaf(impostor, nil), impostor.cert, root.cert}, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err == nil {
		t.Error("a chain to the CA the server sent verified")
	}
	// The answers of one read: all verified; none at all is refused.
	good := peerHop{host: "127.0.0.1:6443", chain: []*x509.Certificate{leaf(root, nil)}}
	if err := verifyAnswers([]peerHop{good, good}, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err != nil {
		t.Errorf("two verified answers: %v", err)
	}
	if err := verifyAnswers(nil, "127.0.0.1:6443", []*x509.Certificate{root.cert}); err == nil || !strings.Contains(err.Error(), "no certificate") {
		t.Errorf("no answer: %v", err)
	}
}

func TestWaitClusterInfoUnsafeSkipCAVerification(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 1)
	res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, UnsafeSkipCAVerification: true,
		Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Pinned {
		t.Errorf("attempts %d pinned %v, want 2 false", res.Attempts, res.Pinned)
	}
	// Without pins and without the unsafe flag nothing is fetched.
	_, err = WaitClusterInfo(context.Background(), ClusterInfoWait{Endpoint: s.endpoint, Token: testToken})
	checkRefused(t, err, "spec.join.caCertHashes")
}

// A cluster-info that is never signed: the wait ends within its bound, in
// time and in requests, with ErrClusterInfoPending (class Timeout).
func TestWaitClusterInfoTimeoutBounded(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 1<<30)
	start := time.Now()
	res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 100 * time.Millisecond, Timeout: time.Second,
	})
	elapsed := time.Since(start)
	if !errors.Is(err, ErrClusterInfoPending) {
		t.Fatalf("err %v, want ErrClusterInfoPending", err)
	}
	if c, _ := errclass.Of(err); c != errclass.Timeout {
		t.Errorf("class %s, want Timeout", c)
	}
	if res.Attempts < 2 || res.Attempts > 11 || s.count() != res.Attempts {
		t.Errorf("attempts %d (server saw %d), want 2..11", res.Attempts, s.count())
	}
	if elapsed > 10*time.Second {
		t.Errorf("wait bounded by 1s took %s", elapsed)
	}
	if res.Unsigned != res.Waited {
		t.Errorf("unsigned %s of a wait of %s that never saw a signature", res.Unsigned, res.Waited)
	}
	if strings.Contains(err.Error(), testTokenSecret) {
		t.Errorf("error contains the token's secret: %v", err)
	}
}

// An endpoint where nothing listens is retried within the bound too.
func TestWaitClusterInfoUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := l.Addr().String()
	l.Close()
	ca := newTestCA(t, "cluster-ca")
	_, err = WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 100 * time.Millisecond, Timeout: 500 * time.Millisecond,
	})
	if !errors.Is(err, ErrEndpointUnreachable) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "every connection refused") {
		t.Errorf("err %v, want ErrEndpointUnreachable naming the refused connections", err)
	}
	// Refused every time is not "not signed yet": nothing was asked.
	if errors.Is(err, ErrClusterInfoPending) {
		t.Errorf("err %v: a refused endpoint reported as an unsigned cluster-info", err)
	}
	if c, hint := errclass.Of(err); c != errclass.Timeout || hint != HintEndpointRefused {
		t.Errorf("class %s hint %q, want Timeout with HintEndpointRefused", c, hint)
	}
}

// An endpoint that never answers in time (a listener that accepts and
// says nothing) is unreachable, not refused and not "not signed yet".
func TestWaitClusterInfoNoAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ca := newTestCA(t, "cluster-ca")
	_, err = WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: l.Addr().String(), Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 100 * time.Millisecond, Timeout: 500 * time.Millisecond,
	})
	if !errors.Is(err, ErrEndpointUnreachable) || errors.Is(err, ErrClusterInfoPending) || strings.Contains(err.Error(), "every connection refused") {
		t.Errorf("err %v, want ErrEndpointUnreachable without refusals", err)
	}
	if c, hint := errclass.Of(err); c != errclass.Timeout || hint != HintEndpointUnreachable {
		t.Errorf("class %s hint %q, want Timeout with HintEndpointUnreachable", c, hint)
	}
}

func TestWaitClusterInfoCanceled(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 1<<30)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := WaitClusterInfo(ctx, ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
		Interval: 50 * time.Millisecond, Timeout: time.Minute,
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's error", err)
	}
}

func TestWaitClusterInfoMalformedToken(t *testing.T) {
	_, err := WaitClusterInfo(context.Background(), ClusterInfoWait{Endpoint: "127.0.0.1:1", Token: "NOT-A-TOKEN-secretpart", UnsafeSkipCAVerification: true})
	if c, _ := errclass.Of(err); c != errclass.DiscoveryFailed || strings.Contains(err.Error(), "secretpart") {
		t.Errorf("err %v (class %s), want DiscoveryFailed without the token", err, c)
	}
}

// After the wait, kubeadm's own discovery (the function `kubeadm join`'s
// preflight calls) accepts the same cluster-info on its first request,
// without its 5 s retry: its own two requests, the unverified and the
// verified read.
func TestWaitClusterInfoThenKubeadmDiscoveryAtOnce(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s := newClusterInfoServer(t, ca, ca.pem, 2)
	pin := pubkeypin.Hash(ca.cert)
	if _, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
		Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pin}, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
	}); err != nil {
		t.Fatal(err)
	}
	before := s.count()
	cfg, err := discoverytoken.RetrieveValidatedConfigInfo(nil, &kubeadmapi.Discovery{BootstrapToken: &kubeadmapi.BootstrapTokenDiscovery{
		Token: testToken, APIServerEndpoint: s.endpoint, CACertHashes: []string{pin},
	}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.count() - before; n != 2 {
		t.Errorf("kubeadm's discovery made %d requests, want 2 (signed at its first)", n)
	}
	if _, c, err := kubeconfigutil.GetClusterFromKubeConfig(cfg); err != nil || c.Server != "https://"+s.endpoint {
		t.Errorf("kubeadm's discovery returned %+v %v", c, err)
	}
}

// The wait asks every Interval for FastFor, then at kubeadm's own 5 s,
// and its request count bound follows that schedule.
func TestClusterInfoWaitSchedule(t *testing.T) {
	w := ClusterInfoWait{Interval: 100 * time.Millisecond, FastFor: time.Second, Timeout: 11 * time.Second}
	if got := w.interval(500 * time.Millisecond); got != w.Interval {
		t.Errorf("interval within FastFor: %s", got)
	}
	if got := w.interval(1500 * time.Millisecond); got != ClusterInfoSlowInterval || ClusterInfoSlowInterval != 5*time.Second {
		t.Errorf("interval after FastFor: %s (slow interval %s, want kubeadm's 5s)", got, ClusterInfoSlowInterval)
	}
	if got := w.maxAttempts(); got != 10+2+1 {
		t.Errorf("max attempts %d, want 13 (10 fast, 2 slow, 1)", got)
	}
	w.Timeout = 500 * time.Millisecond
	if got := w.maxAttempts(); got != 6 {
		t.Errorf("max attempts within FastFor %d, want 6", got)
	}
}

// BenchmarkWaitClusterInfoSigned is a join's wait when cluster-info is
// signed already (every join but one right after init): one request, the
// signature and pin checks, the server's certificate verified.
func BenchmarkWaitClusterInfoSigned(b *testing.B) {
	ca := newTestCA(b, "cluster-ca")
	s := newClusterInfoServer(b, ca, ca.pem, 0)
	w := ClusterInfoWait{Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)}, Timeout: 30 * time.Second}
	for b.Loop() {
		if _, err := WaitClusterInfo(context.Background(), w); err != nil {
			b.Fatal(err)
		}
	}
}

// Every answer of the read that found the signature is verified, each for
// the host asked: a redirect client-go follows (as kubeadm's reads do)
// neither hides an impostor at the endpoint behind the real API server nor
// lets another server, or plain HTTP, answer for it. A redirect between
// servers the pinned CA certified, each for its own name, is accepted, as
// kubeadm accepts it.
func TestWaitClusterInfoRedirect(t *testing.T) {
	ca, impostor := newTestCA(t, "cluster-ca"), newTestCA(t, "impostor-ca")
	pin := pubkeypin.Hash(ca.cert)
	// The real API server, certified for "localhost" only.
	real := newClusterInfoServer(t, ca, ca.pem, 0)
	localhost := newTLSServer(t, &tls.Config{Certificates: []tls.Certificate{ca.servingWith(t, func(c *x509.Certificate) {
		c.IPAddresses, c.DNSNames = nil, []string{"localhost"}
	})}}, real.serve)
	_, localPort, err := net.SplitHostPort(localhost.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewServer(http.HandlerFunc(real.serve))
	t.Cleanup(plain.Close)
	redirector := func(serving *testCA, to string) string {
		srv := newTLSServer(t, &tls.Config{Certificates: []tls.Certificate{serving.serving(t)}}, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		})
		return srv.Listener.Addr().String()
	}
	wait := func(endpoint string) (ClusterInfoResult, error) {
		return WaitClusterInfo(context.Background(), ClusterInfoWait{
			Endpoint: endpoint, Token: testToken, CACertHashes: []string{pin}, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
		})
	}
	kubeadmDiscovery := func(endpoint string) error {
		_, err := discoverytoken.RetrieveValidatedConfigInfo(nil, &kubeadmapi.Discovery{BootstrapToken: &kubeadmapi.BootstrapTokenDiscovery{
			Token: testToken, APIServerEndpoint: endpoint, CACertHashes: []string{pin},
		}}, time.Second)
		return err
	}

	t.Run("impostor endpoint to the real server", func(t *testing.T) {
		ep := redirector(impostor, real.srv.URL)
		res, err := wait(ep)
		checkRefusedTLS(t, err, "the certificate of the API server at "+ep+", verified with the pinned CA: x509: certificate signed by unknown authority")
		if res.Pinned {
			t.Error("pinned")
		}
		if err := kubeadmDiscovery(ep); err == nil {
			t.Error("kubeadm's discovery accepted the impostor endpoint: the wait should not refuse it")
		}
	})
	t.Run("real endpoint to a server of another CA", func(t *testing.T) {
		other := newTLSServer(t, &tls.Config{Certificates: []tls.Certificate{impostor.serving(t)}}, real.serve)
		_, err := wait(redirector(ca, other.URL))
		checkRefusedTLS(t, err, "the certificate of the server at "+other.Listener.Addr().String()+" (where the API server at ")
	})
	t.Run("real endpoint to plain HTTP", func(t *testing.T) {
		_, err := wait(redirector(ca, plain.URL))
		checkRefusedTLS(t, err, "the server presented no certificate")
	})
	t.Run("real endpoint to a real server under another name", func(t *testing.T) {
		ep := redirector(ca, "https://localhost:"+localPort)
		res, err := wait(ep)
		if err != nil || !res.Pinned {
			t.Errorf("pinned %v err %v, want accepted", res.Pinned, err)
		}
		if err := kubeadmDiscovery(ep); err != nil {
			t.Errorf("kubeadm's discovery refused what the wait accepted: %v", err)
		}
	})
}

// The chain verified is the one of the connection that delivered the
// signed answer, not of an earlier one: a server whose certificate changes
// per connection (each answer closes it) is refused when the signed
// answer came from an impostor after pinned unsigned ones, and accepted in
// the reverse order.
func TestWaitClusterInfoCertificatePerConnection(t *testing.T) {
	ca, impostor := newTestCA(t, "cluster-ca"), newTestCA(t, "impostor-ca")
	pinned, other := ca.serving(t), impostor.serving(t)
	for _, tc := range []struct {
		name         string
		first, later tls.Certificate
		ok           bool
	}{{"pinned then impostor", pinned, other, false}, {"impostor then pinned", other, pinned, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &clusterInfoServer{unsignedFor: 2, secret: testTokenSecret, caPEM: ca.pem}
			var mu sync.Mutex
			conns := 0
			srv := newTLSServer(t, &tls.Config{Certificates: []tls.Certificate{tc.first}, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
				mu.Lock()
				defer mu.Unlock()
				conns++
				if conns <= 2 {
					return &tls.Config{Certificates: []tls.Certificate{tc.first}}, nil
				}
				return &tls.Config{Certificates: []tls.Certificate{tc.later}}, nil
			}}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				s.serve(w, r)
			})
			s.endpoint = srv.Listener.Addr().String()
			res, err := WaitClusterInfo(context.Background(), ClusterInfoWait{
				Endpoint: s.endpoint, Token: testToken, CACertHashes: []string{pubkeypin.Hash(ca.cert)},
				Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
			})
			if tc.ok {
				if err != nil || !res.Pinned {
					t.Errorf("pinned %v err %v, want accepted", res.Pinned, err)
				}
			} else {
				checkRefusedTLS(t, err, "x509: certificate signed by unknown authority")
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Attempts != 3 || conns != 3 {
				t.Errorf("%d requests over %d connections, want 3 over 3", res.Attempts, conns)
			}
		})
	}
}
