package kubeadm

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	discoverytoken "k8s.io/kubernetes/cmd/kubeadm/app/discovery/token"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// Bounds of the cluster-info wait (WaitClusterInfo).
const (
	// DefaultClusterInfoInterval is the time between two requests for the
	// cluster-info ConfigMap: 200 ms, against kubeadm's 5 s
	// (constants.DiscoveryRetryInterval).
	DefaultClusterInfoInterval = 200 * time.Millisecond
	// DefaultClusterInfoTimeout bounds the whole wait when the caller
	// gives no bound: 60 s (the wait-cluster-info phase gives
	// spec.join.timeout).
	DefaultClusterInfoTimeout = 60 * time.Second
	// DefaultClusterInfoFastFor is how long the wait asks every Interval;
	// after it, it asks every ClusterInfoSlowInterval, so that a long
	// bound (spec.join.timeout defaults to 5 m) never asks more often than
	// every 200 ms for long.
	DefaultClusterInfoFastFor = 60 * time.Second
	// ClusterInfoSlowInterval is the interval after FastFor: kubeadm's
	// own discovery retry interval (constants.DiscoveryRetryInterval, 5 s).
	ClusterInfoSlowInterval = kubeadmconstants.DiscoveryRetryInterval
	// clusterInfoRequestTimeout bounds one request.
	clusterInfoRequestTimeout = 5 * time.Second
)

// ErrClusterInfoPending is wrapped by WaitClusterInfo's error when the
// bound ran out before the cluster-info ConfigMap carried a signature for
// the token, the endpoint having answered at least once. Nothing was refused:
// kubeadm's own discovery may still succeed later.
var ErrClusterInfoPending = errors.New("the cluster-info ConfigMap is not signed for the join token yet")

// ErrEndpointUnreachable is wrapped by WaitClusterInfo's error when the
// bound ran out and no request had an answer from the endpoint: every
// connection was refused, or none was made (no route, no such host, no
// answer in time). The cluster was never asked whether it signed
// cluster-info, so the error does not wrap ErrClusterInfoPending.
var ErrEndpointUnreachable = errors.New("no request reached an API server")

// Hints of WaitClusterInfo's ErrEndpointUnreachable: every connection
// refused (nothing listens at that address and port), or no answer at all.
const (
	HintEndpointRefused     = "Every connection to spec.join.apiServerEndpoint was refused: nothing listens at that address and port. Check the port, that the API server (or the load balancer in front of it) is running there, and that the endpoint names this cluster's control plane."
	HintEndpointUnreachable = "No request to spec.join.apiServerEndpoint was answered: check the host name resolves from this machine, the route and firewall to that address and port, and that the API server (or the load balancer in front of it) is up."
)

// Hints of the refusals of WaitClusterInfo; the same advice as the
// classification rules give for kubeadm's own discovery errors.
const (
	hintCAPin   = "The cluster CA does not match spec.join.caCertHashes: use the sha256 hash of the cluster CA's public key (`machineadm pki init` prints it; `kubeadm token create --print-join-command` shows it)."
	hintToken   = "The bootstrap token does not match the cluster's signature for its ID: check spec.join.token (a token re-created with the same ID and another secret), or create a new one on a control-plane node."
	hintNoToken = "The endpoint answered but is not set up for token discovery (no kubeconfig in the cluster-info ConfigMap in kube-public): check spec.join.apiServerEndpoint points at this cluster's API server."
	hintTLS     = "The API server's serving certificate does not chain to the pinned cluster CA: check spec.join.apiServerEndpoint (a proxy or another cluster answers) and spec.join.caCertHashes."
)

// ClusterInfoWait says what WaitClusterInfo waits for: the cluster-info
// ConfigMap (namespace kube-public) of the API server at Endpoint, signed
// for Token's ID by the controller-manager's bootstrap signer, its
// signature valid for Token, and the CA it names pinned by CACertHashes —
// the checks of kubeadm's token discovery (cmd/kubeadm/app/discovery/token),
// made with kubeadm's and cluster-bootstrap's own functions.
type ClusterInfoWait struct {
	// Endpoint is the API server's "host:port" (spec.join.apiServerEndpoint).
	Endpoint string
	// Token is the bootstrap token "[a-z0-9]{6}.[a-z0-9]{16}". Secret: it
	// is never logged and never part of an error.
	Token string
	// CACertHashes are the "sha256:<hex>" pins of the cluster CA's public
	// key (spec.join.caCertHashes); empty only with
	// UnsafeSkipCAVerification.
	CACertHashes []string
	// UnsafeSkipCAVerification accepts any CA once the signature is valid,
	// as kubeadm does with no pins.
	UnsafeSkipCAVerification bool
	// Interval is the time between requests; 0 means
	// DefaultClusterInfoInterval.
	Interval time.Duration
	// Timeout bounds the wait; 0 means DefaultClusterInfoTimeout. At most
	// FastFor/Interval + (Timeout-FastFor)/ClusterInfoSlowInterval + 1
	// requests are made for the unverified read (Timeout/Interval+1 when
	// Timeout is at most FastFor).
	Timeout time.Duration
	// FastFor is how long the wait asks every Interval before it slows
	// down to ClusterInfoSlowInterval; 0 means DefaultClusterInfoFastFor.
	FastFor time.Duration
}

