package manager

import (
	"bytes"
	"strings"
	"testing"
)

// Bad report receiver flags exit 2 with the flag named, before anything
// connects anywhere.
func TestReportFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--report-bind-address=127.0.0.1:9445"}, "set both or neither"},
		{[]string{"--report-url=http://10.0.0.1:9445"}, "set both or neither"},
		{[]string{"--report-bind-address=:9445", "--report-url=ftp://x"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://u:p@x"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x/?token=1"}, "--report-url"},
		// The controller appends /reports/…: after these the machines
		// would post elsewhere, or every machine spec would be invalid.
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:9445/#ingress"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:9445/?"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:99999"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x:0/base"}, "--report-url"},
		// client-go would log the bodies of the Secrets it reads and
		// writes (CA keys, tokens).
		{[]string{"--zap-log-level=8"}, "--zap-log-level: at most 7"},
		{[]string{"--zap-log-level=10"}, "--zap-log-level: at most 7"},
	} {
		var stderr bytes.Buffer
		if code := Main(c.args, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// An explicitly empty --report-url turns the receiver off whatever
// --report-bind-address says (the generated Deployment always passes
// both, the URL from a clusterctl variable that may be empty); an omitted
// one is still a mistake.
func TestReportURLExplicitlyEmptyTurnsReceiverOff(t *testing.T) {
	for _, c := range []struct {
		addr, url string
		given     bool
		want      string
		err       string
	}{
		{addr: ":9445", url: "", given: true, want: ""},
		{addr: "", url: "", given: true, want: ""},
		{addr: ":9445", url: "", given: false, err: "set both or neither"},
		{addr: ":9445", url: "http://machineadm-report.machineadm-system.svc:9445", given: true, want: ":9445"},
		{addr: "", url: "", given: false, want: ""},
	} {
		got, err := reportFlags(c.addr, c.url, c.given)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c, got, err, c.want)
		}
	}
}
