package cmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// upgradeSpec is a first control plane at version, with node name node
// and one API server flag.
func upgradeSpec(version, node, auditAge string) string {
	return `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: ControlPlane
  action: Init
  kubernetes:
    version: ` + version + `
    controlPlaneEndpoint: cp.example:6443
  controlPlane:
    advertiseAddress: 192.0.2.10
    apiServer:
      extraArgs:
        - {name: audit-log-maxage, value: "` + auditAge + `"}
    bootstrapTokens:
      - token: {value: abcdef.0123456789abcdef}
  node:
    name: ` + node + `
`
}

// recordSpec writes the applied-spec record of content into a new work
// directory, as a finished bootstrap does, and returns the directory.
func recordSpec(t *testing.T, content string) string {
	t.Helper()
	l, err := spec.Load([]byte(content), "spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key, err := upgrade.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	r, err := upgrade.NewRecord(l.Config, "sha256:"+hex.EncodeToString(sum[:]), "bootstrap", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	if err := r.Write(work); err != nil {
		t.Fatal(err)
	}
	return work
}

func upgradeCLI(t *testing.T, work, specText string, extra ...string) (int, string, string) {
	t.Helper()
	tmp := t.TempDir()
	args := []string{"upgrade", "-f", writeSpec(t, specText), "--work-dir", work, "--report-root", filepath.Join(tmp, "rr")}
	for _, e := range extra {
		if e == "--dry-run" {
			args = append(args, "--dry-run-dir", filepath.Join(tmp, "dr"))
		}
	}
	args = append(args, extra...)
	return run(t, "", args...)
}

func TestUpgradeDryRunPrintsThePlanAndChangesNothing(t *testing.T) {
	old := upgradeSpec("v1.36.3", "cp1", "30")
	work := recordSpec(t, old)
	before, _ := os.ReadFile(filepath.Join(work, upgrade.RecordFile))
	code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp1", "7"), "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"Kubernetes v1.36.3 -> v1.37.2",
		"spec.controlPlane.apiServer.extraArgs",
		"1. drain", "2. kubeadm-upgrade", "3. control-plane (kube-apiserver, one at a time)", "4. kubelet", "5. uncordon",
		"would run kubeadm upgrade phase preflight to v1.37.2",
		"would cordon Node cp1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "0123456789abcdef") {
		t.Errorf("the token leaked:\n%s\n%s", out, errOut)
	}
	after, _ := os.ReadFile(filepath.Join(work, upgrade.RecordFile))
	if !bytes.Equal(before, after) {
		t.Errorf("a dry run changed the record")
	}
	if _, err := os.Stat(filepath.Join(work, upgrade.JournalFile)); err == nil {
		t.Errorf("a dry run wrote the upgrade journal")
	}
}

func TestUpgradeSameSpecPlansNothing(t *testing.T) {
	s := upgradeSpec("v1.37.2", "cp1", "30")
	code, out, errOut := upgradeCLI(t, recordSpec(t, s), s, "--dry-run")
	if code != 0 || !strings.Contains(out, "no change: the node already runs this spec") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "would run") || strings.Contains(out, "would cordon") || strings.Contains(out, "would restart") {
		t.Errorf("a plan without changes would change something:\n%s", out)
	}
}

