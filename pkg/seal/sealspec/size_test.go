package sealspec

import (
	"testing"

	"github.com/machineadm/machineadm/pkg/seal"
)

// Size budgets of issue 10 for the whole rendered user data; the sealed
// spec is the part that grows with the secrets. The stub around it (agent
// download, write_files, runcmd) comes with the render integration.
const (
	controlPlaneInitBudget = 4096
	workerJoinBudget       = 1500
)

// TestSealedSpecSizes seals the control-plane-init example with the CA set
// of `machineadm pki init` (ECDSA P-256), the bootstrap token and the
// certificate key, and the worker example with its token, each to one hpke
// P-384 recipient, and checks that the sealed spec alone fits the budgets.
func TestSealedSpecSizes(t *testing.T) {
	id, _ := identity(t, seal.HPKESuiteP384)
	pq, _ := identity(t, seal.HPKESuiteMLKEM768P256)
	cases := []struct {
		name, example string
		pki           bool
		budget        int
	}{
		{"control-plane-init", "control-plane-init.yaml", true, controlPlaneInitBudget},
		{"worker-join", "worker.yaml", false, workerJoinBudget},
	}
	for _, c := range cases {
		root := machineRoot(t, c.pki)
		plain := example(t, c.example)
		for _, r := range []struct {
			name string
			rcpt string
		}{{"hpke-p384", id.Recipient()}, {"hpke-mlkem768-p256", pq.Recipient()}} {
			s, err := SealSpec(plain, SealOptions{Recipients: []string{r.rcpt}, Root: root})
			if err != nil {
				t.Fatal(err)
			}
			sz := MeasureSize(s.File)
			t.Logf("%s, %s: clear spec %d B; sealed file %d B raw, %d B gzip+base64 (budget for all user data %d B)",
				c.name, r.name, len(plain), sz.Raw, sz.GzipBase64, c.budget)
			if r.name == "hpke-p384" && sz.Smallest() > c.budget {
				t.Errorf("%s: sealed spec of %d B is over the %d B budget", c.name, sz.Smallest(), c.budget)
			}
		}
	}
}
