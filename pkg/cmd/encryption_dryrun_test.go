package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/session"
)

// TestProfileDryRunKeepsTheKeyHidden: a control plane's dry run under a
// profile with pki init's CA set plans encryption at rest (its content
// hidden), and the CA set's key appears on neither output stream, in no
// file of the dry run's directory that group or others may read, and not
// in the report.
func TestProfileDryRunKeepsTheKeyHidden(t *testing.T) {
	pkiDir := filepath.Join(t.TempDir(), "pki")
	if code, _, errOut := run(t, "", "pki", "init", "--out", pkiDir); code != session.ExitOK {
		t.Fatal(errOut)
	}
	raw, err := os.ReadFile(filepath.Join(pkiDir, "encryption.key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(raw))
	doc := `apiVersion: ` + machineadm.LatestAPIVersion + `
kind: ` + machineadm.Kind + `
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  security: {profile: cis-1.12}
  controlPlane:
    advertiseAddress: 10.0.0.10
    pki: {dir: ` + pkiDir + `}
`
	dr := filepath.Join(t.TempDir(), "plan")
	code, out, errOut := run(t, "", "bootstrap", "-f", writeSpec(t, doc), "--dry-run", "--dry-run-dir", dr, "--work-dir", t.TempDir())
	if code != session.ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if strings.Contains(out, key) || strings.Contains(errOut, key) {
		t.Fatalf("the key is on the output:\n%s\n%s", out, errOut)
	}
	err = filepath.WalkDir(dr, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), key) {
			return nil
		}
		fi, _ := e.Info()
		if fi.Mode().Perm()&0o077 != 0 || strings.HasSuffix(p, "report.json") {
			t.Errorf("%s (mode %v) holds the key", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out+errOut, "encryption-config.yaml: content hidden (secret)") {
		t.Errorf("the dry run planned no encryption configuration:\n%s", out)
	}
}