func TestUpgradeRefusesAChangeThatCannotBeMadeInPlace(t *testing.T) {
	work := recordSpec(t, upgradeSpec("v1.37.2", "cp1", "30"))
	for _, dry := range []bool{true, false} {
		var extra []string
		if dry {
			extra = append(extra, "--dry-run")
		}
		code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp2", "30"), extra...)
		if code != 2 {
			t.Fatalf("dry run %v: exit %d, want 2\n%s\n%s", dry, code, out, errOut)
		}
		if !strings.Contains(errOut, "spec.node.name") || !strings.Contains(errOut, "identity in the cluster") {
			t.Errorf("the refusal does not name the field and why:\n%s", errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(work, upgrade.JournalFile)); err == nil {
		t.Errorf("a refused upgrade wrote the upgrade journal")
	}
	code, _, errOut := upgradeCLI(t, work, upgradeSpec("v1.36.3", "cp1", "30"), "--dry-run")
	if code != 2 || !strings.Contains(errOut, "spec.kubernetes.version") || !strings.Contains(errOut, "does not downgrade") {
		t.Errorf("a downgrade: exit %d\n%s", code, errOut)
	}
}

func TestUpgradeWithoutRecordIsRefused(t *testing.T) {
	code, out, errOut := upgradeCLI(t, filepath.Join(t.TempDir(), "work"), upgradeSpec("v1.37.2", "cp1", "30"), "--dry-run")
	if code != 2 || !strings.Contains(errOut, "no applied-spec record") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// The command line was right: the hint says to record the spec with
	// bootstrap, not to read --help.
	if all := out + errOut; strings.Contains(all, "fix the command line") || strings.Contains(all, "--help") || !strings.Contains(all, "hint:  run `machineadm bootstrap -f SPEC` once") {
		t.Fatalf("misleading hint:\n%s\n%s", out, errOut)
	}
}

// workerSpec is a worker at v1.37.2 reporting to the path report.
func workerSpec(report string) string {
	return `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  action: Join
  kubernetes:
    version: v1.37.2
  join:
    apiServerEndpoint: cp.example:6443
    token: {file: /etc/machineadm/secrets/join-token}
    caCertHashes: ["sha256:` + strings.Repeat("ab", 32) + `"]
  node:
    name: w1
  report:
    path: ` + report + `
`
}

// TestUpgradeRunsAndRepeats runs real upgrades (not dry runs) of a worker
// whose plan touches nothing on the node: the first one, with a changed
// report path (a field of the run only), records the new spec; a second
// one to the same spec changes nothing and keeps the record.
func TestUpgradeRunsAndRepeats(t *testing.T) {
	work := recordSpec(t, workerSpec("/var/lib/machineadm/report.json"))
	newSpec := workerSpec("/var/lib/machineadm/upgrade-report.json")
	code, out, errOut := upgradeCLI(t, work, newSpec)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `RunOnly       spec.report: "path=/var/lib/machineadm/report.json" -> "path=/var/lib/machineadm/upgrade-report.json"`) || !strings.Contains(out, "record-spec: changed") {
		t.Errorf("plan:\n%s", out)
	}
	rec, err := upgrade.ReadRecord(work)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(newSpec))
	if rec.Command != "upgrade" || rec.SpecDigest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("the upgrade did not record its spec: %+v", rec)
	}
	before, _ := os.ReadFile(filepath.Join(work, upgrade.RecordFile))
	code, out, errOut = upgradeCLI(t, work, newSpec)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "no change: the node already runs this spec") || strings.Contains(out, ": changed") {
		t.Errorf("second run changed something:\n%s", out)
	}
	after, _ := os.ReadFile(filepath.Join(work, upgrade.RecordFile))
	if !bytes.Equal(before, after) {
		t.Errorf("a second upgrade to the same spec rewrote the record")
	}
}

