package render

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/spec"
)

// update rewrites golden files: go test ./pkg/render -update
var update = flag.Bool("update", false, "rewrite golden files under testdata/, the contrib files and docs/bootstrap-data-sizes.md")

// Fixed test inputs. The URLs are never contacted: tests that run a stub
// serve it from httptest on 127.0.0.1.
const (
	testAgentURL   = "https://downloads.example.com/machineadm/v0.1.0/linux-amd64/machineadm"
	testPayloadURL = "https://specs.example.com/machines/w1.yaml"
)

// testAgentSHA256 is a made-up agent digest for golden files.
var testAgentSHA256 = sha256Hex([]byte("machineadm test agent"))

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// repoRoot is the module root, two levels above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// loadExample reads and loads docs/examples/NAME.yaml.
func loadExample(t testing.TB, name string) ([]byte, *machineadm.MachineBootstrapConfig) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "examples", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data, loadSpec(t, data)
}

// loadSpec loads a spec document or fails the test.
func loadSpec(t testing.TB, data []byte) *machineadm.MachineBootstrapConfig {
	t.Helper()
	l, err := spec.Load(data, "test")
	if err != nil {
		t.Fatalf("loading spec: %v", err)
	}
	return l.Config
}

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	compareOrUpdate(t, filepath.Join("testdata", name), got)
}

// compareOrUpdate compares got with the file at path, or rewrites the file
// with -update.
func compareOrUpdate(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/render -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the rendered output (run go test ./pkg/render -update after checking the change):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// mustRender renders or fails the test.
func mustRender(t testing.TB, spec []byte, cfg *machineadm.MachineBootstrapConfig, o Options) []byte {
	t.Helper()
	out, err := Render(spec, cfg, o)
	if err != nil {
		t.Fatalf("Render(%s): %v", o.Format, err)
	}
	return out
}
