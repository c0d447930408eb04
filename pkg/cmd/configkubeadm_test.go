package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/session"
)

// TestConfigKubeadmOutputAcceptedByKubeadm feeds the printed documents of
// every example back to kubeadm's own loading and validation.
func TestConfigKubeadmOutputAcceptedByKubeadm(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := run(t, "", "config", "kubeadm", "-f", f)
			if code != session.ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.HasPrefix(out, "# kubeadm configuration derived by machineadm (kubeadm.k8s.io/v1beta4)") {
				t.Errorf("missing header:\n%s", out)
			}
			action := machineadm.ActionJoin
			if strings.Contains(out, "kind: InitConfiguration") {
				action = machineadm.ActionInit
			}
			docs := &translate.Documents{APIVersion: "kubeadm.k8s.io/v1beta4", YAML: []byte(out)}
			if err := translate.Validate(action, docs); err != nil {
				t.Errorf("kubeadm refuses the printed configuration: %v", err)
			}
			// Secrets are placeholders; secret files are never read.
			if strings.Contains(out, "/etc/machineadm/secrets") {
				t.Errorf("printed configuration names a secret file:\n%s", out)
			}
		})
	}
	if code, _, _ := run(t, "", "config", "kubeadm"); code != session.ExitBadInput {
		t.Errorf("without -f: exit %d, want 2", code)
	}
}

// TestPKIInitStdoutIsTheHash: HASH=$(machineadm pki init --out d) gets the
// CA cert hash alone; kubeadm's progress lines go to standard error.
func TestPKIInitStdoutIsTheHash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	code, out, errOut := run(t, "", "pki", "init", "--out", dir)
	if code != session.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}\n$`).MatchString(out) {
		t.Errorf("stdout is not just the hash: %q", out)
	}
	code, hashOut, _ := run(t, "", "pki", "hash", "--dir", dir)
	if code != session.ExitOK || hashOut != out {
		t.Errorf("pki hash = %q (exit %d), pki init printed %q", hashOut, code, out)
	}
}

// A control plane under a profile that configures no encryption gets the
// CA set's key at bootstrap; `config kubeadm` shows the API server flag
// and volume that default brings (it printed neither, so the printed
// configuration was not the one the node ran), and never a key.
func TestConfigKubeadmShowsProfileEncryption(t *testing.T) {
	raw, err := os.ReadFile("../../docs/examples/control-plane-init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := strings.Replace(string(raw), "    # pki:\n    #   dir: /etc/machineadm/pki\n", "    pki:\n      dir: /etc/machineadm/pki\n", 1)
	if base == string(raw) {
		t.Fatal("the example's pki lines changed; update the test")
	}
	profiled := strings.Replace(base, "spec:\n", "spec:\n  security:\n    profile: cis-1.12\n", 1)
	for name, tc := range map[string]struct {
		spec string
		want bool
	}{"no profile": {base, false}, "profile": {profiled, true}} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(t, "", "config", "kubeadm", "-f", writeSpec(t, tc.spec))
			if code != session.ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			has := strings.Contains(out, "name: encryption-provider-config") && strings.Contains(out, machineadm.APIServerConfigDir)
			if has != tc.want {
				t.Errorf("encryption flag and volume shown: %v, want %v\n%s", has, tc.want, out)
			}
			if strings.Contains(out, caSetKeyPlaceholderForTest) {
				t.Errorf("the key's placeholder reached kubeadm's documents:\n%s", out)
			}
		})
	}
}

// caSetKeyPlaceholderForTest is configcmd's placeholder for the key.
const caSetKeyPlaceholderForTest = "withheld"