// TestUpgradeResumesAfterAKill plants the journal a killed upgrade leaves
// (its first leaves completed, no end) and runs the same upgrade again:
// it resumes after the completed leaves and finishes, recording the spec;
// the journal of another upgrade (another recorded spec) is not resumed.
func TestUpgradeResumesAfterAKill(t *testing.T) {
	oldSpec := workerSpec("/var/lib/machineadm/report.json")
	newSpec := workerSpec("/var/lib/machineadm/upgrade-report.json")
	digest := func(s string) string { sum := sha256.Sum256([]byte(s)); return "sha256:" + hex.EncodeToString(sum[:]) }
	for _, tc := range []struct {
		from    string
		resumed bool
	}{{digest(oldSpec), true}, {digest("another spec"), false}} {
		work := recordSpec(t, oldSpec)
		journal := `{"specDigest":"` + upgrade.JournalKey(tc.from, digest(newSpec)) + `"}` + "\n" +
			`{"completed":"inputs-check"}` + "\n" + `{"completed":"upgrade-plan"}` + "\n" + `{"completed":"drain"}` + "\n"
		if err := os.WriteFile(filepath.Join(work, upgrade.JournalFile), []byte(journal), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := upgradeCLI(t, work, newSpec)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		resumed := strings.Contains(out, "drain: skipped") || strings.Contains(out, "completed by an earlier run")
		if resumed != tc.resumed {
			t.Errorf("journal of %s: resumed %v, want %v\n%s", tc.from, resumed, tc.resumed, out)
		}
		if rec, err := upgrade.ReadRecord(work); err != nil || rec.SpecDigest != digest(newSpec) {
			t.Errorf("the rerun did not record the spec: %+v %v", rec, err)
		}
	}
}

// TestBootstrapOfAnotherSpecIsRefused: on a node that runs a recorded
// spec, a bootstrap of another spec is refused (exit code 2) pointing at
// upgrade, before it changes anything; the recorded spec itself is not
// refused.
func TestBootstrapOfAnotherSpecIsRefused(t *testing.T) {
	a := workerSpec("/var/lib/machineadm/report.json")
	work := recordSpec(t, a)
	tmp := t.TempDir()
	code, out, errOut := run(t, "", "bootstrap", "-f", writeSpec(t, workerSpec("/var/lib/machineadm/other.json")), "--work-dir", work, "--report-root", filepath.Join(tmp, "rr"), "--dry-run", "--dry-run-dir", filepath.Join(tmp, "dr"))
	if code != 2 || !strings.Contains(errOut, "this node runs another spec") || !strings.Contains(errOut, "machineadm upgrade -f SPEC") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(tmp, "dr", "kubeadm")); err == nil {
		t.Errorf("a refused bootstrap's dry run ran kubeadm")
	}
	_, _, errOut = run(t, "", "bootstrap", "-f", writeSpec(t, a), "--work-dir", work, "--report-root", filepath.Join(tmp, "rr2"), "--dry-run", "--dry-run-dir", filepath.Join(tmp, "dr2"))
	if strings.Contains(errOut, "runs another spec") {
		t.Errorf("the recorded spec was refused:\n%s", errOut)
	}
}

