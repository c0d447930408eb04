//go:build !windows

package controller

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// A machine that fails before it has a Node posts its report to the URL in
// its spec; the outcome reaches the config's BootstrapSucceeded, and the
// token goes. Wrong capabilities, other configs and bad reports are
// refused.
func TestReportReceiverFailureBeforeNode(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(&ReportServer{Client: k8s})
	defer srv.Close()
	f.r.ReportURL = srv.URL
	f.initialized()
	f.machine("w1", false)
	f.machine("w2", false)
	f.reconcile("w1")
	f.reconcile("w2")
	ds := f.dataSecret("w1")
	tok, _ := tokenExists(t, ds.Annotations[TokenIDAnnotation])
	f.noLeak(ds, []byte(ds.Annotations[TokenIDAnnotation]+"."+string(tok.Data["token-secret"])))
	digest := ds.Annotations[ReportDigestAnnotation]
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
		t.Fatalf("data Secret has no report digest: %v", ds.Annotations)
	}
	clear, _ := f.opened(ds.Data["value"])
	m := regexp.MustCompile(`url: (` + regexp.QuoteMeta(srv.URL) + `/reports/` + f.ns + `/w1/([A-Za-z0-9_-]+))`).FindStringSubmatch(clear)
	if m == nil {
		t.Fatalf("spec has no report URL for w1:\n%s", clear)
	}
	url, capability := m[1], m[2]
	if strings.Contains(ds.Annotations[ReportDigestAnnotation], capability) {
		t.Fatal("the data Secret keeps the capability itself")
	}
	id := ds.Annotations[TokenIDAnnotation]
	if _, ok := tokenExists(t, id); !ok {
		t.Fatal("no token")
	}
	report := `{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","result":"Failed","failedPhase":"inputs-check","errorClass":"VerificationFailed","hint":"the sealed envelope did not open","startTime":"2026-01-01T00:00:00Z","endTime":"2026-01-01T00:00:02Z","machine":{"action":"Join","machineadmVersion":"v0.1.0"}}`
	post := func(u, body string) int {
		t.Helper()
		resp, err := http.Post(u, "application/json", bytes.NewBufferString(body))
		f.must(err)
		resp.Body.Close()
		return resp.StatusCode
	}
	w2 := srv.URL + "/reports/" + f.ns + "/w2/" + capability
	for _, c := range []struct {
		url, body string
		want      int
	}{
		{srv.URL + "/reports/" + f.ns + "/w1/AAAAAAAAAAAAAAAAAAAAAA", report, http.StatusNotFound}, // wrong capability
		{w2, report, http.StatusNotFound},                                   // w1's capability for w2
		{srv.URL + "/reports/" + f.ns + "/nope/" + capability, report, 404}, // no such config
		{srv.URL + "/reports/" + f.ns + "/../" + capability, report, 404},   // not a name: 404, not 503
		{srv.URL + "/reports/%2e/w1/" + capability, report, 404},
		{url, `{"result":"Maybe"}`, http.StatusBadRequest},
		{url, `not json`, http.StatusBadRequest},
	} {
		if got := post(c.url, c.body); got != c.want {
			t.Errorf("POST %s %q: %d, want %d", strings.Replace(c.url, capability, "CAP", 1), c.body, got, c.want)
		}
	}
	if resp, err := http.Get(url); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", resp, err)
	}
	if c := f.reconcile("w2"); c.Annotations[ReportedOutcomeAnnotation] != "" {
		t.Fatal("w2 got a report meant for nobody")
	}
	if got := post(url, report); got != http.StatusNoContent {
		t.Fatalf("POST the report: %d", got)
	}
	c := f.reconcile("w1")
	cond := wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionFalse, "VerificationFailed")
	if !contains(cond.Message, "phase inputs-check failed", "hint: the sealed envelope did not open") || c.Status.Outcome == nil || c.Status.Outcome.DurationMs != 2000 {
		t.Fatalf("condition %+v outcome %+v", cond, c.Status.Outcome)
	}
	if _, ok := tokenExists(t, id); ok {
		t.Fatal("the failed machine's token still exists")
	}
	if a := f.dataSecret("w1").Annotations[TokenIDAnnotation]; a != "" {
		t.Fatalf("token annotation %q left", a)
	}
}

