package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/report"
)

// TestBootstrapSkipOneSubPhase: --skip-phases addon/kube-proxy skips only
// kube-proxy; the report records the tree (addon spans its children).
func TestBootstrapSkipOneSubPhase(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	dr := filepath.Join(t.TempDir(), "dryrun")
	out, code := machineadm(t, "bootstrap", "-f", withInputs(t, "control-plane-init", ""), "--dry-run", "--dry-run-dir", dr, "--skip-phases", "addon/kube-proxy")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	rep := requireReport(t, filepath.Join(dr, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
	status := map[string]report.Phase{}
	for _, p := range rep.Phases {
		status[p.Name] = p
	}
	for name, want := range map[string]report.PhaseStatus{
		"addon/coredns": report.PhaseSucceeded, "addon/kube-proxy": report.PhaseSkipped, "addon": report.PhaseSucceeded,
		"certs/apiserver": report.PhaseSucceeded, "control-plane/apiserver": report.PhaseSucceeded,
	} {
		if got := status[name].Status; got != want {
			t.Errorf("%s: %q, want %s", name, got, want)
		}
	}
	// A parent's entry covers its children (durations are whole
	// milliseconds, rounded: the parent's end may read up to 0.5 ms early
	// and the child's up to 0.5 ms late).
	parent, child := status["certs"], status["certs/sa"]
	if parent.StartTime.After(status["certs/ca"].StartTime) || parent.StartTime.Add(msDur(parent.DurationMs+1)).Before(child.StartTime.Add(msDur(child.DurationMs))) {
		t.Errorf("certs [%v +%dms] does not span certs/sa [%v +%dms]", parent.StartTime, parent.DurationMs, child.StartTime, child.DurationMs)
	}
	if !strings.Contains(out, "[bootstrap] addon/kube-proxy: skipped (--skip-phases)") {
		t.Errorf("console lacks the skipped sub-phase:\n%s", out)
	}
}

// TestBootstrapPhaseTree: `bootstrap phase` prints the tree; one sub-phase
// runs alone.
func TestBootstrapPhaseTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	out, code := machineadm(t, "bootstrap", "phase", "-f", "../../docs/examples/control-plane-init.yaml")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, line := range []string{"certs ", "  certs/apiserver ", "  control-plane/apiserver ", "  addon/coredns ", "  addon/kube-proxy ", "static-pods "} {
		if !strings.Contains(out, "\n"+line) {
			t.Errorf("tree lacks %q:\n%s", line, out)
		}
	}
	dr := filepath.Join(t.TempDir(), "one")
	out, code = machineadm(t, "bootstrap", "phase", "control-plane/apiserver", "-f", withInputs(t, "control-plane-init", ""), "--dry-run", "--dry-run-dir", dr)
	if code != 0 {
		t.Fatalf("phase control-plane/apiserver: exit %d:\n%s", code, out)
	}
	rep := requireReport(t, filepath.Join(dr, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
	var names []string
	for _, p := range rep.Phases {
		names = append(names, p.Name)
	}
	if want := []string{"control-plane", "control-plane/apiserver"}; !reflect.DeepEqual(names, want) {
		t.Errorf("phases run alone: %v, want %v", names, want)
	}
	manifests, _ := filepath.Glob(filepath.Join(dr, "kubeadm", "*.yaml"))
	var apiserver bool
	for _, m := range manifests {
		apiserver = apiserver || strings.Contains(m, "kube-apiserver")
		if strings.Contains(m, "kube-scheduler") || strings.Contains(m, "etcd.yaml") {
			t.Errorf("phase control-plane/apiserver wrote %s", m)
		}
	}
	if !apiserver {
		t.Errorf("no kube-apiserver manifest in %v", manifests)
	}
	if out, code := machineadm(t, "bootstrap", "phase", "kube-proxy", "-f", "../../docs/examples/control-plane-init.yaml", "--dry-run", "--dry-run-dir", dr); code != 2 {
		t.Errorf("a short sub-phase name: exit %d, want 2:\n%s", code, out)
	}
}

// TestPrepareEqualsBootstrapHostGroup: prepare and the host group of
// bootstrap give identical phase entries for the same spec.
func TestPrepareEqualsBootstrapHostGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	spec := "../../docs/examples/worker.yaml"
	bootDir := filepath.Join(t.TempDir(), "boot")
	out, code := machineadm(t, "prepare", "-f", spec, "--dry-run")
	if code != 0 {
		t.Fatalf("prepare: exit %d:\n%s", code, out)
	}
	// prepare prints where its dry run's report is.
	const under = "what the dry run wrote is under "
	i := strings.LastIndex(out, under)
	if i < 0 {
		t.Fatalf("prepare output names no report directory:\n%s", out)
	}
	prepDir := strings.TrimSpace(out[i+len(under):])
	defer os.RemoveAll(prepDir)
	out, code = machineadm(t, "bootstrap", "-f", withInputs(t, "worker", ""), "--dry-run", "--dry-run-dir", bootDir)
	if code != 0 {
		t.Fatalf("bootstrap: exit %d:\n%s", code, out)
	}
	prep := requireReport(t, filepath.Join(prepDir, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
	boot := requireReport(t, filepath.Join(bootDir, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
	entries := func(r *report.BootstrapReport, keep func(string) bool) []string {
		var out []string
		for _, p := range r.Phases {
			if keep(p.Name) {
				out = append(out, p.Name+" "+string(p.Status)+" "+p.Message)
			}
		}
		return out
	}
	prepNames := map[string]bool{}
	for _, p := range prep.Phases {
		prepNames[p.Name] = true
	}
	got := entries(boot, func(n string) bool { return prepNames[n] })
	want := entries(prep, func(string) bool { return true })
	if len(want) != 6 || !reflect.DeepEqual(got, want) {
		t.Errorf("host group entries differ:\n bootstrap %q\n prepare   %q", got, want)
	}
}

func msDur(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// TestDryRunHidesTokenSecretInEveryEncoding: an init dry run prints
// kubeadm's bootstrap-token Secret; no part of the token appears in any
// encoding.
func TestDryRunHidesTokenSecretInEveryEncoding(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	tmp := t.TempDir()
	const token, secretHalf = "q1w2e3.r4t5y6u7i8o9p0a1", "r4t5y6u7i8o9p0a1"
	tokFile := filepath.Join(tmp, "token")
	os.WriteFile(tokFile, []byte(token+"\n"), 0o600)
	specPath := withInputs(t, "control-plane-init", "")
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(specPath, []byte(strings.Replace(string(raw), filepath.Join(filepath.Dir(specPath), "secrets", "bootstrap-token"), tokFile, 1)), 0o600)
	dr := filepath.Join(tmp, "dr")
	// -v: kubeadm's full output on the console too.
	out, code := machineadm(t, "bootstrap", "-f", specPath, "--dry-run", "--dry-run-dir", dr, "-v")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "token-secret") {
		t.Fatalf("the dry run printed no bootstrap-token Secret; nothing checked:\n%s", out)
	}
	report, _ := os.ReadFile(filepath.Join(dr, "var/lib/machineadm/report.json"))
	log, _ := os.ReadFile(filepath.Join(dr, "var/lib/machineadm/machineadm.log"))
	if !strings.Contains(string(log), "token-secret") {
		t.Error("the log file lacks kubeadm's output")
	}
	for _, part := range []string{token, secretHalf} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			for name, text := range map[string]string{"output": out, "report": string(report), "log": string(log)} {
				if v := enc.EncodeToString([]byte(part)); strings.Contains(text, v) {
					t.Errorf("%s holds %q encoded as %s", name, part, v)
				}
			}
		}
		if strings.Contains(out, part) || strings.Contains(string(report), part) || strings.Contains(string(log), part) {
			t.Errorf("%q in clear", part)
		}
	}
}

// TestTypoKeepsTheLastReport: a usage error (an unknown phase name) after
// a real run leaves that run's report and its previous copy as they were.
func TestTypoKeepsTheLastReport(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	rr := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	// A recorded run: an invalid spec is recorded (exit 2) like any run.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec: {role: Nope}\n"), 0o600)
	if _, code := machineadm(t, "bootstrap", "-f", bad, "--report-root", rr, "--work-dir", work); code != 2 {
		t.Fatalf("invalid spec: exit %d", code)
	}
	path := filepath.Join(rr, "var/lib/machineadm/report.json")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		out, code := machineadm(t, "bootstrap", "phase", "no-such-phase", "-f", "../../docs/examples/worker.yaml", "--report-root", rr, "--work-dir", work)
		if code != 2 || !strings.Contains(out, "no-such-phase") {
			t.Fatalf("typo: exit %d:\n%s", code, out)
		}
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Error("a typo replaced the last run's report")
	}
	if _, err := os.Stat(filepath.Join(rr, "var/lib/machineadm/report.previous.json")); err == nil {
		t.Error("a typo rotated the report")
	}
}