// interval is the wait's interval after it has waited for waited.
func (w ClusterInfoWait) interval(waited time.Duration) time.Duration {
	if waited < w.FastFor {
		return w.Interval
	}
	return max(w.Interval, ClusterInfoSlowInterval)
}

// maxAttempts bounds the unverified reads (see Timeout).
func (w ClusterInfoWait) maxAttempts() int {
	fast := min(w.Timeout, w.FastFor)
	return int(fast/w.Interval) + int((w.Timeout-fast)/max(w.Interval, ClusterInfoSlowInterval)) + 1
}

// ClusterInfoResult is what a wait did.
type ClusterInfoResult struct {
	// Attempts is how many requests the unverified read made.
	Attempts int
	// Waited is the wait's duration.
	Waited time.Duration
	// Unsigned is the time from the first request to the start of the one
	// that found the signature: the time the cluster still had to sign
	// cluster-info for the token (its controller-manager's bootstrap
	// signer), as this wait saw it, at most one interval late. 0 when the
	// first request found the signature; on an error, the time until the
	// wait gave up.
	Unsigned time.Duration
	// Pinned says whether the CA was checked against the pins and the
	// certificate the server presented verified with it.
	Pinned bool
}

// WaitClusterInfo polls the cluster-info ConfigMap every w.Interval (every
// ClusterInfoSlowInterval after w.FastFor), within w.Timeout, until it
// carries the JWS signature for the token's ID, then verifies it as
// kubeadm's discovery does: the detached signature of its kubeconfig with
// the token (cluster-bootstrap's jws), the CA in that kubeconfig against
// the pins (kubeadm's pubkeypin), then the server's identity with that CA.
// kubeadm proves the last with a second read over TLS verified with the
// CA; this wait verifies, against the CA, the certificate chain each
// server presented on the connection of each answer of the read that found
// the signature — the endpoint's, and any redirect's — each for the host
// it asked (crypto/x509, as crypto/tls verifies: chain, validity, server
// authentication, host; an answer over plain HTTP is refused), which
// proves the same without a second connection.
// Once it returns nil, kubeadm's discovery finds a signed cluster-info on
// its first try instead of retrying every 5 s.
//
// Errors: an errclass.Error of class DiscoveryFailed when cluster-info is
// refused (signature invalid, CA not pinned, a server certificate not from
// that CA or not for the host asked, malformed token or pins); class Timeout
// wrapping ErrClusterInfoPending when the bound ran out first after the
// endpoint answered at least once, or wrapping ErrEndpointUnreachable (hint
// HintEndpointRefused when every connection was refused,
// HintEndpointUnreachable otherwise) when it never answered; ctx's error
// when ctx ends. No error contains the token.
func WaitClusterInfo(ctx context.Context, w ClusterInfoWait) (ClusterInfoResult, error) {
	start := time.Now()
	var res ClusterInfoResult
	if w.Interval <= 0 {
		w.Interval = DefaultClusterInfoInterval
	}
	if w.Timeout <= 0 {
		w.Timeout = DefaultClusterInfoTimeout
	}
	if w.FastFor <= 0 {
		w.FastFor = DefaultClusterInfoFastFor
	}
	token, err := bootstraptokenv1.NewBootstrapTokenString(w.Token)
	if err != nil {
		// kubeadm's error quotes the token: give only the field.
		return res, errclass.Errorf(errclass.DiscoveryFailed, "", "spec.join.token: not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	pins := pubkeypin.NewSet()
	if err := pins.Allow(w.CACertHashes...); err != nil {
		return res, errclass.New(errclass.DiscoveryFailed, hintCAPin, fmt.Errorf("spec.join.caCertHashes: %w", err))
	}
	if pins.Empty() && !w.UnsafeSkipCAVerification {
		return res, errclass.Errorf(errclass.DiscoveryFailed, hintCAPin, "spec.join.caCertHashes: empty without spec.join.unsafeSkipCAVerification")
	}
	deadline := start.Add(w.Timeout)
	maxAttempts := w.maxAttempts()

	// kubeadm's insecure bootstrap kubeconfig, made a client as kubeadm's
	// kubeconfigutil.ToClientSet does (its 10 s timeout), whose transport
	// also records the chain the server presents (peerCapture).
	insecureCfg, err := clientcmd.NewDefaultClientConfig(*discoverytoken.BuildInsecureBootstrapKubeConfig(w.Endpoint), &clientcmd.ConfigOverrides{Timeout: "10s"}).ClientConfig()
	if err != nil {
		return res, errclass.New(errclass.DiscoveryFailed, "", fmt.Errorf("spec.join.apiServerEndpoint: %w", err))
	}
	peers := &peerCapture{}
	insecureCfg.Wrap(peers.wrap)
	insecure, err := clientset.NewForConfig(insecureCfg)
	if err != nil {
		return res, errclass.New(errclass.DiscoveryFailed, "", fmt.Errorf("spec.join.apiServerEndpoint: %w", err))
	}
	sigKey := bootstrapapi.JWSSignatureKeyPrefix + token.ID
	var cm *corev1.ConfigMap
	var last error
	// answered: some request had an HTTP answer (the ConfigMap, or an API
	// error); refused: every request so far was refused.
	answered, refused := false, true
	firstAsked := time.Now()
	for {
		res.Attempts++
		var asked time.Duration
		if res.Attempts > 1 {
			asked = time.Since(firstAsked)
		}
		peers.reset()
		cm, last = getClusterInfo(ctx, insecure, deadline)
		if last == nil || isAnswer(last) {
			answered = true
		}
		refused = refused && last != nil && utilnet.IsConnectionRefused(last)
		if last == nil {
			if _, ok := cm.Data[sigKey]; ok {
				res.Unsigned = asked
				break
			}
			last = errors.New("no signature for the token's ID yet")
		}
		if ctx.Err() != nil {
			res.Waited = time.Since(start)
			res.Unsigned = res.Waited
			return res, ctx.Err()
		}
		iv := w.interval(time.Since(start))
		if res.Attempts >= maxAttempts || time.Now().Add(iv).After(deadline) {
			res.Waited = time.Since(start)
			res.Unsigned = res.Waited
			if !answered {
				hint, what := HintEndpointUnreachable, "no answer"
				if refused {
					hint, what = HintEndpointRefused, "every connection refused"
				}
				return res, errclass.New(errclass.Timeout, hint,
					fmt.Errorf("%w at %s: %s, %d requests in %s (last: %v)", ErrEndpointUnreachable, w.Endpoint, what, res.Attempts, res.Waited.Round(time.Millisecond), last))
			}
			return res, errclass.New(errclass.Timeout, "",
				fmt.Errorf("%w after %d requests in %s (last: %v)", ErrClusterInfoPending, res.Attempts, res.Waited.Round(time.Millisecond), last))
		}
		if err := sleep(ctx, iv); err != nil {
			res.Waited = time.Since(start)
			res.Unsigned = res.Waited
			return res, err
		}
	}

	kubeconfig, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok || kubeconfig == "" {
		res.Waited = time.Since(start)
		return res, errclass.Errorf(errclass.DiscoveryFailed, hintNoToken, "the cluster-info ConfigMap at %s has no %q key", w.Endpoint, bootstrapapi.KubeConfigKey)
	}
	if !tokenjws.DetachedTokenIsValid(cm.Data[sigKey], kubeconfig, token.ID, token.Secret) {
		res.Waited = time.Since(start)
		return res, errclass.Errorf(errclass.DiscoveryFailed, hintToken, "the JWS signature of the cluster-info ConfigMap at %s does not verify with spec.join.token: this API server cannot be trusted", w.Endpoint)
	}
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		res.Waited = time.Since(start)
		return res, errclass.New(errclass.DiscoveryFailed, hintNoToken, fmt.Errorf("the kubeconfig in the cluster-info ConfigMap at %s: %w", w.Endpoint, err))
	}
	_, cluster, err := kubeconfigutil.GetClusterFromKubeConfig(cfg)
	if err != nil {
		res.Waited = time.Since(start)
		return res, errclass.New(errclass.DiscoveryFailed, hintNoToken, fmt.Errorf("the kubeconfig in the cluster-info ConfigMap at %s: %w", w.Endpoint, err))
	}
	if pins.Empty() {
		res.Waited = time.Since(start)
		return res, nil
	}
	cas, err := certutil.ParseCertsPEM(cluster.CertificateAuthorityData)
	if err != nil {
		res.Waited = time.Since(start)
		return res, errclass.New(errclass.DiscoveryFailed, hintCAPin, fmt.Errorf("the cluster CA in the cluster-info ConfigMap at %s: %w", w.Endpoint, err))
	}
	if err := pins.CheckAny(cas); err != nil {
		res.Waited = time.Since(start)
		return res, errclass.New(errclass.DiscoveryFailed, hintCAPin, fmt.Errorf("the cluster CA in the cluster-info ConfigMap at %s is not pinned by spec.join.caCertHashes: %w", w.Endpoint, err))
	}

	// The CA is pinned. kubeadm reads cluster-info a second time over TLS
	// verified with it, so that the server proves it holds a key that CA
	// certified. The answer read above came over TLS connections whose
	// handshakes already proved each server holds the key of the
	// certificate it presented: verifying those certificates against the
	// pinned CA, each for the host asked (the endpoint, and the host of
	// each redirect client-go followed, as the second read's verifying
	// client would), proves the same without a second connection.
	// kubeadm's own discovery, next, still makes both reads.
	res.Waited = time.Since(start)
	if err := verifyAnswers(peers.answer(), w.Endpoint, cas); err != nil {
		return res, errclass.New(errclass.DiscoveryFailed, hintTLS, err)
	}
	res.Pinned = true
	return res, nil
}

// verifyAnswers verifies with verifyServer each answer of the read that
// delivered cluster-info (hops, in order), each for the host it asked;
// none at all is refused as an answer without a certificate.
func verifyAnswers(hops []peerHop, endpoint string, cas []*x509.Certificate) error {
	if len(hops) == 0 {
		hops = []peerHop{{host: endpoint}}
	}
	for _, h := range hops {
		if err := verifyServer(h.chain, h.host, cas); err != nil {
			at := "the API server at " + endpoint
			if h.host != endpoint {
				at = fmt.Sprintf("the server at %s (where the API server at %s redirected)", h.host, endpoint)
			}
			return fmt.Errorf("the certificate of %s, verified with the pinned CA: %w", at, err)
		}
	}
	return nil
}

// peerCapture records, for each answer of one read of the unverified
// reads (reset before each), the host asked and the certificate chain the
// server presented on the connection that answered (nil over plain HTTP):
// the endpoint's answer, then one per redirect or retry client-go
// followed; the last delivered the ConfigMap.
type peerCapture struct {
	mu   sync.Mutex
	hops []peerHop
}

// peerHop is one answer: the host asked ("host[:port]", the request URL's)
// and the server's chain, leaf first.
type peerHop struct {
	host  string
	chain []*x509.Certificate
}

func (p *peerCapture) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp != nil {
			h := peerHop{host: req.URL.Host}
			if resp.TLS != nil {
				h.chain = resp.TLS.PeerCertificates
			}
			p.mu.Lock()
			p.hops = append(p.hops, h)
			p.mu.Unlock()
		}
		return resp, err
	})
}

