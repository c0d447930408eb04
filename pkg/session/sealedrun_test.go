//go:build unix

package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
)

// sealedSecretFile is the owner-only file of sealedRunSpec, whose content
// the envelope carries.
const (
	sealedSecretPath    = "/etc/app/secret.conf"
	sealedSecretContent = "password=hunter2hunter2\n"
)

// sealedRunSpec writes a worker spec with one owner-only file, sealed for
// node "w1" to a new hpke identity, and returns the sealed file's path and
// the identity line.
func sealedRunSpec(t *testing.T) (string, string) {
	t.Helper()
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "etc/machineadm/secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "etc/machineadm/secrets/bootstrap-token"), []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := testspec.MinimalWorker + "  node: {name: w1}\n  host:\n    files:\n      - path: " + sealedSecretPath + "\n        mode: \"0600\"\n        content: " + jsonString(sealedSecretContent) + "\n"
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealspec.SealSpec([]byte(doc), sealspec.SealOptions{Recipients: []string{id.Recipient()}, Root: src})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(s.File), "hunter2") {
		t.Fatalf("the sealed file holds the secret in the clear:\n%s", s.File)
	}
	p := filepath.Join(t.TempDir(), "sealed.yaml")
	if err := os.WriteFile(p, s.File, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, id.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeIdentity puts the identity line at root/etc/machineadm/identity
// (0600) and returns that machine path.
func writeIdentity(t *testing.T, root, line string) string {
	t.Helper()
	p := filepath.Join(root, "etc/machineadm/identity")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "/etc/machineadm/identity"
}

// Every command that writes the host opens a sealed spec before any phase
// (prepare, one bootstrap phase, a dry run) and writes the sealed file's
// content; without an identity that opens it the run is refused with exit
// code 2 and nothing written — never an empty file and Succeeded, and
// never a truncated secret after a good run.
func TestSealedSpecOpenedByEveryCommand(t *testing.T) {
	sealedPath, idLine := sealedRunSpec(t)
	otherID, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	type cmd struct {
		name string
		opts func(root string) Options
	}
	cmds := []cmd{
		{"prepare", func(root string) Options {
			return Options{Command: Prepare, SpecFile: sealedPath, Root: root}
		}},
		{"bootstrap phase files", func(root string) Options {
			return Options{Command: Bootstrap, SpecFile: sealedPath, Root: root, ReportRoot: root, WorkDir: filepath.Join(root, "work"), Only: "files"}
		}},
		{"prepare --skip-phases host-check", func(root string) Options {
			return Options{Command: Prepare, SpecFile: sealedPath, Root: root, Skip: []string{"host-check"}}
		}},
	}
	// A bootstrap that resumes after an inputs-check completed by an
	// earlier run (the journal says so) runs files without inputs-check;
	// everything after the host group is skipped here.
	data, err := os.ReadFile(sealedPath)
	if err != nil {
		t.Fatal(err)
	}
	l, err := LoadBytes(slog.New(slog.DiscardHandler), data, sealedPath)
	if err != nil {
		t.Fatal(err)
	}
	var skip []string
	for _, p := range Workflow(Bootstrap, l.Config).Phases {
		if p.Name != "inputs-check" && p.Name != "host-check" && p.Name != "files" {
			skip = append(skip, p.Name)
		}
	}
	sum := sha256.Sum256(data)
	cmds = append(cmds, cmd{"bootstrap resumed after inputs-check", func(root string) Options {
		work := filepath.Join(root, "work")
		if err := os.MkdirAll(work, 0o700); err != nil {
			t.Fatal(err)
		}
		journal := `{"specDigest":"sha256:` + hex.EncodeToString(sum[:]) + `"}` + "\n" + `{"completed":"inputs-check"}` + "\n"
		if err := os.WriteFile(filepath.Join(work, "state.jsonl"), []byte(journal), 0o600); err != nil {
			t.Fatal(err)
		}
		return Options{Command: Bootstrap, SpecFile: sealedPath, Root: root, ReportRoot: root, WorkDir: work, Skip: skip}
	}})
	secret := func(root string) ([]byte, error) { return os.ReadFile(filepath.Join(root, sealedSecretPath)) }
	for _, c := range cmds {
		t.Run(c.name+"/with identity", func(t *testing.T) {
			root := t.TempDir()
			o := c.opts(root)
			o.IdentityFile = writeIdentity(t, root, idLine)
			out, err := runSession(o)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if b, err := secret(root); err != nil || string(b) != sealedSecretContent {
				t.Errorf("%s = %q, %v; want the sealed content", sealedSecretPath, b, err)
			}
			if strings.Contains(out, "hunter2") {
				t.Errorf("the console shows the secret:\n%s", out)
			}
		})
		for name, plant := range map[string]func(t *testing.T, root string) string{
			"without identity": func(t *testing.T, root string) string { return "" },
			"another identity": func(t *testing.T, root string) string { return writeIdentity(t, root, otherID.String()) },
		} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				root := t.TempDir()
				id := plant(t, root)
				// After a good run the secret is on the host: a run that
				// cannot open the envelope must leave it as it is.
				good := filepath.Join(root, sealedSecretPath)
				if err := os.MkdirAll(filepath.Dir(good), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(good, []byte(sealedSecretContent), 0o600); err != nil {
					t.Fatal(err)
				}
				o := c.opts(root)
				o.IdentityFile = id
				out, err := runSession(o)
				var se *SealedError
				if ExitCode(err) != ExitBadInput || !errors.As(err, &se) || !strings.Contains(err.Error(), "--identity") {
					t.Fatalf("exit %d, err %v; want exit 2 naming --identity\n%s", ExitCode(err), err, out)
				}
				if b, err := secret(root); err != nil || string(b) != sealedSecretContent {
					t.Errorf("%s after the refused run = %q, %v; want it untouched", sealedSecretPath, b, err)
				}
				rep, rerr := os.ReadFile(filepath.Join(root, "var/lib/machineadm/report.json"))
				if rerr != nil || !strings.Contains(string(rep), `"errorClass": "VerificationFailed"`) && !strings.Contains(string(rep), `"errorClass":"VerificationFailed"`) {
					t.Errorf("report: %v\n%s", rerr, rep)
				}
			})
		}
	}
	// A dry run opens it too, and plans the file's real size.
	t.Run("prepare --dry-run", func(t *testing.T) {
		root := t.TempDir()
		id := writeIdentity(t, root, idLine)
		out, err := runSession(Options{Command: Prepare, SpecFile: sealedPath, Root: root, IdentityFile: id, DryRun: true, DryRunDir: filepath.Join(t.TempDir(), "dr")})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if want := "24 bytes"; !strings.Contains(out, want) || strings.Contains(out, "hunter2") {
			t.Errorf("dry run plan lacks %q or shows the secret:\n%s", want, out)
		}
		if _, err := secret(root); err == nil {
			t.Error("a dry run wrote the file")
		}
		_, err = runSession(Options{Command: Prepare, SpecFile: sealedPath, Root: t.TempDir(), DryRun: true, DryRunDir: filepath.Join(t.TempDir(), "dr")})
		if ExitCode(err) != ExitBadInput {
			t.Errorf("dry run without identity: exit %d, %v; want 2", ExitCode(err), err)
		}
	})
}
