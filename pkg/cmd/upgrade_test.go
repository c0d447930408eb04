package cmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
}
