package controller

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
	"github.com/machineadm/machineadm/pkg/render"
)

// The payload endpoint (R16): user data is small (AWS 16 KB, Azure and
// OpenStack 64 KB), a sealed spec with a CA set and files can be larger.
// A config with spec.userDataLimit whose rendered data is over that limit
// gets, in its data Secret, the stub alone under "value" (render's
// --payload-url mode) and the sealed spec under "payload"; the stub
// fetches it from PayloadURL/payloads/NAMESPACE/NAME/SHA256 and refuses
// it unless its SHA-256 is SHA256. PayloadServer answers that path from
// the data Secret on the report receiver's listener.
//
// The payload is the same sealed file the data would otherwise carry:
// every secret in it is sealed to the config's recipients. The URL holds
// the payload's digest, which nobody can guess without having read the
// user data (the envelope is random), so that, like the report
// capability, only its machine can fetch it.
const (
	// payloadKey is the data Secret key holding the payload.
	payloadKey = "payload"
	// PayloadDigestAnnotation holds, on a data Secret with a payload, its
	// SHA-256: "sha256:" and 64 hex digits.
	PayloadDigestAnnotation = "bootstrap.machineadm.io/payload-digest"
	// previousPayloadKey holds, after the data was written again (a
	// pool's token rotated, a deleted token replaced), the payload the
	// previous data's stub fetches; served until the next rewrite.
	previousPayloadKey = "payload-previous"
	// PreviousPayloadDigestAnnotation holds the SHA-256 of the data
	// Secret's previous payload, in PayloadDigestAnnotation's form.
	PreviousPayloadDigestAnnotation = "bootstrap.machineadm.io/previous-payload-digest"
	// payloadPathPrefix is the payload endpoint's path below PayloadURL.
	payloadPathPrefix = "/payloads/"
)

// rendered is what one render produced: the data Secret's value and,
// over spec.userDataLimit, the payload the value's stub fetches.
type rendered struct {
	data []byte
	// payload is the sealed spec, nil when it travels inside data.
	payload []byte
	// payloadDigest is "sha256:<hex>" of payload.
	payloadDigest string
}

// payloadURL is the URL of one config's payload.
func payloadURL(base, namespace, name, hexDigest string) string {
	return strings.TrimRight(base, "/") + payloadPathPrefix + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/" + hexDigest
}

// withPayload returns rd as it is when the config sets no
// spec.userDataLimit or rd fits it; otherwise the data is re-rendered as
// a stub fetching sealed from the payload endpoint, which must fit the
// limit. Without a payload endpoint (Reconciler.PayloadURL) data over the
// limit is DataTooLarge naming spec.userDataLimit.
func (r *Reconciler) withPayload(cfg *bootstrapv1.MachineadmConfig, rd *rendered, sealed []byte, sealedCfg *machineadm.MachineBootstrapConfig, opts render.Options, known [][]byte) (*rendered, error) {
	if cfg.Spec.UserDataLimit == "" {
		return rd, nil
	}
	limit, err := render.ParseLimit(cfg.Spec.UserDataLimit)
	if err != nil {
		return nil, &condErr{ReasonInvalidConfig, fmt.Errorf("spec.userDataLimit: %w", err)}
	}
	n := limit.Measure(rd.data)
	if n <= limit.Bytes {
		return rd, nil
	}
	if r.PayloadURL == "" {
		return nil, &condErr{ReasonDataTooLarge, fmt.Errorf("spec.userDataLimit: the bootstrap data is %d bytes, over %s, and the controller serves no payloads "+
			"(machineadm-controller --report-url unset): turn the endpoint on, or make spec.host.files and the Secrets they read from smaller", n, limit)}
	}
	sum := sha256.Sum256(sealed)
	digest := hex.EncodeToString(sum[:])
	opts.Payload = &render.PayloadSource{URL: payloadURL(r.PayloadURL, cfg.Namespace, cfg.Name, digest), SHA256: digest}
	opts.MaxSize = limit
	stub, err := render.Render(sealed, sealedCfg, opts)
	if err != nil {
		var se *render.SizeError
		if errors.As(err, &se) {
			return nil, &condErr{ReasonDataTooLarge, fmt.Errorf("spec.userDataLimit: even the stub that fetches the spec is too large: %w", err)}
		}
		return nil, renderErr(err)
	}
	for _, b := range [][]byte{stub, sealed} {
		if f := leakcheck.Check(b, leakcheck.Options{Known: known, KnownOnly: true}); len(f) > 0 {
			return nil, &condErr{ReasonLeakRefused, fmt.Errorf("refusing bootstrap data with a secret in the clear: %v", f)}
		}
	}
	return &rendered{data: stub, payload: sealed, payloadDigest: "sha256:" + digest}, nil
}

// dataSecretPath splits PREFIX/NAMESPACE/NAME/LAST, the path of a data
// Secret's endpoint (payloads, reports), into the Secret's key and LAST;
// ok is false for any other path and for a NAMESPACE or NAME that is no
// such name ("..", "."), which the endpoints answer 404 like any unknown
// Secret rather than as a failed read.
func dataSecretPath(path, prefix string) (key types.NamespacedName, last string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(path, prefix), "/")
	if !strings.HasPrefix(path, prefix) || len(parts) != 3 || parts[2] == "" ||
		len(validation.IsDNS1123Label(parts[0])) > 0 || len(validation.IsDNS1123Subdomain(parts[1])) > 0 {
		return key, "", false
	}
	return types.NamespacedName{Namespace: parts[0], Name: parts[1]}, parts[2], true
}

// PayloadServer is the HTTP handler of the payload endpoint: GET (or
// HEAD) /payloads/NAMESPACE/NAME/SHA256 answers the payload of data
// Secret NAMESPACE/NAME when the Secret is a MachineadmConfig's data
// Secret whose payload has that SHA-256 (64 lower-case hex digits); any
// other path, name or digest is 404, another method 405. Serve it next to
// ReportServer (machineadm-controller serves both on
// --report-bind-address). It never logs the digest.
type PayloadServer struct {
	// Client reads data Secrets. Required.
	Client client.Client
	// Log receives one line per payload served or refused. Default:
	// discard.
	Log logr.Logger
}

// ServeHTTP implements http.Handler.
func (s *PayloadServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET a payload", http.StatusMethodNotAllowed)
		return
	}
	key, last, ok := dataSecretPath(req.URL.Path, payloadPathPrefix)
	if !ok || len(last) != sha256.Size*2 {
		http.NotFound(w, req)
		return
	}
	ds := &corev1.Secret{}
	if err := s.Client.Get(req.Context(), key, ds); err != nil {
		if apierrors.IsNotFound(err) {
			http.NotFound(w, req)
			return
		}
		http.Error(w, "reading the data Secret failed", http.StatusServiceUnavailable)
		return
	}
	cfg := &bootstrapv1.MachineadmConfig{}
	cfg.Name = key.Name
	var payload []byte
	found := false
	// The current payload, or the previous one (the data was written
	// again while a machine booted from the old data).
	for _, k := range [...][2]string{{payloadKey, PayloadDigestAnnotation}, {previousPayloadKey, PreviousPayloadDigestAnnotation}} {
		p, ok := ds.Data[k[0]]
		want := ds.Annotations[k[1]]
		sum := sha256.Sum256(p)
		if ok && want == "sha256:"+hex.EncodeToString(sum[:]) &&
			subtle.ConstantTimeCompare([]byte(want), []byte("sha256:"+last)) == 1 {
			payload, found = p, true
		}
	}
	if !found || !isDataSecretOf(ds, cfg) {
		s.Log.Info("refused a payload request", "config", key)
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	w.Header().Set("Cache-Control", "no-store")
	if req.Method == http.MethodGet {
		_, _ = w.Write(payload)
	}
	s.Log.Info("served a payload", "config", key, "bytes", len(payload))
}