func (p *peerCapture) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hops = nil
}

// answer is the answers since the last reset, in order.
func (p *peerCapture) answer() []peerHop {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerHop(nil), p.hops...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// verifyServer verifies the serving certificate chain (leaf first) the
// server at endpoint ("host:port", or "host" alone) presented as
// crypto/tls verifies a handshake against the roots cas: chained to one of
// cas, valid now, for server authentication, naming the endpoint's host (a
// DNS name or an IP address).
func verifyServer(chain []*x509.Certificate, endpoint string, cas []*x509.Certificate) error {
	if len(chain) == 0 {
		return errors.New("the server presented no certificate")
	}
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		host = endpoint
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// getClusterInfo reads the cluster-info ConfigMap once, the request
// bounded by clusterInfoRequestTimeout and by deadline.
func getClusterInfo(ctx context.Context, cs clientset.Interface, deadline time.Time) (*corev1.ConfigMap, error) {
	rctx, cancel := context.WithTimeout(ctx, clusterInfoRequestTimeout)
	defer cancel()
	rctx, cancel2 := context.WithDeadline(rctx, deadline)
	defer cancel2()
	return cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(rctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
}

// isAnswer says whether err, of a request for cluster-info, is the API
// server's answer (an API status: not found, forbidden, ...) rather than
// a failure to reach it.
func isAnswer(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
