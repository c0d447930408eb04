package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// Bounds of SignClusterInfo.
const (
	// DefaultClusterInfoSignTimeout bounds a whole SignClusterInfo: 15 s.
	DefaultClusterInfoSignTimeout = 15 * time.Second
	// DefaultClusterInfoSignAttempts is how many times SignClusterInfo
	// reads and updates the ConfigMap at most: a conflicting write (the
	// bootstrap signer's, say) or a transient API error costs one.
	DefaultClusterInfoSignAttempts = 5
	// clusterInfoSignRequestTimeout bounds one API request.
	clusterInfoSignRequestTimeout = 5 * time.Second
	// clusterInfoSignBackoff is the pause after a transient API error
	// (none after a conflict: the next read has the newer version).
	clusterInfoSignBackoff = 250 * time.Millisecond
)

// TokenSigning is what SignClusterInfo did for one bootstrap token.
type TokenSigning string

// The outcomes of one token.
const (
	// TokenSigned: SignClusterInfo wrote the token's signature.
	TokenSigned TokenSigning = "Signed"
	// TokenAlreadySigned: cluster-info already carried exactly the
	// signature SignClusterInfo computed (the bootstrap signer's, or an
	// earlier run's).
	TokenAlreadySigned TokenSigning = "AlreadySigned"
	// TokenNotSigned: the token is not one the bootstrap signer signs
	// for (Reason says why); SignClusterInfo left its key alone.
	TokenNotSigned TokenSigning = "NotSigned"
)

// TokenSignResult is the outcome for one token ID.
type TokenSignResult struct {
	// ID is the token's public ID ("abcdef").
	ID string
	// Outcome says what was done.
	Outcome TokenSigning
	// Reason, for TokenNotSigned, says why for a person: "no Secret
	// kube-system/bootstrap-token-abcdef (deleted)", "not usable for
	// signing (usage-bootstrap-signing is not \"true\")", "expired".
	Reason string
}

// ClusterInfoSignResult is what SignClusterInfo did.
type ClusterInfoSignResult struct {
	// Tokens are the outcomes, in the order of the IDs given.
	Tokens []TokenSignResult
	// Attempts is how many times the ConfigMap was read (1 without a
	// conflict or a transient error).
	Attempts int
	// Updated says whether the ConfigMap was written.
	Updated bool
}

// ClusterInfoSigning says what SignClusterInfo signs.
type ClusterInfoSigning struct {
	// TokenIDs are the IDs of the bootstrap tokens to sign cluster-info
	// for (the spec's spec.controlPlane.bootstrapTokens). Each is signed
	// only when its Secret in kube-system is one the bootstrap signer
	// signs for.
	TokenIDs []string
	// Timeout bounds the whole signing; 0 means
	// DefaultClusterInfoSignTimeout.
	Timeout time.Duration
	// Attempts bounds the reads and updates; 0 means
	// DefaultClusterInfoSignAttempts.
	Attempts int
}

