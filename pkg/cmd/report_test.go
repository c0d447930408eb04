package cmd

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/machineadm/machineadm/internal/testfifo"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	kubeadmrun "github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/session"
)

var updateReportGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// failedReport is a failed worker join with a long log tail, written to a
// report file the way the file writer writes it (with a previous report).
func failedReport(t *testing.T) (string, *report.BootstrapReport) {
	t.Helper()
	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	r := &report.BootstrapReport{
		APIVersion: report.APIVersion, Kind: report.Kind, Command: "bootstrap",
		Machine:   report.Machine{Hostname: "worker-7", NodeName: "worker-7", SpecName: "pool-a-worker-7", MachineadmVersion: "v0.1.0", KubernetesVersion: "v1.37.2", Role: "Worker", Action: "Join"},
		StartTime: start, EndTime: start.Add(5*time.Minute + 3*time.Second), Result: report.ResultFailed,
		FailedPhase: "kubelet-start", ErrorClass: errclass.Timeout,
		Error: `couldn't validate the identity of the API Server: failed to request the cluster-info ConfigMap: Get "https://127.0.0.1:6443/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s": dial tcp 127.0.0.1:6443: connect: connection refused`,
	}
	kubeletStart, _ := kubeadmrun.Lookup(machineadm.ActionJoin, r.FailedPhase)
	_, r.Hint = kubeadmrun.Classify(kubeletStart, fmt.Errorf("%s", r.Error), nil)
	names := []string{"host-check", "files", "kernel-modules", "sysctl", "containerd", "kubeadm-config", "preflight", "kubelet-start", "static-pods"}
	at := start
	for i, n := range names {
		p := report.Phase{Name: n, StartTime: at, Status: report.PhaseSucceeded, DurationMs: int64(100 * (i + 1))}
		if n == "kubelet-start" {
			p.Status, p.DurationMs, p.Message = report.PhaseFailed, 300000, r.Error
		} else if n == "static-pods" {
			p.Status, p.DurationMs, p.Message = report.PhaseSkipped, 0, "not reached: an earlier phase failed"
		}
		at = at.Add(time.Duration(p.DurationMs) * time.Millisecond)
		r.Phases = append(r.Phases, p)
	}
	for i := range 50 {
		r.LogTail = append(r.LogTail, fmt.Sprintf("[discovery] Failed to request cluster-info, will try again: dial tcp 127.0.0.1:6443: connect: connection refused (%d)", i))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	w := &report.FileWriter{Path: path}
	ok := *r
	ok.Result, ok.FailedPhase, ok.ErrorClass, ok.Hint, ok.Error, ok.LogTail = report.ResultSucceeded, "", "", "", "", nil
	ok.Phases = nil
	if err := w.Write(t.Context(), &ok); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	return path, r
}

func TestReportCommandOneScreenGolden(t *testing.T) {
	path, _ := failedReport(t)
	code, out, errOut := run(t, "", "report", path)
	if code != session.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The path is a temporary directory: make the golden file stable.
	out = strings.ReplaceAll(out, path, "/var/lib/machineadm/report.json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > report.ScreenHeight {
		t.Errorf("%d lines, more than %d", len(lines), report.ScreenHeight)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > report.ScreenWidth {
			t.Errorf("line %d has %d columns: %q", i+1, n, l)
		}
	}
	for _, want := range []string{"FAILED in phase kubelet-start: Timeout", "kubelet-start", "hint:", "spec.join.apiServerEndpoint", "log tail (last", "(49)", "more: machineadm report --full"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	golden := filepath.Join("testdata", "report-failed.txt")
	if *updateReportGolden {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", golden, out)
	}
}

func TestReportCommandFullJSONPrevious(t *testing.T) {
	path, r := failedReport(t)
	code, out, _ := run(t, "", "report", "--full", path)
	if code != session.ExitOK || !strings.Contains(out, "(0)") || !strings.Contains(out, "not reached: an earlier phase failed") {
		t.Errorf("--full: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "", "report", "-o", "json", path)
	if code != session.ExitOK {
		t.Fatalf("json: exit %d", code)
	}
	got, err := report.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if got.ErrorClass != r.ErrorClass || len(got.LogTail) != 50 || got.Error != r.Error {
		t.Errorf("json output differs from the report")
	}
	code, out, _ = run(t, "", "report", "--previous", path)
	if code != session.ExitOK || !strings.Contains(out, "machineadm bootstrap: Succeeded") {
		t.Errorf("--previous: exit %d\n%s", code, out)
	}
}

func TestReportCommandBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","result":"Perhaps"}`), 0o600)
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("not json"), 0o600)
	path, _ := failedReport(t)
	for _, args := range [][]string{
		{"report", filepath.Join(dir, "missing.json")},
		{"report", bad},
		{"report", garbage},
		{"report", dir},
		{"report", "--output", "yaml", path},
		{"report", path, path},
	} {
		code, _, errOut := run(t, "", args...)
		if code != session.ExitBadInput || !strings.Contains(errOut, "Error:") {
			t.Errorf("%v: exit %d, want 2; stderr %s", args, code, errOut)
		}
	}
}

// hostile is text a terminal would act on: a window-title change (OSC),
// clear-screen (CSI), a carriage return that overwrites the line, an 8-bit
// CSI (U+009B) and a right-to-left override. (A byte that is not UTF-8
// cannot reach a report: JSON encoding replaces it.)
const hostile = "\x1b]0;pwned\x07\x1b[2J\rOK\u009b31m\u202edesrever"

// rawControl reports any byte or rune of s that a terminal would act on,
// or bytes that are not UTF-8.
func rawControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || r == '\u202e' {
			return true
		}
	}
	return false
}

