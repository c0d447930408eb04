//go:build unix

package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/report"
)

// TestForeignOSSpecRefused: bootstrap and prepare of a spec.os windows
// spec on this (Unix) machine are refused before any phase with exit code
// 2 naming spec.os; the only write is the report, at this machine's
// default path (not at the spec's C:/ path), and no secret file is read.
func TestForeignOSSpecRefused(t *testing.T) {
	const winSpec = `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  os: windows
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.example.com:6443
    token: {file: 'C:\ProgramData\machineadm\secrets\token'}
    caCertHashes: ['sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10']
  host:
    files:
      - {path: 'C:\marker.txt', content: x}
`
	specFile := filepath.Join(t.TempDir(), "win.yaml")
	if err := os.WriteFile(specFile, []byte(winSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []Command{Bootstrap, Prepare} {
		t.Run(string(cmd), func(t *testing.T) {
			root := t.TempDir()
			work := filepath.Join(root, "var/lib/machineadm")
			out, err := runSession(Options{Command: cmd, SpecFile: specFile, Root: root, ReportRoot: root, WorkDir: work})
			if ExitCode(err) != ExitBadInput || err == nil || !strings.Contains(err.Error(), "spec.os") {
				t.Fatalf("exit %d (%v), want 2 naming spec.os\n%s", ExitCode(err), err, out)
			}
			var written []string
			filepath.WalkDir(root, func(p string, d os.DirEntry, _ error) error {
				if d != nil && !d.IsDir() {
					rel, _ := filepath.Rel(root, p)
					written = append(written, rel)
				}
				return nil
			})
			for _, w := range written {
				if strings.Contains(w, "C:") || strings.Contains(w, "marker") {
					t.Errorf("wrote %s", w)
				}
			}
			data, err := os.ReadFile(filepath.Join(root, report.DefaultPath))
			if err != nil {
				t.Fatalf("no report at the default path (%v); files: %v", err, written)
			}
			if rep, err := report.Decode(data); err != nil || rep.Result != report.ResultFailed || !strings.Contains(rep.Error, "spec.os") {
				t.Errorf("report: %+v %v", rep, err)
			}
		})
	}
}
