package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// TestConfigKubeadmOutputAcceptedByKubeadm feeds the printed documents of
// every example back to kubeadm's own loading and validation.
func TestConfigKubeadmOutputAcceptedByKubeadm(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := run(t, "", "config", "kubeadm", "-f", f)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.HasPrefix(out, "# kubeadm configuration derived by machineadm (kubeadm.k8s.io/v1beta4)") {
				t.Errorf("missing header:\n%s", out)
			}
			action := machineadm.ActionJoin
			if strings.Contains(out, "kind: InitConfiguration") {
				action = machineadm.ActionInit
			}
			docs := &kubeadm.Documents{APIVersion: "kubeadm.k8s.io/v1beta4", YAML: []byte(out)}
			if err := kubeadm.Validate(action, docs); err != nil {
				t.Errorf("kubeadm refuses the printed configuration: %v", err)
			}
			// Secrets are placeholders; secret files are never read.
			if strings.Contains(out, "/etc/machineadm/secrets") {
				t.Errorf("printed configuration names a secret file:\n%s", out)
			}
		})
	}
	if code, _, _ := run(t, "", "config", "kubeadm"); code != ExitBadInput {
		t.Errorf("without -f: exit %d, want 2", code)
	}
}