func TestReportCommandEscapesControlCharacters(t *testing.T) {
	path, r := failedReport(t)
	r.Machine.Hostname = "worker" + hostile
	r.Phases[7].Message = "failed" + hostile
	r.Error = "boom" + hostile
	r.Hint = "hint" + hostile
	r.LogTail = append(r.LogTail, "last line"+hostile)
	if err := (&report.FileWriter{Path: path}).Write(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report", path}, {"report", "--full", path}} {
		code, out, errOut := run(t, "", args...)
		if code != session.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if rawControl(out) {
			t.Errorf("%v: output holds raw control characters:\n%q", args, out)
		}
		if !strings.Contains(out, `\x1b]0;pwned\x07\x1b[2J\x0dOK\u009b31m\u202edesrever`) {
			t.Errorf("%v: output does not show the escaped text:\n%s", args, out)
		}
	}
	// --output json is the document, with every control escaped the JSON
	// way: C0 by the encoder, DEL, C1 and bidi controls (which JSON leaves
	// raw) by report.TerminalSafeJSON; it decodes to the same report.
	code, out, errOut := run(t, "", "report", "-o", "json", path)
	if code != session.ExitOK || rawControl(out) {
		t.Errorf("json output: exit %d, raw control characters:\n%q\n%s", code, out, errOut)
	}
	back, err := report.Decode([]byte(out))
	if err != nil || back.Error != r.Error || back.Machine.Hostname != r.Machine.Hostname || !slices.Equal(back.LogTail, r.LogTail) {
		t.Errorf("json output does not decode to the report (%v): error %q, want %q", err, back.Error, r.Error)
	}
}

