package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/cmd/configcmd"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/session"
)

// The first hour of a new user (issue 15): the commands of the README's
// quick start, their failure paths, and what the console shows.

func TestPKIHashTakesTheDirectoryAsArgument(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	code, initHash, errOut := run(t, "", "pki", "init", "--out", dir)
	if code != session.ExitOK {
		t.Fatalf("pki init: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{dir}, {"--dir", dir}, {"--dir", dir + "/", dir}} {
		code, out, errOut := run(t, "", append([]string{"pki", "hash"}, args...)...)
		if code != session.ExitOK || out != initHash {
			t.Errorf("pki hash %q: exit %d, %q (want %q) %s", args, code, out, initHash, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", t.TempDir(), dir}, "name different directories"},
		{nil, "a directory is required"},
		{[]string{dir, dir}, "at most one directory"},
		{[]string{t.TempDir()}, "ca.crt"},
	} {
		code, out, errOut := run(t, "", append([]string{"pki", "hash"}, tc.args...)...)
		if code != session.ExitBadInput || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("pki hash %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestSecretsToFiles: token generate, pki certificate-key and pki
// encryption-key write the
// secret to a 0600 file and nowhere else, never replace an existing file,
// and print it when no file is given.
func TestSecretsToFiles(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		grammar *regexp.Regexp
	}{
		{[]string{"token", "generate"}, regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}\n$`)},
		{[]string{"pki", "certificate-key"}, regexp.MustCompile(`^[0-9a-f]{64}\n$`)},
		// base64 of 32 bytes: 43 characters and one "=".
		{[]string{"pki", "encryption-key"}, regexp.MustCompile(`^[A-Za-z0-9+/]{43}=\n$`)},
	} {
		path := filepath.Join(t.TempDir(), "secrets", "s")
		code, out, errOut := run(t, "", append(tc.args, "--out", path)...)
		if code != session.ExitOK || out != "" {
			t.Fatalf("%q --out: exit %d, stdout %q (want none), stderr %s", tc.args, code, out, errOut)
		}
		data, err := os.ReadFile(path)
		if err != nil || !tc.grammar.Match(data) {
			t.Fatalf("%q: file %q (%v)", tc.args, data, err)
		}
		if strings.Contains(errOut, strings.TrimSpace(string(data))) {
			t.Errorf("%q: the secret is on stderr: %s", tc.args, errOut)
		}
		for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
			}
		}
		code, _, errOut = run(t, "", append(tc.args, "--out", path)...)
		if again, _ := os.ReadFile(path); code != session.ExitBadInput || string(again) != string(data) || !strings.Contains(errOut, "never overwritten") {
			t.Errorf("%q over an existing file: exit %d, file changed %v: %s", tc.args, code, string(again) != string(data), errOut)
		}
		// A directory for --out, new (a trailing slash) or existing, is
		// bad input that says so, and no directory is made.
		newDir := filepath.Join(t.TempDir(), "new") + "/"
		for o, want := range map[string]string{newDir: "names a directory", filepath.Dir(path): "is a directory"} {
			code, _, errOut = run(t, "", append(tc.args, "--out", o)...)
			if code != session.ExitBadInput || !strings.Contains(errOut, want) {
				t.Errorf("%q --out %s: exit %d: %s", tc.args, o, code, errOut)
			}
		}
		if _, err := os.Stat(newDir); !os.IsNotExist(err) {
			t.Errorf("%q: --out %s made the directory (%v)", tc.args, newDir, err)
		}
		code, out, _ = run(t, "", tc.args...)
		if code != session.ExitOK || !tc.grammar.MatchString(out) {
			t.Errorf("%q: exit %d, stdout %q", tc.args, code, out)
		}
	}
}

// TestConfigValidateWarnsForMissingSecretFiles: a secret file or CA set
// the spec names that is not there is a warning naming the field and the
// path, and the spec stays valid (exit 0); once it is there, no warning.
func TestConfigValidateWarnsForMissingSecretFiles(t *testing.T) {
	dir := t.TempDir()
	tok, pki := filepath.Join(dir, "token"), filepath.Join(dir, "pki")
	doc := strings.Replace(cliWorker, "/etc/machineadm/secrets/bootstrap-token", tok, 1)
	path := writeSpec(t, doc)
	code, out, errOut := run(t, "", "config", "validate", "-f", path)
	if code != session.ExitOK || !strings.Contains(out, "warning: spec.join.token.file: "+tok+" does not exist on this machine") || !strings.Contains(out, ": valid ") {
		t.Errorf("missing token file: exit %d\n%s%s", code, out, errOut)
	}
	run(t, "", "token", "generate", "--out", tok)
	if code, out, _ := run(t, "", "config", "validate", "-f", path); code != session.ExitOK || strings.Contains(out, "apiServer.encryption") {
		t.Errorf("token file present: exit %d\n%s", code, out)
	}

	cp, err := os.ReadFile("../../docs/examples/control-plane-init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cpDoc := strings.NewReplacer("    # pki:\n", "    pki:\n", "    #   dir: /etc/machineadm/pki", "      dir: "+pki).Replace(string(cp))
	code, out, _ = run(t, "", "config", "validate", "-f", writeSpec(t, cpDoc))
	for _, want := range []string{
		"warning: spec.controlPlane.pki.dir: " + pki + " holds no ca.crt",
		"warning: spec.controlPlane.certificateKey.file: /etc/machineadm/secrets/certificate-key does not exist",
		"warning: spec.controlPlane.bootstrapTokens[0].token.file: ",
	} {
		if code != session.ExitOK || !strings.Contains(out, want) {
			t.Errorf("control plane: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
}

// TestConfigDefaultsOfOwnSpec: -f shows the user's spec with its defaults
// filled in and inline secrets redacted; -f with a flag that the spec
// answers, or an invalid spec, is bad input.
func TestConfigDefaultsOfOwnSpec(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	doc := strings.Replace(cliWorker, "{file: /etc/machineadm/secrets/bootstrap-token}", "{value: "+token+"}", 1)
	path := writeSpec(t, doc)
	code, out, errOut := run(t, "", "config", "defaults", "-f", path)
	if code != session.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"apiServerEndpoint: cp.demo.example:6443", "criSocket: unix:///run/containerd/containerd.sock", "clusterName: kubernetes", "serviceSubnet: 10.96.0.0/12", "path: /var/lib/machineadm/report.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, token) || strings.Contains(out+errOut, "0123456789abcdef") {
		t.Errorf("the inline token is shown:\n%s%s", out, errOut)
	}
	if strings.Contains(out, "placeholder") || !strings.Contains(errOut, "warning: spec.join.token.value") {
		t.Errorf("header or warnings wrong:\nstdout %s\nstderr %s", out, errOut)
	}
	// Without inline secrets, the output is a spec that validates.
	_, fileOut, _ := run(t, "", "config", "defaults", "-f", writeSpec(t, cliWorker))
	if code, vout, verr := run(t, fileOut, "config", "validate", "-f", "-"); code != session.ExitOK || !strings.Contains(vout, "valid") {
		t.Errorf("output does not validate: %s%s", vout, verr)
	}
	if code, _, errOut := run(t, "", "config", "defaults", "-f", path, "--role", "Worker"); code != session.ExitBadInput || !strings.Contains(errOut, "--role cannot be used with -f") {
		t.Errorf("-f with --role: exit %d: %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "config", "defaults", "-f", writeSpec(t, cliWorker+"  colour: blue\n")); code != session.ExitBadInput || !strings.Contains(errOut, "spec.colour") {
		t.Errorf("invalid spec: exit %d: %s", code, errOut)
	}
}

// TestConfigDefaultsHeaderNamesItsPlaceholders: the header lists exactly
// the placeholders the output holds; an init has no secret files or CA
// hash to replace.
func TestConfigDefaultsHeaderNamesItsPlaceholders(t *testing.T) {
	_, initOut, _ := run(t, "", "config", "defaults")
	if strings.Contains(initOut, "secrets/") || strings.Contains(initOut, "CA hash") || strings.Contains(initOut, "0000000000") {
		t.Errorf("init defaults mention placeholders they do not contain:\n%s", initOut)
	}
	if !strings.Contains(initOut, "#   spec.kubernetes.controlPlaneEndpoint: "+configcmd.PlaceholderEndpoint) {
		t.Errorf("init header lacks the endpoint placeholder:\n%s", initOut)
	}
	_, joinOut, _ := run(t, "", "config", "defaults", "--role", "ControlPlane", "--action", "Join")
	for _, want := range []string{"#   spec.join.token.file: /etc/machineadm/secrets/bootstrap-token", "#   spec.controlPlane.certificateKey.file: ", "#   spec.join.caCertHashes: the all-zero hash"} {
		if !strings.Contains(joinOut, want) {
			t.Errorf("join header lacks %q:\n%s", want, joinOut)
		}
	}
}

// TestConsoleForPeopleLogsElsewhere: a run prints no INFO log lines on
// the console; its structured log is in the log file beside the report;
// --log-level puts it on standard error; a bad level is bad input.
func TestConsoleForPeopleLogsElsewhere(t *testing.T) {
	root := t.TempDir()
	spec := writePrepareSpec(t, `    sysctl: {net.ipv4.ip_forward: "1"}
`)
	code, out, errOut := prepareCLI(t, "prepare", "-f", spec, "--root", root)
	if code != session.ExitOK {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut+out, "level=INFO") || strings.Contains(errOut, "phase started") {
		t.Errorf("structured log on the console:\nstdout %s\nstderr %s", out, errOut)
	}
	if !strings.Contains(out, "[prepare] sysctl: changed") {
		t.Errorf("progress lines missing:\n%s", out)
	}
	logFile := filepath.Join(root, "var/lib/machineadm", session.LogFileName)
	data, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(data), `msg="phase started" phase=sysctl`) || !strings.Contains(string(data), "level=DEBUG") && !strings.Contains(string(data), "level=INFO") {
		t.Errorf("log file %s: %v\n%s", logFile, err, data)
	}
	if fi, err := os.Stat(logFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode: %v %v", fi, err)
	}

	code, _, errOut = prepareCLI(t, "--log-level=info", "prepare", "-f", spec, "--root", t.TempDir())
	if code != session.ExitOK || !strings.Contains(errOut, `level=INFO msg="phase started" phase=sysctl`) {
		t.Errorf("--log-level=info: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = prepareCLI(t, "--log-level=loud", "prepare", "-f", spec, "--root", t.TempDir())
	if code != session.ExitBadInput || !strings.Contains(errOut, "--log-level must be one of debug, info, warn, error") {
		t.Errorf("--log-level=loud: exit %d: %s", code, errOut)
	}
}

// TestDryRunFailsOnMissingInputs: a dry run whose token file is missing
// fails in inputs-check as the real run would: exit 1, the field named,
// a Failed report, and it says so instead of "Succeeded".
func TestDryRunFailsOnMissingInputs(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "missing-token")
	spec := writeSpec(t, strings.Replace(testspec.MinimalWorker, "/etc/machineadm/secrets/bootstrap-token", tok, 1))
	dr := filepath.Join(t.TempDir(), "plan")
	code, out, errOut := run(t, "", "bootstrap", "-f", spec, "--dry-run", "--dry-run-dir", dr)
	if code != session.ExitFailed {
		t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{"spec.join.token", tok, "PayloadUnavailable"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "dry run: FAILED in phase inputs-check; a real run would fail there too") || strings.Contains(out, "Succeeded") {
		t.Errorf("stdout:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dr, "var/lib/machineadm/report.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Decode(data)
	if err != nil || rep.Result != report.ResultFailed || rep.FailedPhase != "inputs-check" || rep.ErrorClass != errclass.PayloadUnavailable {
		t.Errorf("report: %+v %v", rep, err)
	}
}

// TestDryRunDirMustBeADryRunsOwn: --dry-run-dir names a new directory, an
// empty one or an earlier dry run's (it holds session.DryRunMarker); a
// directory holding other files is refused with exit 2 and nothing
// written into it, so that a dry run never writes (and its kubeadm-config
// phase never removes) files among someone else's: a user's own pki
// directory, or /etc/kubernetes.
func TestDryRunDirMustBeADryRunsOwn(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "missing-token") // stops in inputs-check
	spec := writeSpec(t, strings.Replace(testspec.MinimalWorker, "/etc/machineadm/secrets/bootstrap-token", tok, 1))
	marker := func(dir string) bool {
		fi, err := os.Stat(filepath.Join(dir, session.DryRunMarker))
		return err == nil && fi.Mode().IsRegular()
	}

	foreign := t.TempDir()
	own := filepath.Join(foreign, "pki", "ca.key")
	if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("the user's own key"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "bootstrap", "-f", spec, "--dry-run", "--dry-run-dir", foreign)
	if code != session.ExitBadInput || !strings.Contains(errOut, "--dry-run-dir: "+foreign+" holds files but no earlier dry run") {
		t.Errorf("a directory with other files: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(foreign); len(entries) != 1 || marker(foreign) {
		t.Errorf("the refused directory was written to: %v", entries)
	}

	for _, tc := range []struct {
		name string
		dir  string
	}{
		{"missing", filepath.Join(t.TempDir(), "plan")},
		{"empty", t.TempDir()},
	} {
		for i := range 2 { // the second run finds its own marker
			code, out, errOut := run(t, "", "bootstrap", "-f", spec, "--dry-run", "--dry-run-dir", tc.dir)
			if code != session.ExitFailed || !strings.Contains(out, "dry run: FAILED in phase inputs-check") {
				t.Errorf("%s directory, run %d: exit %d (want 1, inputs-check)\nstdout %s\nstderr %s", tc.name, i+1, code, out, errOut)
			}
			if !marker(tc.dir) {
				t.Errorf("%s directory, run %d: no %s", tc.name, i+1, session.DryRunMarker)
			}
		}
	}
	// A marker that is not a regular file does not make a directory a dry run's.
	linked := t.TempDir()
	if err := os.Symlink(own, filepath.Join(linked, session.DryRunMarker)); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "", "bootstrap", "-f", spec, "--dry-run", "--dry-run-dir", linked); code != session.ExitBadInput {
		t.Errorf("a symbolic link as the marker: exit %d: %s", code, errOut)
	}
}

// TestSecretAndPKIOutBadInput: an --out given empty (an unset shell
// variable) is refused rather than printing the secret on standard
// output, and pki init --out naming a file is a usage error (exit 2)
// naming the flag, with nothing written.
func TestSecretAndPKIOutBadInput(t *testing.T) {
	for _, args := range [][]string{{"token", "generate", "--out", ""}, {"pki", "certificate-key", "--out="}} {
		code, out, errOut := run(t, "", args...)
		if code != session.ExitBadInput || out != "" || !strings.Contains(errOut, "--out is empty") {
			t.Errorf("%q: exit %d, stdout %q (want nothing), stderr %s", args, code, out, errOut)
		}
	}
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{file: "a regular file", "/dev/null": "a character device"} {
		code, out, errOut := run(t, "", "pki", "init", "--out", path)
		if code != session.ExitBadInput || out != "" || !strings.Contains(errOut, "--out "+path+": not a directory (it is "+kind+")") {
			t.Errorf("pki init --out %s: exit %d, stdout %q, stderr %s", path, code, out, errOut)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Error("pki init changed the file named by --out")
	}
	// A directory with other files in it: exit 2, left as it was.
	inUse := filepath.Dir(file)
	code, out, errOut := run(t, "", "pki", "init", "--out", inUse)
	if entries, _ := os.ReadDir(inUse); code != session.ExitBadInput || out != "" || !strings.Contains(errOut, inUse+" holds other files") || len(entries) != 1 {
		t.Errorf("pki init --out %s (in use): exit %d, stdout %q, %d entries, stderr %s", inUse, code, out, len(entries), errOut)
	}
}

// TestProfileControlPlaneWithoutKeyIsRefused: a control plane under a
// compliance profile with no encryption field and no CA set to take the
// cluster's encryption key from is refused before any phase (exit 2),
// naming the field and `pki encryption-key`, in a dry run as in a real
// one.
func TestProfileControlPlaneWithoutKeyIsRefused(t *testing.T) {
	pkiDir := filepath.Join(t.TempDir(), "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string]string{
		"no pki.dir":        "",
		"CA set without it": "    pki: {dir: " + pkiDir + "}\n",
	} {
		doc := `apiVersion: ` + machineadm.LatestAPIVersion + `
kind: ` + machineadm.Kind + `
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  security: {profile: cis-1.12}
  controlPlane:
    advertiseAddress: 10.0.0.10
` + extra
		dr := filepath.Join(t.TempDir(), "plan")
		code, out, errOut := run(t, "", "bootstrap", "-f", writeSpec(t, doc), "--dry-run", "--dry-run-dir", dr, "--report-root", t.TempDir(), "--work-dir", t.TempDir())
		if code != session.ExitBadInput {
			t.Fatalf("%s: exit %d, want 2\nstdout %s\nstderr %s", name, code, out, errOut)
		}
		for _, want := range []string{"spec.controlPlane.apiServer.encryption", "machineadm pki encryption-key"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", name, want, errOut)
			}
		}
		// prepare runs before the CA set is delivered (an image build):
		// it is not refused for the key.
		code, _, errOut = prepareCLI(t, "prepare", "-f", writeSpec(t, doc), "--root", t.TempDir())
		if code == session.ExitBadInput || strings.Contains(errOut, "apiServer.encryption") {
			t.Errorf("%s: prepare exit %d:\n%s", name, code, errOut)
		}
	}
}

// TestDryRunReportPlansCompliance: a worker's dry run under a profile
// succeeds and its report has a compliance section marked dryRun that
// lists the checks the real run evaluates, each NOT_EVALUATED and counted
// as such, and claims no PASS or FAIL.
func TestDryRunReportPlansCompliance(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if code, _, errOut := run(t, "", "token", "generate", "--out", tok); code != session.ExitOK {
		t.Fatal(errOut)
	}
	doc := strings.Replace(testspec.MinimalWorker, "/etc/machineadm/secrets/bootstrap-token", tok, 1) + "  security: {profile: cis-1.12}\n"
	dr := filepath.Join(t.TempDir(), "plan")
	code, out, errOut := run(t, "", "bootstrap", "-f", writeSpec(t, doc), "--dry-run", "--dry-run-dir", dr)
	if code != session.ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dr, "var/lib/machineadm/report.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Compliance
	if c == nil || !c.DryRun || c.Profile != "cis-1.12" || len(c.Checks) == 0 {
		t.Fatalf("compliance section %+v, want a dry run's planned checks", c)
	}
	if c.Counts.NotEvaluated != len(c.Checks) || c.Counts.Pass+c.Counts.Fail+c.Counts.Warn+c.Counts.NotApplicable != 0 {
		t.Errorf("counts %+v for %d planned checks", c.Counts, len(c.Checks))
	}
	for _, ch := range c.Checks {
		if ch.Verdict != "NOT_EVALUATED" || ch.Scope != "node" {
			t.Errorf("check %s: verdict %s scope %s", ch.ID, ch.Verdict, ch.Scope)
		}
	}
}

// TestConfigValidateWarnsForMissingEncryptionKey: `config validate` of a
// control plane under a profile warns, naming
// spec.controlPlane.apiServer.encryption, when bootstrap would refuse it
// for want of the cluster's key (no pki.dir; a CA set without
// encryption.key), and stops once pki init's CA set is there.
func TestConfigValidateWarnsForMissingEncryptionKey(t *testing.T) {
	pkiDir := filepath.Join(t.TempDir(), "pki")
	doc := func(extra string) string {
		return `apiVersion: ` + machineadm.LatestAPIVersion + `
kind: ` + machineadm.Kind + `
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  security: {profile: cis-1.12}
  controlPlane:
    advertiseAddress: 10.0.0.10
` + extra
	}
	const field = "warning: spec.controlPlane.apiServer.encryption: "
	if code, out, errOut := run(t, "", "config", "validate", "-f", writeSpec(t, doc(""))); code != session.ExitOK || !strings.Contains(out, field+"required under spec.security.profile cis-1.12") {
		t.Errorf("no pki.dir: exit %d\n%s%s", code, out, errOut)
	}
	withDir := writeSpec(t, doc("    pki: {dir: "+pkiDir+"}\n"))
	if code, _, errOut := run(t, "", "pki", "init", "--out", pkiDir); code != session.ExitOK {
		t.Fatal(errOut)
	}
	if code, out, errOut := run(t, "", "config", "validate", "-f", withDir); code != session.ExitOK || strings.Contains(out, "apiServer.encryption") {
		t.Errorf("pki init's CA set: exit %d, want no warning:\n%s%s", code, out, errOut)
	}
	if err := os.Remove(filepath.Join(pkiDir, "encryption.key")); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "", "config", "validate", "-f", withDir); code != session.ExitOK || !strings.Contains(out, field+pkiDir+" holds no encryption.key") || !strings.Contains(out, "machineadm pki encryption-key --out "+pkiDir+"/encryption.key") {
		t.Errorf("CA set without the key: exit %d\n%s", code, out)
	}
}
