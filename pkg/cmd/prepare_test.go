package cmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/session"
)

// prepareCLI runs `machineadm ARGS` and returns the exit code and output.
func prepareCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writePrepareSpec(t *testing.T, host string) string {
	t.Helper()
	doc := `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.example.internal:6443
    token: {file: /etc/machineadm/token}
    caCertHashes: ["sha256:` + strings.Repeat("ab", 32) + `"]
  host:
` + host
	p := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// reportPaths are what a failed run may leave under the root: the outcome
// report describing the failure, and its directories.
var reportPaths = []string{"/var", "/var/lib", "/var/lib/machineadm", "/var/lib/machineadm/report.json"}

// listFiles returns every path under root except the outcome report.
func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		rel := strings.TrimPrefix(p, root)
		if err == nil && p != root && !slices.Contains(reportPaths, rel) {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// requireFailedReport checks the outcome report under root: Failed, with
// the error class want.
func requireFailedReport(t *testing.T, root string, want errclass.Class) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "var/lib/machineadm/report.json"))
	if err != nil {
		t.Fatalf("no outcome report: %v", err)
	}
	rep, err := report.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result != report.ResultFailed || rep.ErrorClass != want || rep.Command != "prepare" {
		t.Errorf("report: result %s class %s command %s; want Failed %s prepare", rep.Result, rep.ErrorClass, rep.Command, want)
	}
}

func TestPrepareInvalidSpecExit2NothingWritten(t *testing.T) {
	cases := map[string]struct{ host, field string }{
		"relative path": {"    files: [{path: etc/x, content: x}]\n", "spec.host.files[0].path"},
		"dot-dot":       {"    files: [{path: /etc/../../x, content: x}]\n", "spec.host.files[0].path"},
		"mode 07777":    {"    files: [{path: /etc/x, content: x, mode: \"07777\"}]\n", "spec.host.files[0].mode"},
		"content and source": {"    files: [{path: /etc/x, content: x, source: {url: \"file:///x\", sha256: " +
			strings.Repeat("0", 64) + "}}]\n", "spec.host.files[0].source"},
		"bad sysctl value": {"    sysctl: {net.ipv4.ip_forward: \"1\\n2\"}\n", "spec.host.sysctl[net.ipv4.ip_forward]"},
		"bad runc option":  {"    containerd: {runtimes: [{name: runc, options: {SystemdCGroup: true}}]}\n", "spec.host.containerd.runtimes[0].options[SystemdCGroup]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			code, _, errOut := prepareCLI(t, "prepare", "-f", writePrepareSpec(t, tc.host), "--root", root)
			if code != session.ExitBadInput {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, errOut)
			}
			if !strings.Contains(errOut, tc.field) {
				t.Errorf("stderr does not name %s:\n%s", tc.field, errOut)
			}
			if got := listFiles(t, root); len(got) > 0 {
				t.Errorf("files written: %v", got)
			}
			requireFailedReport(t, root, errclass.InvalidSpec)
		})
	}
}

func TestPrepareUsageErrors(t *testing.T) {
	spec := writePrepareSpec(t, "    kernelModules: [overlay]\n")
	root := t.TempDir()
	for _, args := range [][]string{
		{"prepare", "-f", spec, "--root", root, "--skip-phases", "sysctl,nope"},
		{"prepare", "-f", spec, "--root", filepath.Join(root, "missing")},
		{"prepare", "--root", root},
	} {
		if code, _, errOut := prepareCLI(t, args...); code != session.ExitBadInput {
			t.Errorf("%q: exit %d, want 2; %s", args, code, errOut)
		}
	}
	if got := listFiles(t, root); len(got) > 0 {
		t.Errorf("files written: %v", got)
	}
}

const preparedHost = `    sysctl: {net.ipv4.ip_forward: "1"}
    kernelModules: [overlay]
    files:
    - {path: /etc/motd, content: "welcome # to {{ node }}\n"}
    containerd:
      configVersion: 2
      sandboxImage: registry.k8s.io/pause:3.10
      registries: [{host: docker.io, mirrors: [{url: "https://mirror.example.com"}]}]
`