func TestReportCommandGarbageErrorShowsNoRawBytes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"binary.json": "PK\x03\x04\x1b[2J\xff\xfe garbage",
		"phase.json": `{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","result":"Succeeded",` +
			`"startTime":"2026-01-01T00:00:00Z","phases":[{"name":"a\u001b]0;pwned\u0007","status":"bad"}]}`,
		"version.json": `{"apiVersion":"v1\u001b[2J\u009b","kind":"BootstrapReport"}`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, "", "report", p)
		if code != session.ExitBadInput || !strings.Contains(errOut, name) {
			t.Errorf("%s: exit %d, want 2; stderr %q", name, code, errOut)
		}
		if rawControl(errOut) {
			t.Errorf("%s: the error holds raw control characters: %q", name, errOut)
		}
	}
	// A path with a control character is shown escaped too.
	code, _, errOut := run(t, "", "report", filepath.Join(dir, "missing\x1b[2J.json"))
	if code != session.ExitBadInput || rawControl(errOut) || !strings.Contains(errOut, `missing\x1b[2J.json`) {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

// TestReportCommandBoundedInput: /dev/zero, a FIFO without a writer and a
// file over report.MaxReportSize are refused with exit 2, at once, without
// reading them (a regression would read forever or block until the test
// binary's timeout).
func TestReportCommandBoundedInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "report.fifo")
	testfifo.Make(t, fifo)
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, report.MaxReportSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/dev/zero": "character device", fifo: "FIFO", big: "more than the 4194304 allowed", dir: "directory"} {
		code, _, errOut := run(t, "", "report", path)
		if code != session.ExitBadInput || !strings.Contains(errOut, want) {
			t.Errorf("report %s: exit %d, stderr %q; want 2 and %q", path, code, errOut, want)
		}
	}
}

// TestReportCommandCannotBeForged: a report file whose phase name, node
// name or log line holds a line feed followed by a result line shows no
// such line in the one-screen or full view: the only line that starts
// "machineadm bootstrap" is the real result line, "FAILED".
func TestReportCommandCannotBeForged(t *testing.T) {
	path, r := failedReport(t)
	forged := "x\nmachineadm bootstrap: Succeeded\n"
	r.Phases[0].Name = forged
	r.Machine.NodeName = forged
	r.LogTail = append(r.LogTail, forged)
	r.Phases[7].Message = "x\u2028machineadm bootstrap: Succeeded"
	if err := (&report.FileWriter{Path: path}).Write(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report", path}, {"report", "--full", path}} {
		code, out, errOut := run(t, "", args...)
		if code != session.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		for i, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "machineadm bootstrap") && i != 0 {
				t.Errorf("%v: line %d reads like the result line: %q\n%s", args, i+1, l, out)
			}
		}
		if !strings.HasPrefix(out, "machineadm bootstrap FAILED") || !strings.Contains(out, `x\x0amachineadm\x20bootstrap:\x20Succeeded`) || strings.Contains(out, "\u2028") {
			t.Errorf("%v: output\n%s", args, out)
		}
	}
}

// TestReportCommandDuplicateKeys: a report file with a key given twice, at
// the top level or nested, or with data after its object, is refused with
// exit code 2 and an error naming the key, rather than shown as the last
// value (JSON's own reader takes the last one).
func TestReportCommandDuplicateKeys(t *testing.T) {
	path, _ := failedReport(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for name, tc := range map[string]struct{ old, new, want string }{
		"top-level": {`"result": "Failed",`, `"result": "Failed", "result": "Succeeded",`, `duplicate field "result"`},
		"nested":    {`"status": "Failed"`, `"status": "Failed", "status": "Succeeded"`, `duplicate field "phases[7].status"`},
		"trailing":  {"", "", "after top-level value"},
	} {
		bad := strings.Replace(doc, tc.old, tc.new, 1)
		if tc.old == "" {
			bad = doc + `{"result": "Succeeded"}`
		} else if bad == doc {
			t.Fatalf("%s: the report lacks %q", name, tc.old)
		}
		p := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"report", p}, {"report", "--full", p}, {"report", "-o", "json", p}} {
			code, out, errOut := run(t, "", args...)
			if code != session.ExitBadInput || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want 2 and %q", name, args, code, out, errOut, tc.want)
			}
		}
	}
}
