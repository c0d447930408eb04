package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBootstrapDryRunSecured plans the secured example (audit, KMS v2 and
// aescbc encryption, structured authentication): the plan names the API
// server's configuration files, kubeadm's API server manifest carries the
// flags and mounts their directories (read-only, the KMS socket's too),
// and the encryption key appears nowhere: not on the console, in the log,
// the report or any file of the dry-run directory.
func TestBootstrapDryRunSecured(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	specPath := withInputs(t, "control-plane-secured", "")
	const key = "bWFjaGluZWFkbS1kcnktcnVuLWtleS0wMDAwMDAwMDA=" // 32 bytes
	keyFile := filepath.Join(filepath.Dir(specPath), "secrets", "encryption-key1")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dr := filepath.Join(t.TempDir(), "dr")
	out, code := machineadm(t, "bootstrap", "-f", specPath, "--dry-run", "--dry-run-dir", dr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"[bootstrap] apiserver-config: would change",
		"would write /etc/kubernetes/apiserver/encryption-config.yaml",
		"would write /etc/kubernetes/apiserver/audit-policy.yaml",
		"would write /etc/kubernetes/apiserver/authentication-config.yaml",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	manifest, err := os.ReadFile(filepath.Join(dr, "kubeadm", "kube-apiserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--encryption-provider-config=/etc/kubernetes/apiserver/encryption-config.yaml",
		"--audit-policy-file=/etc/kubernetes/apiserver/audit-policy.yaml",
		"--authentication-config=/etc/kubernetes/apiserver/authentication-config.yaml",
		"name: machineadm-apiserver-config", "path: /etc/kubernetes/apiserver",
		"name: machineadm-kms-0", "path: /var/run/kmsplugin",
		"name: machineadm-audit-log", "path: /var/log/kubernetes/audit",
	} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("kube-apiserver.yaml lacks %q:\n%s", want, manifest)
		}
	}
	if strings.Contains(out, key) {
		t.Errorf("the console shows the encryption key")
	}
	filepath.Walk(dr, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
			t.Errorf("%s holds the encryption key", p)
		}
		return nil
	})
}

// TestSecuredSpecRefusedWithExit2: bad typed security settings are bad
// input: exit 2, every problem with its field path, nothing planned.
func TestSecuredSpecRefusedWithExit2(t *testing.T) {
	specPath := withInputs(t, "control-plane-secured", "")
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "      audit:\n", "      extraArgs:\n        - {name: encryption-provider-config, value: /etc/kubernetes/pki/enc.yaml}\n      audit:\n", 1)
	doc = strings.Replace(doc, "- level: RequestResponse", "- level: Everything", 1)
	doc = strings.Replace(doc, "endpoint: unix:///var/run/kmsplugin/socket.sock", "endpoint: tcp://10.0.0.1:9000", 1)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"config", "validate", "-f", bad}, {"bootstrap", "-f", bad, "--dry-run", "--dry-run-dir", filepath.Join(t.TempDir(), "dr")}} {
		out, code := machineadm(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2:\n%s", args, code, out)
		}
		for _, want := range []string{
			"spec.controlPlane.apiServer.extraArgs[0].name",
			"spec.controlPlane.apiServer.audit.policy.rules[1].level",
			"spec.controlPlane.apiServer.encryption.resources[0].providers[0].kms.endpoint",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %s:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "would write") {
			t.Errorf("%v: a refused spec planned writes:\n%s", args, out)
		}
	}
}