func TestPrepareDryRunThenApplyThenUnchanged(t *testing.T) {
	root := t.TempDir()
	spec := writePrepareSpec(t, preparedHost)

	code, out, errOut := prepareCLI(t, "prepare", "-f", spec, "--root", root, "--dry-run")
	if code != session.ExitOK {
		t.Fatalf("dry run exit %d:\n%s", code, errOut)
	}
	for _, s := range []string{"+++ b/etc/motd", "+welcome # to {{ node }}", "+++ b/etc/containerd/config.toml", "[prepare] containerd: would change", "phases would change"} {
		if !strings.Contains(out, s) {
			t.Errorf("dry-run output lacks %q:\n%s", s, out)
		}
	}
	if got := listFiles(t, root); len(got) > 0 {
		t.Fatalf("dry run wrote %v", got)
	}

	code, out, errOut = prepareCLI(t, "prepare", "-f", spec, "--root", root)
	if code != session.ExitOK {
		t.Fatalf("prepare exit %d:\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/motd")); err != nil || string(b) != "welcome # to {{ node }}\n" {
		t.Errorf("motd %q %v", b, err)
	}
	for _, p := range []string{"etc/sysctl.d/90-machineadm.conf", "etc/modules-load.d/machineadm.conf", "etc/containerd/config.toml", "etc/containerd/certs.d/docker.io/hosts.toml"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if !strings.Contains(errOut, "offline root") && !strings.Contains(out, "offline root") {
		t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}

	code, out, errOut = prepareCLI(t, "prepare", "-f", spec, "--root", root)
	if code != session.ExitOK {
		t.Fatalf("second prepare exit %d:\n%s", code, errOut)
	}
	for _, name := range []string{"files", "kernel-modules", "sysctl", "containerd", "static-pods"} {
		if !strings.Contains(out, "[prepare] "+name+": unchanged\n") {
			t.Errorf("second run: %s not unchanged:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "done: 0 of 5 phases changed") {
		t.Errorf("second run summary:\n%s", out)
	}
	// prepare never tells Cluster API that the node bootstrapped.
	if _, err := os.Stat(filepath.Join(root, "run/cluster-api/bootstrap-success.complete")); err == nil {
		t.Error("prepare wrote the Cluster API success sentinel")
	}
}

// TestPrepareDryRunRedacts: a dry run's diff of a world-readable file
// never shows a bootstrap token or the value after --token.
func TestPrepareDryRunRedacts(t *testing.T) {
	const token = "qwerty.0123456789qwerty"
	host := "    files:\n    - {path: /etc/join.sh, content: \"kubeadm join --token " + token + "\\n\"}\n"
	code, out, errOut := prepareCLI(t, "prepare", "-f", writePrepareSpec(t, host), "--root", t.TempDir(), "--dry-run")
	if code != session.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out+errOut, token) || strings.Contains(out+errOut, "0123456789qwerty") {
		t.Errorf("dry-run output shows the token:\n%s", out)
	}
	if !strings.Contains(out, "+++ b/etc/join.sh") {
		t.Errorf("dry-run output lacks the file's diff:\n%s", out)
	}
}

func TestPrepareSkipPhases(t *testing.T) {
	root := t.TempDir()
	code, out, errOut := prepareCLI(t, "prepare", "-f", writePrepareSpec(t, preparedHost), "--root", root, "--skip-phases", "containerd,sysctl")
	if code != session.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "[prepare] containerd: skipped (--skip-phases)") {
		t.Errorf("output:\n%s", out)
	}
	for _, p := range []string{"etc/containerd", "etc/sysctl.d"} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s written by a skipped phase", p)
		}
	}
}

func TestPrepareDigestMismatchExit1NothingWritten(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "payload"), []byte("the real payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("another payload"))
	host := `    sysctl: {net.ipv4.ip_forward: "1"}
    files:
    - {path: /etc/first, content: "written first if nothing checked"}
    - {path: /etc/second, source: {url: "file:///payload", sha256: ` + hex.EncodeToString(sum[:]) + `}}
`
	code, _, errOut := prepareCLI(t, "prepare", "-f", writePrepareSpec(t, host), "--root", root)
	if code != session.ExitFailed {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	for _, s := range []string{"spec.host.files[1].source.sha256", "VerificationFailed", "hint:"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
	// The run started, so it kept its log beside the report, and its run
	// lock (empty once released); nothing else.
	if got := listFiles(t, root); !slices.Equal(got, []string{"/payload", "/var/lib/machineadm/" + session.LockFileName, "/var/lib/machineadm/" + session.LogFileName}) {
		t.Errorf("files written besides the payload, the run's lock and its log: %v", got)
	}
	requireFailedReport(t, root, errclass.VerificationFailed)
}

// `prepare --identity` opens a sealed spec before any phase and writes the
// sealed file's content; without an identity that opens it, prepare exits
// 2 and leaves the file as a good run left it (never empty, never
// truncated).
func TestPrepareSealedSpec(t *testing.T) {
	dir, id, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	const secret = "password=hunter2hunter2\n"
	specFile := filepath.Join(dir, "w.yaml")
	doc := testspec.MinimalWorker + "  node: {name: w1}\n  host:\n    files:\n      - path: /etc/app/secret.conf\n        mode: \"0600\"\n        content: \"password=hunter2hunter2\\n\"\n"
	if err := os.WriteFile(specFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	sealed := filepath.Join(dir, "w.sealed.yaml")
	if code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "-o", sealed); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	idLine, err := os.ReadFile(id)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/machineadm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/machineadm/my-identity"), idLine, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := prepareCLI(t, "prepare", "-f", sealed, "--root", root, "--identity", "/etc/machineadm/my-identity")
	if code != session.ExitOK {
		t.Fatalf("prepare --identity: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/app/secret.conf")); err != nil || string(b) != secret {
		t.Errorf("secret.conf = %q, %v", b, err)
	}
	// The default identity (/etc/machineadm/identity under --root) is not
	// there: refused, the file from the good run untouched.
	code, out, errOut = prepareCLI(t, "prepare", "-f", sealed, "--root", root)
	if code != session.ExitBadInput || !strings.Contains(errOut, "sealed") || !strings.Contains(errOut, "--identity") {
		t.Errorf("prepare without identity: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/app/secret.conf")); err != nil || string(b) != secret {
		t.Errorf("secret.conf after the refused run = %q, %v", b, err)
	}
	requireFailedReport(t, root, errclass.VerificationFailed)
}
