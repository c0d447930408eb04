package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"

	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/spec"
)

// run executes machineadm with args and standard input in; it returns the
// exit code, standard output and standard error.
func run(t *testing.T, in string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(args, strings.NewReader(in), &out, &errOut)
	return code, out.String(), errOut.String()
}

func exampleFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../../docs/examples/*.yaml")
	if err != nil || len(paths) < 3 {
		t.Fatalf("docs/examples: %d specs, %v", len(paths), err)
	}
	return paths
}

func writeSpec(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// cliWorker is the shared minimal worker spec.
const cliWorker = testspec.MinimalWorker

func TestConfigValidateExamples(t *testing.T) {
	for _, p := range exampleFiles(t) {
		code, out, errOut := run(t, "", "config", "validate", "-f", p)
		if code != session.ExitOK || !strings.Contains(out, "valid machineadm.io/v1alpha1 MachineBootstrapConfig") {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", p, code, out, errOut)
		}
	}
}

func TestConfigValidateInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		paths     []string
	}{
		{"unknown field", cliWorker + "  colour: blue\n", []string{"spec.colour: "}},
		{"bad value", strings.Replace(cliWorker, "cp.demo.example:6443", "cp.demo.example", 1), []string{"spec.join.apiServerEndpoint: "}},
		{"three problems", strings.NewReplacer("v1.37.2", "1.37.2", "role: Worker", "role: Worker\n  action: Create", "/etc/machineadm/secrets/bootstrap-token", "token").Replace(cliWorker),
			[]string{"spec.kubernetes.version: ", "spec.action: ", "spec.join.token.file: "}},
		{"mistyped", cliWorker + "  report: {console: \"yes\"}\n", []string{"spec.report.console: "}},
		{"wrong kind", strings.Replace(cliWorker, "MachineBootstrapConfig", "InitConfiguration", 1), []string{"kind: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", "config", "validate", "-f", writeSpec(t, tc.doc))
			if code != session.ExitBadInput {
				t.Errorf("exit %d, want %d", code, session.ExitBadInput)
			}
			if strings.Contains(out, "valid") {
				t.Errorf("stdout claims valid: %s", out)
			}
			for _, p := range tc.paths {
				if !strings.Contains(errOut, "\n  "+p) {
					t.Errorf("stderr lacks %q:\n%s", p, errOut)
				}
			}
		})
	}
}

func TestConfigValidateStdin(t *testing.T) {
	code, out, errOut := run(t, cliWorker, "config", "validate", "-f", "-")
	if code != session.ExitOK || !strings.Contains(out, "-: valid") {
		t.Errorf("valid spec on stdin: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = run(t, cliWorker+"  colour: blue\n", "config", "validate", "-f", "-")
	if code != session.ExitBadInput || !strings.Contains(errOut, "spec.colour") {
		t.Errorf("invalid spec on stdin: exit %d\n%s", code, errOut)
	}
	code, _, errOut = run(t, "", "config", "validate", "-f", "-")
	if code != session.ExitBadInput || !strings.Contains(errOut, "empty") {
		t.Errorf("empty stdin: exit %d\n%s", code, errOut)
	}
}

// TestConfigValidateWarnsWithoutLeaking: an inline token is a warning (exit
// 0) and its value is printed nowhere.
func TestConfigValidateWarnsWithoutLeaking(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	doc := strings.Replace(cliWorker, "{file: /etc/machineadm/secrets/bootstrap-token}", "{value: "+token+"}", 1)
	code, out, errOut := run(t, "", "config", "validate", "-f", writeSpec(t, doc))
	if code != session.ExitOK || !strings.Contains(out, "warning: spec.join.token.value: ") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
	if strings.Contains(out+errOut, token) || strings.Contains(out+errOut, "0123456789abcdef") {
		t.Errorf("the token leaked:\n%s%s", out, errOut)
	}
}

func TestConfigDefaultsValidateForEveryRoleAndAction(t *testing.T) {
	for _, tc := range []struct{ role, action string }{{"ControlPlane", "Init"}, {"ControlPlane", "Join"}, {"Worker", "Join"}} {
		t.Run(tc.role+"/"+tc.action, func(t *testing.T) {
			code, out, errOut := run(t, "", "config", "defaults", "--role", tc.role, "--action", tc.action)
			if code != session.ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			// The output is itself a valid spec, with no warnings but those
			// for its placeholder secret files, which do not exist here.
			code, vout, verr := run(t, out, "config", "validate", "-f", "-")
			var other []string
			for _, l := range strings.Split(vout, "\n") {
				if strings.HasPrefix(l, "warning: ") && !strings.Contains(l, "does not exist on this machine") {
					other = append(other, l)
				}
			}
			if code != session.ExitOK || len(other) > 0 {
				t.Fatalf("config defaults output does not validate cleanly: exit %d\n%s%s\n--- spec:\n%s", code, vout, verr, out)
			}
			if !strings.Contains(vout, "role "+tc.role+", action "+tc.action) {
				t.Errorf("validated as something else: %s", vout)
			}
			l, err := spec.Load([]byte(out), "defaults")
			if err != nil {
				t.Fatal(err)
			}
			// Every default is already in the output: migrating it (no
			// defaults added) and loading again gives the same spec.
			code, mout, merr := run(t, out, "config", "migrate", "-f", "-")
			if code != session.ExitOK {
				t.Fatalf("migrate: exit %d %s", code, merr)
			}
			raw, _, err := spec.DecodeNoDefaults([]byte(mout), "migrated")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(raw, l.Config) {
				t.Errorf("config defaults leaves defaults out:\n without defaults %+v\n with defaults    %+v", raw.Spec, l.Config.Spec)
			}
			for _, want := range []string{"clusterName: kubernetes", "criSocket: unix:///run/containerd/containerd.sock", "path: /var/lib/machineadm/report.json"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			// containerd's block is opt-in: without it the OS config stays.
			if strings.Contains(out, "containerd:") {
				t.Errorf("spec.host.containerd shown without --containerd:\n%s", out)
			}
			_, cout, _ := run(t, "", "config", "defaults", "--role", tc.role, "--action", tc.action, "--containerd")
			if !strings.Contains(cout, "cgroupDriver: systemd") {
				t.Errorf("--containerd output lacks cgroupDriver: systemd:\n%s", cout)
			}
			if (tc.role == "ControlPlane") != strings.Contains(out, "bindPort: 6443") {
				t.Errorf("bindPort shown for %s: %v", tc.role, strings.Contains(out, "bindPort: 6443"))
			}
		})
	}
}

// TestConfigDefaultsActionFollowsRole: without --action a Worker joins and
// a control plane initialises.
func TestConfigDefaultsActionFollowsRole(t *testing.T) {
	for role, action := range map[string]string{"Worker": "Join", "ControlPlane": "Init"} {
		code, out, errOut := run(t, "", "config", "defaults", "--role", role)
		if code != session.ExitOK || !strings.Contains(out, "action: "+action) {
			t.Errorf("--role %s: exit %d, want action %s:\n%s%s", role, code, action, out, errOut)
		}
	}
}

func TestConfigDefaultsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"config", "defaults", "--role", "Master"},
		{"config", "defaults", "--action", "Create"},
		{"config", "defaults", "--role", "Worker", "--action", "Init"},
		{"config", "defaults", "extra"},
	} {
		if code, _, errOut := run(t, "", args...); code != session.ExitBadInput || !strings.Contains(errOut, "Error: ") {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, session.ExitBadInput, errOut)
		}
	}
}

func TestConfigMigrate(t *testing.T) {
	for _, p := range exampleFiles(t) {
		code, out, errOut := run(t, "", "config", "migrate", "-f", p)
		if code != session.ExitOK {
			t.Fatalf("%s: exit %d %s", p, code, errOut)
		}
		if !strings.HasPrefix(out, "apiVersion: machineadm.io/v1alpha1\n") {
			t.Errorf("%s: output does not start with the newest apiVersion:\n%s", p, out)
		}
		if strings.Contains(out, "clusterName: kubernetes") || strings.Contains(out, "criSocket") {
			t.Errorf("%s: migrate added defaults:\n%s", p, out)
		}
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := spec.Load(orig, p)
		b, errB := spec.Load([]byte(out), "migrated")
		if errA != nil || errB != nil || !reflect.DeepEqual(a.Config, b.Config) {
			t.Errorf("%s: the migrated spec means something else (%v, %v)", p, errA, errB)
		}
	}
	code, _, errOut := run(t, cliWorker+"  colour: blue\n", "config", "migrate", "-f", "-")
	if code != session.ExitBadInput || !strings.Contains(errOut, "spec.colour") {
		t.Errorf("migrate of an unknown field: exit %d\n%s", code, errOut)
	}
	code, _, errOut = run(t, strings.Replace(cliWorker, "machineadm.io/v1alpha1", "machineadm.io/v0", 1), "config", "migrate", "-f", "-")
	if code != session.ExitBadInput || !strings.Contains(errOut, "apiVersion") {
		t.Errorf("migrate of an unknown apiVersion: exit %d\n%s", code, errOut)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, args := range [][]string{
		{"config", "validate"},
		{"config", "validate", "-f", missing},
		{"config", "validate", "-f", "-", "extra"},
		{"config", "validate", "--nope"},
		{"config", "migrate"},
		{"no-such-command"},
		{"version", "--output", "yaml"},
		{"version", "extra"},
		{"--log-level", "loud", "version"},
	} {
		code, out, errOut := run(t, "", args...)
		if code != session.ExitBadInput {
			t.Errorf("%v: exit %d, want %d\nstdout %s\nstderr %s", args, code, session.ExitBadInput, out, errOut)
		}
		if !strings.Contains(errOut, "Error: ") {
			t.Errorf("%v: no error message on stderr: %q", args, errOut)
		}
	}
}

// TestCommandLineTextIsNeverShownRaw: paths and names from the command
// line reach a person escaped — in errors (Execute), in the success lines
// of config validate, token generate, pki certificate-key and pki init,
// and in the header of config defaults — so that an escape sequence, a C1
// control or a bidirectional override in a file name never acts on the
// terminal, and a line feed in one never starts a line of its own (in
// config defaults, a line of the YAML it prints).
func TestCommandLineTextIsNeverShownRaw(t *testing.T) {
	const evil = "\x1b]0;pwned\a\x1b[2J\u009b31m\u202e\nkind: Evil"
	dir := filepath.Join(t.TempDir(), evil)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte(cliWorker), 0o600); err != nil {
		t.Fatal(err)
	}
	// Errors keep their line breaks (a spec's errors are one a line); a
	// success line is one line.
	raw := func(s string, ok bool) bool {
		return strings.ContainsAny(s, "\x1b\a\u009b\u202e") || ok && strings.Contains(s, "\nkind: Evil")
	}
	for _, args := range [][]string{
		{"config", "validate", "-f", spec},
		{"config", "validate", "-f", spec + ".missing"},
		{"config", "defaults", "-f", spec},
		{"render", "-f", spec + ".missing", "--format", "shell"},
		{"token", "generate", "--out", filepath.Join(dir, "token")},
		{"token", "generate", "--out", filepath.Join(dir, "token")}, // exists: an error naming it
		{"pki", "certificate-key", "--out", filepath.Join(dir, "key")},
		{"pki", "init", "--out", filepath.Join(dir, "pki")},
		{"pki", "hash", dir},
		{"report", spec + ".missing"},
		{"bootstrap", "phase", "-f", spec + ".missing"},
		{evil},
	} {
		code, out, errOut := run(t, "", args...)
		if raw(out, code == session.ExitOK) || raw(errOut, code == session.ExitOK) {
			t.Errorf("%q: exit %d, raw control characters\nstdout %q\nstderr %q", args, code, out, errOut)
		}
		if !strings.Contains(out+errOut, `\x1b]0;pwned`) || !strings.Contains(out+errOut, `\u009b31m\u202e`) {
			t.Errorf("%q: the name is not shown escaped\nstdout %q\nstderr %q", args, out, errOut)
		}
	}
}

// TestConfigValidateWarnsAboutReadableSecrets: config validate warns,
// naming the field and the file, about a secret file and a CA private key
// that group or others can read, as inputs-check does on the machine; an
// owner-only one draws nothing.
func TestConfigValidateWarnsAboutReadableSecrets(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(testspec.MinimalWorker, "/etc/machineadm/secrets/bootstrap-token", tok, 1)
	code, out, errOut := run(t, doc, "config", "validate", "-f", "-")
	if code != session.ExitOK || strings.Contains(out, "group or others") {
		t.Fatalf("owner-only token: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Chmod(tok, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, doc, "config", "validate", "-f", "-")
	if want := "warning: spec.join.token.file: " + tok + " is mode 0644: group or others can read this secret"; code != session.ExitOK || !strings.Contains(out, want) {
		t.Errorf("exit %d, stdout lacks %q:\n%s%s", code, want, out, errOut)
	}
	if strings.Contains(out, "0123456789abcdef") {
		t.Errorf("the warning shows the token:\n%s", out)
	}
}