// SignClusterInfo adds to the cluster-info ConfigMap (namespace
// kube-public) the detached JWS signature of its kubeconfig for each of
// s.TokenIDs, under the key "jws-kubeconfig-<id>" — exactly what the
// controller-manager's bootstrap signer writes
// (k8s.io/kubernetes/pkg/controller/bootstrap, bootstrapsigner.go): the
// same input (the ConfigMap's "kubeconfig" value), the same function
// (cluster-bootstrap's jws.ComputeDetachedSignature, deterministic
// HS256), and the same choice of tokens (util.go's
// validateSecretForSigning: a Secret of type bootstrap.kubernetes.io/token
// named bootstrap-token-<id> in kube-system, its token-id matching, a
// token-secret, not expired, usage-bootstrap-signing "true"). The signer,
// when it starts or next syncs, computes the same values and leaves the
// ConfigMap as it is; a worker's token discovery finds cluster-info signed
// without waiting for the controller-manager.
//
// The update is optimistic: it carries the resourceVersion read, and a
// conflict (a concurrent writer, such as the signer) reads again. Keys
// other than the tokens' signatures are never touched; a signature that is
// already the computed value is left (TokenAlreadySigned) and when every
// token is so, nothing is written. At most s.Attempts reads, within
// s.Timeout.
//
// Errors (plain, for the calling phase to classify): cluster-info missing
// or without a kubeconfig, the API unreachable or refusing, the attempts
// or the time spent, ctx's end. No error, and no field of the result,
// holds a token secret or a signature.
func SignClusterInfo(ctx context.Context, client clientset.Interface, s ClusterInfoSigning) (ClusterInfoSignResult, error) {
	var res ClusterInfoSignResult
	if s.Timeout <= 0 {
		s.Timeout = DefaultClusterInfoSignTimeout
	}
	if s.Attempts <= 0 {
		s.Attempts = DefaultClusterInfoSignAttempts
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()

	var last error
	for res.Attempts < s.Attempts {
		res.Attempts++
		if res.Attempts > 1 && !apierrors.IsConflict(last) {
			if err := sleep(ctx, clusterInfoSignBackoff); err != nil {
				return res, fmt.Errorf("signing cluster-info: %w (last: %w)", err, last)
			}
		}
		var err error
		res.Tokens, res.Updated, err = signOnce(ctx, client, s.TokenIDs)
		if err == nil {
			return res, nil
		}
		last = err
		if !retryable(err) || ctx.Err() != nil {
			return res, err
		}
	}
	return res, fmt.Errorf("signing cluster-info: gave up after %d attempts: %w", res.Attempts, last)
}

// signOnce reads the tokens' Secrets and cluster-info, and writes the
// missing signatures in one update.
func signOnce(ctx context.Context, client clientset.Interface, ids []string) ([]TokenSignResult, bool, error) {
	tokens := make([]TokenSignResult, 0, len(ids))
	secrets := map[string]string{}
	for _, id := range ids {
		secret, reason, err := signingSecret(ctx, client, id)
		if err != nil {
			return nil, false, err
		}
		if reason != "" {
			tokens = append(tokens, TokenSignResult{ID: id, Outcome: TokenNotSigned, Reason: reason})
			continue
		}
		secrets[id] = secret
		tokens = append(tokens, TokenSignResult{ID: id})
	}
	if len(secrets) == 0 {
		return tokens, false, nil
	}

	rctx, cancel := context.WithTimeout(ctx, clusterInfoSignRequestTimeout)
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(rctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	cancel()
	if err != nil {
		return nil, false, fmt.Errorf("reading ConfigMap %s/%s: %w", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, err)
	}
	content, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok {
		return nil, false, fmt.Errorf("ConfigMap %s/%s has no %q key (kubeadm's bootstrap-token phase writes it)", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, bootstrapapi.KubeConfigKey)
	}
	changed := false
	for i := range tokens {
		if tokens[i].Outcome == TokenNotSigned {
			continue
		}
		id := tokens[i].ID
		sig, err := tokenjws.ComputeDetachedSignature(content, id, secrets[id])
		if err != nil {
			// jws's errors never hold the key; do not add the value.
			return nil, false, fmt.Errorf("computing the signature of cluster-info for token %s: %w", id, err)
		}
		key := bootstrapapi.JWSSignatureKeyPrefix + id
		if cm.Data[key] == sig {
			tokens[i].Outcome = TokenAlreadySigned
			continue
		}
		cm.Data[key] = sig
		tokens[i].Outcome = TokenSigned
		changed = true
	}
	if !changed {
		return tokens, false, nil
	}
	rctx, cancel = context.WithTimeout(ctx, clusterInfoSignRequestTimeout)
	defer cancel()
	// cm carries the resourceVersion it was read with: a write since then
	// is a conflict, and the caller reads again.
	if _, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(rctx, cm, metav1.UpdateOptions{FieldManager: "machineadm"}); err != nil {
		return nil, false, fmt.Errorf("updating ConfigMap %s/%s: %w", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, err)
	}
	return tokens, true, nil
}

// signingSecret returns the token secret of the bootstrap token id when
// the bootstrap signer would sign for it, or the reason it would not (the
// checks of the signer's validateSecretForSigning, with
// cluster-bootstrap's secret helpers).
func signingSecret(ctx context.Context, client clientset.Interface, id string) (string, string, error) {
	name := bootstrapapi.BootstrapTokenSecretPrefix + id
	rctx, cancel := context.WithTimeout(ctx, clusterInfoSignRequestTimeout)
	defer cancel()
	s, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(rctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", "no Secret " + metav1.NamespaceSystem + "/" + name + " (deleted)", nil
	case err != nil:
		return "", "", fmt.Errorf("reading Secret %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return secretForSigning(s, time.Now())
}

// secretForSigning applies the bootstrap signer's checks to s at now.
func secretForSigning(s *corev1.Secret, now time.Time) (string, string, error) {
	if s.Type != bootstrapapi.SecretTypeBootstrapToken {
		return "", fmt.Sprintf("Secret type %q, not %q", s.Type, bootstrapapi.SecretTypeBootstrapToken), nil
	}
	nameID, ok := bootstrapsecretutil.ParseName(s.Name)
	id := bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenIDKey)
	switch {
	case !ok || id == "" || id != nameID:
		return "", "the Secret's " + bootstrapapi.BootstrapTokenIDKey + " does not match its name", nil
	case bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenSecretKey) == "":
		return "", "the Secret has no " + bootstrapapi.BootstrapTokenSecretKey, nil
	case bootstrapsecretutil.HasExpired(s, now):
		return "", "expired", nil
	case bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenUsageSigningKey) != "true":
		return "", "not usable for signing (" + bootstrapapi.BootstrapTokenUsageSigningKey + " is not \"true\")", nil
	}
	return bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenSecretKey), "", nil
}

// retryable says whether another attempt may succeed: a conflicting write,
// or the API server busy, timing out, or not answering (a request past its
// own bound included; the caller stops when the whole bound ran out).
func retryable(err error) bool {
	if apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) {
		return true
	}
	var se apierrors.APIStatus
	// Any other answer of the API server (forbidden, not found, invalid)
	// is final; no answer at all (connection refused, reset) is not.
	return !errors.As(err, &se)
}

// AdminKubeconfigPath is kubeadm's admin.conf on the machine,
// /etc/kubernetes/admin.conf.
func AdminKubeconfigPath() string {
	return filepath.Join(kubeadmconstants.KubernetesDir, kubeadmconstants.AdminKubeConfigFileName)
}

// ClientFromKubeconfig returns a client of the API server the kubeconfig
// file at path names, with its credentials, each request bounded by 10 s.
// Its error names path, never the file's content.
func ClientFromKubeconfig(path string) (clientset.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %s: %w", path, err)
	}
	cfg.Timeout = 10 * time.Second
	return clientset.NewForConfig(cfg)
}

// TokenIDs returns the public IDs of tokens ("abcdef" of
// "abcdef.0123456789abcdef"), in order, each once; values that are not
// bootstrap tokens are left out (the spec's validation refused them
// already).
func TokenIDs(tokens []string) []string {
	var ids []string
	for _, t := range tokens {
		ts, err := bootstraptokenv1.NewBootstrapTokenString(t)
		if err != nil || slices.Contains(ids, ts.ID) {
			continue
		}
		ids = append(ids, ts.ID)
	}
	return ids
}
