package cpunits_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/cpunits/cpunitstest"
)

// systemd itself accepts a unit (systemd-analyze verify), and its exposure
// level (systemd-analyze security) stays below 2.0, systemd's "OK". The
// units derived from kubeadm's pod specs are checked the same way in
// pkg/kubeadm.
func TestUnitVerifiesAndScores(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	c := cpunits.Component{
		Name: "etcd", Description: "etcd", User: "etcd", Group: "etcd",
		Command:        []string{"/usr/local/bin/etcd", "--data-dir=/var/lib/etcd", "--name=a b", "--key-file=/etc/kubernetes/pki/etcd/server.key"},
		ReadWritePaths: []string{"/tmp"}, NoNetlink: true,
		// LoadCredential= and the %d specifier pass systemd's own check.
		Credentials:     []cpunits.Credential{{ID: "key-file", Path: "/etc/kubernetes/pki/etcd/server.key"}},
		CredentialStamp: "0123abcd",
	}
	if score := cpunitstest.VerifyForTest(t, c); score > 2.0 {
		t.Errorf("exposure %.1f above 2.0", score)
	}
}

// A unit systemd refuses is reported by Verify.
func TestVerifyReportsBrokenUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	c := cpunits.Component{Name: "broken", Description: "x", User: "daemon", Group: "daemon",
		Command: []string{dir + "/missing-binary"}}
	fs, err := cpunits.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	unit := dir + "/broken.service"
	if err := writeFile(unit, fs[0].Content); err != nil {
		t.Fatal(err)
	}
	if err := cpunits.Verify(t.Context(), unit, cpunits.ExecIn(dir)); err == nil {
		t.Error("a unit whose binary is missing verified")
	}
}

func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }
