package upgrade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestReadRecordRefusesAMalformedRecord: a record whose key is not the
// 32-byte hex key or whose spec is not a spec object is refused when read
// (the upgrade's exit code 2, "cannot be used"); such records were
// accepted, and then a key that is not hex failed the run (exit 1) and a
// null spec was reported as a refused change of the field "" in the new
// spec file.
func TestReadRecordRefusesAMalformedRecord(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Kubernetes: machineadm.Kubernetes{Version: "v1.37.2"}}}
	key, _ := NewKey()
	r, err := NewRecord(cfg, "sha256:x", "bootstrap", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := r.Write(work); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(work); err != nil {
		t.Fatalf("a good record: %v", err)
	}
	good, _ := os.ReadFile(filepath.Join(work, RecordFile))
	for name, edit := range map[string]func(string) string{
		"key not hex":   func(s string) string { return strings.Replace(s, `"key": "`, `"key": "zz`, 1) },
		"key too short": func(s string) string { return strings.Replace(s, `"key": "`+key+`"`, `"key": "abcd"`, 1) },
		"spec null":     func(s string) string { return s[:strings.Index(s, `"spec": {`)] + `"spec": null}` },
		"spec a string": func(s string) string { return s[:strings.Index(s, `"spec": {`)] + `"spec": "x"}` },
		"spec no member": func(s string) string {
			return s[:strings.Index(s, `"spec": {`)] + `"spec": {"kind": "MachineBootstrapConfig"}}`
		},
	} {
		if err := os.WriteFile(filepath.Join(work, RecordFile), []byte(edit(string(good))), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRecord(work); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