// TestBootstrapOfAnotherSpecIsRefusedByARecordOthersMayWrite: a record
// that group or others may write, which upgrade refuses to plan from,
// still refuses a bootstrap of another spec (it can only refuse): read
// with the owner and mode check, it let that bootstrap run its phases.
func TestBootstrapOfAnotherSpecIsRefusedByARecordOthersMayWrite(t *testing.T) {
	work := recordSpec(t, workerSpec("/var/lib/machineadm/report.json"))
	if err := os.Chmod(filepath.Join(work, upgrade.RecordFile), 0o666); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	code, out, errOut := run(t, "", "bootstrap", "-f", writeSpec(t, workerSpec("/var/lib/machineadm/other.json")), "--work-dir", work, "--report-root", filepath.Join(tmp, "rr"), "--dry-run", "--dry-run-dir", filepath.Join(tmp, "dr"))
	if code != 2 || !strings.Contains(errOut, "this node runs another spec") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestUpgradeRefusesARecordWithASecretInTheClear: a record holding an
// inline secret that is not withheld (hand-edited, or not written by
// machineadm) is refused, exit code 2 naming the field and never the
// value; the plan printed it ("value=<token>") as the old value of a
// changed spec.join.token.
func TestUpgradeRefusesARecordWithASecretInTheClear(t *testing.T) {
	const tok = "not-token-shaped-Sesame-2718"
	work := recordSpec(t, workerSpec("/var/lib/machineadm/report.json"))
	p := filepath.Join(work, upgrade.RecordFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["spec"].(map[string]any)["spec"].(map[string]any)["join"].(map[string]any)["token"] = map[string]any{"value": tok}
	data, _ = json.Marshal(rec)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{{"--dry-run"}, nil} {
		code, out, errOut := upgradeCLI(t, work, workerSpec("/var/lib/machineadm/report.json"), extra...)
		if strings.Contains(out+errOut, tok) {
			t.Errorf("%v: the record's clear token was printed:\n%s\n%s", extra, out, errOut)
		}
		if code != 2 || !strings.Contains(errOut, "spec.join.token") {
			t.Errorf("%v: exit %d, want 2 naming spec.join.token\n%s\n%s", extra, code, out, errOut)
		}
	}
}

// TestUpgradeRecordSpecCannotBeSkipped: `--skip-phases record-spec` is a
// usage error (exit 2, nothing changed). It ran, the journal marked the
// upgrade finished, and every later run of it (without the flag) reported
// "already finished" and never wrote the record: the node stayed on its
// old applied spec, and a bootstrap of the new one was refused.
func TestUpgradeRecordSpecCannotBeSkipped(t *testing.T) {
	work := recordSpec(t, workerSpec("/var/lib/machineadm/report.json"))
	before, _ := os.ReadFile(filepath.Join(work, upgrade.RecordFile))
	newSpec := workerSpec("/var/lib/machineadm/upgrade-report.json")
	code, out, errOut := upgradeCLI(t, work, newSpec, "--skip-phases", "record-spec")
	if code != 2 || !strings.Contains(errOut, "record-spec cannot be skipped") {
		t.Errorf("exit %d, want 2\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(work, upgrade.RecordFile)); !bytes.Equal(before, after) {
		t.Errorf("the refused run changed the record")
	}
	code, out, errOut = upgradeCLI(t, work, newSpec)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	sum := sha256.Sum256([]byte(newSpec))
	r, err := upgrade.ReadRecord(work)
	if err != nil {
		t.Fatal(err)
	}
	if r.Command != "upgrade" || r.SpecDigest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("the upgrade did not record its spec: the record is %s's, %s", r.Command, r.SpecDigest)
	}
}

// TestUpgradeRefusalHintIsAboutTheChange: an upgrade refused for a change
// that cannot be made in place has a spec that is valid on its own, so
// its hint says what to do about the change. It said to run `config
// validate`, which finds nothing wrong with the spec.
func TestUpgradeRefusalHintIsAboutTheChange(t *testing.T) {
	work := recordSpec(t, upgradeSpec("v1.37.2", "cp1", "30"))
	for _, extra := range [][]string{{"--dry-run"}, nil} {
		code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp2", "30"), extra...)
		all := out + errOut
		if code != 2 || !strings.Contains(errOut, "spec.node.name") {
			t.Fatalf("%v: exit %d, want 2 naming spec.node.name\n%s\n%s", extra, code, out, errOut)
		}
		if strings.Contains(all, "config validate") || !strings.Contains(all, "hint:  keep the refused fields as the node has them") {
			t.Errorf("%v: the hint is not about the refused change:\n%s\n%s", extra, out, errOut)
		}
	}
}

// TestUpgradeUnusableRecordHint: a record that cannot be used (damaged,
// or one others may have written) refuses the upgrade, exit code 2,
// saying how to record the spec again, not to read --help: the command
// line was right. It says so in the error too, which is all a run prints
// when it leaves the last run's report in place (the second run below).
func TestUpgradeUnusableRecordHint(t *testing.T) {
	// What to do: record the spec again for a damaged record; for one
	// refused for its owner or mode alone, give it back to root with mode
	// 0600 once its spec is checked (removing it loses the spec the node
	// runs).
	for name, tc := range map[string]struct {
		spoil func(p string) error
		want  string
	}{
		"truncated": {spoil: func(p string) error { return os.WriteFile(p, []byte("{"), 0o600) }, want: "remove it, then run `machineadm bootstrap -f SPEC` once"},
		"world-writable": {spoil: func(p string) error {
			if err := os.Chmod(p, 0o666); err != nil {
				return err
			}
			return os.Chmod(filepath.Dir(p), 0o700)
		}, want: "give it back to root with mode 0600 (chown root:root FILE && chmod 0600 FILE)"},
	} {
		s := workerSpec("/var/lib/machineadm/report.json")
		work := recordSpec(t, s)
		if err := tc.spoil(filepath.Join(work, upgrade.RecordFile)); err != nil {
			t.Fatal(err)
		}
		args := []string{"upgrade", "-f", writeSpec(t, s), "--work-dir", work, "--report-root", filepath.Join(t.TempDir(), "rr")}
		for i := 0; i < 2; i++ {
			code, out, errOut := run(t, "", args...)
			all := out + errOut
			if code != 2 || !strings.Contains(errOut, "applied-spec record cannot be used") {
				t.Fatalf("%s, run %d: exit %d, want 2\n%s\n%s", name, i+1, code, out, errOut)
			}
			if strings.Contains(all, "--help") || strings.Contains(all, "fix the command line") || !strings.Contains(strings.Join(strings.Fields(errOut), " "), tc.want) {
				t.Errorf("%s, run %d: misleading hint:\n%s\n%s", name, i+1, out, errOut)
			}
		}
	}
}

// TestUpgradeRefusesAnUnusableKubeconfig: a --kubeconfig that was given
// and does not exist, is a directory, or does not load is a usage error
// (exit 2) naming the flag, before the run plans anything; the file's
// content is never quoted.
func TestUpgradeRefusesAnUnusableKubeconfig(t *testing.T) {
	work := recordSpec(t, upgradeSpec("v1.36.3", "cp1", "30"))
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("users:\n- name: u\n  user:\n    token: SECRET-TOKEN-x\n    client-key-data: not-base64-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nullKey := filepath.Join(dir, "null-key")
	if err := os.WriteFile(nullKey, []byte("users:\n- name: u\n  user:\n    ~: SECRET-TOKEN-y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{nullKey, "--kubeconfig " + nullKey + ": does not load as a kubeconfig: its YAML has a map key"},
		{filepath.Join(dir, "missing"), "--kubeconfig " + filepath.Join(dir, "missing") + ": does not exist"},
		{dir, "must be a regular file"},
		{garbage, "--kubeconfig " + garbage + ": does not load as a kubeconfig: illegal base64 data"},
	} {
		code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp1", "30"), "--dry-run", "--kubeconfig", c.path)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("--kubeconfig %s: exit %d, want 2 and %q\n%s\n%s", c.path, code, c.want, out, errOut)
		}
		// What to do: another credential, the default's, or no drain.
		if c.path != dir && !strings.Contains(errOut, "leave the flag out on a control plane (/etc/kubernetes/admin.conf), or pass --skip-drain") {
			t.Errorf("--kubeconfig %s: the error does not say what to do:\n%s", c.path, errOut)
		}
		if all := out + errOut; strings.Contains(all, "SECRET") {
			t.Errorf("--kubeconfig %s: the file's content reached the output:\n%s", c.path, all)
		}
		if strings.Contains(out, "would cordon Node cp1") {
			t.Errorf("--kubeconfig %s: the run went on to plan the drain:\n%s", c.path, out)
		}
	}
	// A kubeconfig that loads passes the check (the dry run prints the plan).
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user: {token: abc}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp1", "30"), "--dry-run", "--kubeconfig", good); code != 0 || !strings.Contains(out, "would cordon Node cp1") {
		t.Errorf("a usable --kubeconfig: exit %d, want 0 and the drain in the plan\n%s\n%s", code, out, errOut)
	}
}

// TestUpgradeSkipDrainDoesNotReadTheKubeconfig: with --skip-drain the
// drain's credential is never read, so a --kubeconfig that is missing or
// does not load does not refuse the run, as before the check: the drain
// failure's own hint is to run again with --skip-drain, and a script that
// passes the same --kubeconfig to every node adds --skip-drain on those
// whose credential it has not.
func TestUpgradeSkipDrainDoesNotReadTheKubeconfig(t *testing.T) {
	work := recordSpec(t, upgradeSpec("v1.36.3", "cp1", "30"))
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("users: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kc := range []string{filepath.Join(dir, "missing"), garbage} {
		code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp1", "30"), "--dry-run", "--skip-drain", "--kubeconfig", kc)
		if code != 0 || !strings.Contains(out, "[upgrade] drain: unchanged") || strings.Contains(out, "would cordon") {
			t.Errorf("--skip-drain --kubeconfig %s: exit %d, want 0 and the drain skipped\n%s\n%s", kc, code, out, errOut)
		}
	}
	// What cannot be opened without blocking is still refused.
	if code, out, errOut := upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp1", "30"), "--dry-run", "--skip-drain", "--kubeconfig", dir); code != 2 || !strings.Contains(errOut, "must be a regular file") {
		t.Errorf("--skip-drain --kubeconfig DIR: exit %d, want 2\n%s\n%s", code, out, errOut)
	}
}
