package controller

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
)

// The report receiver: the path by which a machine's outcome reaches the
// management cluster when the machine has no Node — it failed before it
// registered (for example VerificationFailed: its identity does not open
// the sealed spec). With Reconciler.ReportURL set, every data Secret's
// spec carries spec.report.url =
// ReportURL/reports/NAMESPACE/NAME/CAPABILITY, machineadm POSTs its JSON
// report there (pkg/report HTTPWriter, bounded retries), and ReportServer
// records the outcome on the MachineadmConfig in the
// ReportedOutcomeAnnotation, which the reconciler mirrors into
// BootstrapSucceeded while the Machine has no Node (the Node's own
// annotation wins once it exists).
//
// CAPABILITY is 16 random bytes (base64url) made for each data Secret; only
// its SHA-256 is kept, in the data Secret's ReportDigestAnnotation. It
// lets its holder set the outcome of that one config and nothing else; it
// travels in the user data in the clear, like the rest of the spec that is
// not sealed.
const (
	// ReportedOutcomeAnnotation holds, on a MachineadmConfig, the outcome
	// its machine posted to the report receiver, as the JSON of the
	// machineadm.io/bootstrap-report Node annotation.
	ReportedOutcomeAnnotation = "bootstrap.machineadm.io/reported-outcome"
	// ReportDigestAnnotation holds, on a data Secret, the SHA-256 of the
	// capability in its report URL, "sha256:" and 64 hex digits.
	ReportDigestAnnotation = "bootstrap.machineadm.io/report-digest"
	// reportPathPrefix is the receiver's path below ReportURL.
	reportPathPrefix = "/reports/"
	// maxReportBytes bounds a posted report (1 MiB; machineadm's reports
	// are a few KB).
	maxReportBytes = 1 << 20
)

// newReportCapability returns a fresh capability and its digest.
func newReportCapability() (capability, digest string, err error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	capability = base64.RawURLEncoding.EncodeToString(b)
	return capability, capabilityDigest(capability), nil
}

func capabilityDigest(c string) string {
	sum := sha256.Sum256([]byte(c))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// reportURL is the report URL of one config.
func reportURL(base, namespace, name, capability string) string {
	return strings.TrimRight(base, "/") + reportPathPrefix + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/" + capability
}

// ReportServer is the HTTP handler of the report receiver: POST
// /reports/NAMESPACE/NAME/CAPABILITY with a machineadm BootstrapReport
// (JSON, at most 1 MiB) answers 204 and records the outcome on
// MachineadmConfig NAMESPACE/NAME; a wrong or unknown capability is 404, a
// report that does not parse 400, another method 405. Serve it with
// net/http (machineadm-controller --report-bind-address); it never logs
// the capability.
type ReportServer struct {
	// Client reads data Secrets and patches MachineadmConfigs. Required.
	Client client.Client
	// Log receives one line per report. Default: discard.
	Log logr.Logger
}

// postedReport is what the receiver reads of a machineadm BootstrapReport
// (pkg/report.BootstrapReport).
type postedReport struct {
	Result      string    `json:"result"`
	StartTime   time.Time `json:"startTime"`
	EndTime     time.Time `json:"endTime"`
	FailedPhase string    `json:"failedPhase"`
	ErrorClass  string    `json:"errorClass"`
	Hint        string    `json:"hint"`
	Machine     struct {
		Action     string `json:"action"`
		Machineadm string `json:"machineadmVersion"`
	} `json:"machine"`
	Compliance *report.Compliance `json:"compliance"`
}

// ServeHTTP implements http.Handler.
func (s *ReportServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a machineadm report", http.StatusMethodNotAllowed)
		return
	}
	key, capability, ok := dataSecretPath(req.URL.Path, reportPathPrefix)
	if !ok {
		http.NotFound(w, req)
		return
	}
	ctx := req.Context()
	ds := &corev1.Secret{}
	if err := s.Client.Get(ctx, key, ds); err != nil {
		if apierrors.IsNotFound(err) {
			http.NotFound(w, req)
			return
		}
		http.Error(w, "reading the data Secret failed", http.StatusServiceUnavailable)
		return
	}
	want := ds.Annotations[ReportDigestAnnotation]
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(capabilityDigest(capability))) != 1 {
		s.Log.Info("refused a report with a wrong capability", "config", key)
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxReportBytes))
	if err != nil {
		http.Error(w, "report too large or unreadable", http.StatusBadRequest)
		return
	}
	value, err := outcomeFromReport(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cfg := &bootstrapv1.MachineadmConfig{}
	cfg.Namespace, cfg.Name = key.Namespace, key.Name
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ReportedOutcomeAnnotation: value}}})
	if err := s.Client.Patch(ctx, cfg, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			http.NotFound(w, req)
			return
		}
		http.Error(w, "recording the report failed", http.StatusServiceUnavailable)
		return
	}
	s.Log.Info("recorded a machine's report", "config", key, "outcome", value)
	w.WriteHeader(http.StatusNoContent)
}

// outcomeFromReport turns a posted report into the Node annotation's JSON
// (what parseOutcome reads).
func outcomeFromReport(body []byte) (string, error) {
	var r postedReport
	if err := json.Unmarshal(body, &r); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if r.Result != "Succeeded" && r.Result != "Failed" {
		return "", errors.New("report: result must be Succeeded or Failed")
	}
	var ms int64
	if !r.StartTime.IsZero() && r.EndTime.After(r.StartTime) {
		ms = r.EndTime.Sub(r.StartTime).Milliseconds()
	}
	// Bounded and escaped as the status will show it, already here: the
	// value goes into an annotation (256 KiB for all of an object's) and
	// into the log line below, and the poster is anyone who read the
	// user data.
	b, err := json.Marshal(nodeReport{
		Result: r.Result, Action: outcomeField(r.Machine.Action, maxOutcomeField), DurationMs: ms,
		Machineadm:  outcomeField(r.Machine.Machineadm, maxOutcomeField),
		FailedPhase: outcomeField(r.FailedPhase, maxOutcomeField), ErrorClass: outcomeField(r.ErrorClass, maxOutcomeField),
		Hint: outcomeField(r.Hint, maxHintBytes), Compliance: outcomeField(nodeannotation.ComplianceCounts(r.Compliance), maxOutcomeField),
	})
	return string(b), err
}

// reportedOutcome is the outcome a machine posted for cfg, or nil.
func reportedOutcome(cfg *bootstrapv1.MachineadmConfig) *bootstrapv1.BootstrapOutcome {
	v, ok := cfg.Annotations[ReportedOutcomeAnnotation]
	if !ok {
		return nil
	}
	o, err := parseOutcome(v)
	if err != nil {
		return nil
	}
	return o
}