func TestOutcomeFromReport(t *testing.T) {
	v, err := outcomeFromReport([]byte(`{"result":"Succeeded","machine":{"machineadmVersion":"v1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseOutcome(v)
	if err != nil || o.Result != "Succeeded" || o.MachineadmVersion != "v1" {
		t.Fatalf("%+v %v", o, err)
	}
	cfg := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ReportedOutcomeAnnotation: v}}}
	if got := reportedOutcome(cfg); got == nil || got.Result != "Succeeded" {
		t.Fatalf("reported outcome %+v, want the success", got)
	}
}

// The capability travels in the user data in the clear, so whoever can
// read that (a pod asking the cloud's metadata service, say) can post a
// report. A hostile one, with an error class that is no condition reason
// and a hint longer than a condition message may be, must not wedge the
// config: every later status update would fail and the reconcile retry
// without end.
func TestHostileReportDoesNotWedgeTheConfig(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(&ReportServer{Client: k8s})
	defer srv.Close()
	f.r.ReportURL = srv.URL
	f.initialized()
	f.machine("w1", false)
	f.reconcile("w1")
	clear, _ := f.opened(f.dataSecret("w1").Data["value"])
	m := regexp.MustCompile(`url: (` + regexp.QuoteMeta(srv.URL) + `/reports/\S+)`).FindStringSubmatch(clear)
	if m == nil {
		t.Fatalf("no report URL:\n%s", clear)
	}
	hint := strings.Repeat("h", 300<<10) // more than an object's annotations may hold
	body := `{"result":"Failed","failedPhase":"` + strings.Repeat("p", 300) + `","errorClass":"Not a reason; see <script>\u001b]0;owned\u0007","hint":"\u001b[2J\r` + hint + `","machine":{"action":"Join","machineadmVersion":"` + strings.Repeat("v", 300) + `"}}`
	resp, err := http.Post(m[1], "application/json", strings.NewReader(body))
	f.must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	c := f.reconcile("w1") // fails the test when the status patch is refused
	if resp.StatusCode == http.StatusBadRequest {
		return
	}
	if n := len(c.Annotations[ReportedOutcomeAnnotation]); n > 4096 {
		t.Fatalf("the recorded outcome annotation is %d bytes", n)
	}
	got := wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionFalse, "")
	if got.Reason != "Failed" || len(got.Message) > 4096 || !strings.Contains(got.Message, "Not a reason") {
		t.Fatalf("condition reason %q, message of %d bytes", got.Reason, len(got.Message))
	}
	if o := c.Status.Outcome; o == nil || len(o.Hint) > 4096 || len(o.ErrorClass) > 256 {
		t.Fatalf("status.outcome not bounded: %+v", o)
	}
	// Escaped: no terminal escape sequence reaches kubectl describe raw.
	if o := c.Status.Outcome; strings.ContainsAny(got.Message+o.ErrorClass+o.Hint, "\x1b\x07\r") || !strings.Contains(o.ErrorClass, `\x1b]0;owned\x07`) {
		t.Fatalf("control characters reached the status raw: message %q, outcome %q / %q", got.Message[:80], o.ErrorClass, o.Hint[:40])
	}
}

// A report with a compliance section carries its counts into the
// outcome, and the success condition's message shows them.
func TestOutcomeCarriesComplianceCounts(t *testing.T) {
	v, err := outcomeFromReport([]byte(`{"result":"Succeeded","machine":{"machineadmVersion":"v1"},
		"compliance":{"profile":"cis-1.12","benchmark":"CIS Kubernetes Benchmark v1.12.0","counts":{"pass":58,"fail":1,"warn":6,"notApplicable":3,"waived":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseOutcome(v)
	const want = "cis-1.12: 58 pass, 1 fail, 6 warn, 3 not applicable, 1 waived"
	if err != nil || o.Compliance != want {
		t.Fatalf("outcome %+v %v, want compliance %q", o, err, want)
	}
	cfg := &bootstrapv1.MachineadmConfig{}
	applyOutcome(cfg, o)
	if len(cfg.Status.Conditions) == 0 || !strings.Contains(cfg.Status.Conditions[0].Message, want) {
		t.Fatalf("conditions %+v", cfg.Status.Conditions)
	}
}
