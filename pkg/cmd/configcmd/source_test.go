package configcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/spec"
)

// A sealed file whose SealedSecrets document is malformed is an invalid
// spec (exit code 2) for every command that reads a spec — config validate
// as well as bootstrap, before any phase — naming the envelope's field.
func TestSplitSealedRefusesMalformedEnvelope(t *testing.T) {
	worker, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "examples", "worker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	envelope := `apiVersion: machineadm.io/v1alpha1
kind: SealedSecrets
clusterName: demo
machineName: w1
algorithm: AES-256-GCM
bogus: 1
recipients:
  - type: hpke
    keyID: 139ff9042139c19d
    wrappedKey: "not base64!"
items:
  spec.join.token: AAAA
`
	data := string(worker) + "\n---\n" + envelope
	_, _, err = session.SplitSealed([]byte(data), "w1.sealed.yaml")
	if !spec.IsInvalidSpec(err) || session.ExitCode(err) != session.ExitBadInput {
		t.Fatalf("SplitSealed(malformed envelope) = %v, want an invalid spec (exit 2)", err)
	}
	for _, want := range []string{"bogus", "SealedSecrets.recipients[0].wrappedKey"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
	if _, err := Validate(strings.NewReader(data), "-"); !spec.IsInvalidSpec(err) {
		t.Errorf("Validate(malformed envelope) = %v, want an invalid spec", err)
	}
}
