package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withInputs copies the example spec named example (docs/examples) into a
// temporary directory with its secret files made the way the README's
// quick start makes them — `machineadm token generate --out` and
// `machineadm pki certificate-key --out` — and its /etc/machineadm/secrets
// paths pointed at them; with pkiDir set, spec.controlPlane.pki.dir is set
// to it. A dry run needs these: it reads the same inputs as a real run.
func withInputs(t *testing.T, example, pkiDir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", example+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	doc := string(raw)
	for file, args := range map[string][]string{
		"bootstrap-token": {"token", "generate"},
		"certificate-key": {"pki", "certificate-key"},
	} {
		if !strings.Contains(doc, "/etc/machineadm/secrets/"+file) {
			continue
		}
		if out, code := machineadm(t, append(args, "--out", filepath.Join(secrets, file))...); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, code, out)
		}
	}
	doc = strings.ReplaceAll(doc, "/etc/machineadm/secrets/", secrets+"/")
	if pkiDir != "" {
		with := strings.Replace(doc, "    # pki:\n    #   dir: /etc/machineadm/pki\n", "    pki:\n      dir: "+pkiDir+"\n", 1)
		if with == doc {
			t.Fatalf("%s has no commented pki.dir to set", example)
		}
		doc = with
	}
	path := filepath.Join(dir, example+".yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
