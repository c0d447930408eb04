//go:build !windows

package host

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/spec"
)

const (
	testEncKey          = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyEhISE=" // 32 bytes
	testAuthzKubeConfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://authz.example:8443"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: very-secret-webhook-token}}]
`
)

// securedHostSpec is a control-plane spec with every typed API-server
// security setting, of runtime rt; its aescbc key is the file
// /etc/machineadm/secrets/k1 and a spec.host.files entry is owned by
// owner.
func securedHostSpec(t *testing.T, rt, owner string) *machineadm.MachineBootstrapConfig {
	t.Helper()
	doc := `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  controlPlane:
    runtime: ` + rt + `
    apiServer:
      audit:
        policy: {rules: [{level: Metadata}]}
      encryption:
        resources:
          - resources: [secrets]
            providers:
              - kms: {name: fake-kms, endpoint: "unix:///var/run/kms/plugin.sock"}
              - aescbc: {keys: [{name: k1, secret: {file: /etc/machineadm/secrets/k1}}]}
      authentication:
        anonymous: {enabled: true, conditions: [{path: /livez}]}
      authorization:
        authorizers:
          - type: Node
          - type: RBAC
          - type: Webhook
            name: opa
            webhook:
              timeout: 3s
              subjectAccessReviewVersion: v1
              matchConditionSubjectAccessReviewVersion: v1
              failurePolicy: NoOpinion
              kubeConfig:
                value: |
` + indent(testAuthzKubeConfig, 18) + `
  host:
    files:
      - {path: /etc/kubernetes/extra/owned.conf, content: "x=1\n", mode: "0600", owner: ` + owner + `, group: ` + owner + `}
`
	l, err := spec.Load([]byte(doc), "test")
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return l.Config
}

func writeKey(t *testing.T, root, content string) {
	t.Helper()
	p := filepath.Join(root, "etc/machineadm/secrets/k1")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func stat(t *testing.T, p string) (os.FileMode, uint32, uint32) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fi.Mode().Perm(), st.Uid, st.Gid
}

// TestAPIServerConfigStaticPods: with static pods every file of the
// typed settings is written root 0600 under /etc/kubernetes/apiserver,
// with the key from its file, and a dry run shows neither key nor token.
func TestAPIServerConfigStaticPods(t *testing.T) {
	h := newTestHost(t)
	writeKey(t, h.root, testEncKey)
	cfg := securedHostSpec(t, "StaticPods", "root")

	var dry bytes.Buffer
	denv := h.env(&dry)
	denv.DryRun = true
	runAll(t, cfg, denv)
	for _, secret := range []string{testEncKey, "very-secret-webhook-token"} {
		if strings.Contains(dry.String(), secret) {
			t.Errorf("dry run shows a secret:\n%s", dry.String())
		}
	}
	if !strings.Contains(dry.String(), apiserverconfig.EncryptionConfigFile) {
		t.Errorf("dry run does not name %s:\n%s", apiserverconfig.EncryptionConfigFile, dry.String())
	}
	if _, err := os.Stat(filepath.Join(h.root, apiserverconfig.EncryptionConfigFile)); !os.IsNotExist(err) {
		t.Fatalf("dry run wrote: %v", err)
	}

	runAll(t, cfg, h.env(nil))
	for _, p := range []string{apiserverconfig.AuditPolicyFile, apiserverconfig.EncryptionConfigFile,
		apiserverconfig.AuthenticationConfigFile, apiserverconfig.AuthorizationConfigFile,
		apiserverconfig.AuthorizationWebhookKubeConfigFile("opa")} {
		mode, uid, gid := stat(t, filepath.Join(h.root, p))
		if mode != 0o600 || uid != 0 || gid != 0 {
			t.Errorf("%s: %04o %d:%d, want 0600 0:0", p, mode, uid, gid)
		}
	}
	enc, _ := os.ReadFile(filepath.Join(h.root, apiserverconfig.EncryptionConfigFile))
	for _, want := range []string{"secret: " + testEncKey, "endpoint: unix:///var/run/kms/plugin.sock", "apiVersion: v2", "kind: EncryptionConfiguration"} {
		if !strings.Contains(string(enc), want) {
			t.Errorf("encryption config lacks %q:\n%s", want, enc)
		}
	}
	authz, _ := os.ReadFile(filepath.Join(h.root, apiserverconfig.AuthorizationConfigFile))
	if !strings.Contains(string(authz), "kubeConfigFile: "+apiserverconfig.AuthorizationWebhookKubeConfigFile("opa")) {
		t.Errorf("authorization config does not point at the kubeconfig:\n%s", authz)
	}
	// A second run changes nothing.
	for _, r := range runAll(t, cfg, h.env(nil)) {
		if r.Changed {
			t.Errorf("second run changed: %v", r.Changes)
		}
	}
}

// TestAPIServerConfigBadKeyHostUntouched: a key file of the wrong shape
// fails host-check, naming the field and never the key, before any step
// writes anything.
func TestAPIServerConfigBadKeyHostUntouched(t *testing.T) {
	h := newTestHost(t)
	const bad = "dG9vIHNob3J0IGEga2V5"
	writeKey(t, h.root, bad)
	cfg := securedHostSpec(t, "StaticPods", "root")
	before := snapshot(t, h.root)
	err := Check(context.Background(), h.env(nil), Steps(cfg))
	if err == nil || !strings.Contains(err.Error(), "spec.controlPlane.apiServer.encryption.resources[0].providers[1].aescbc.keys[0].secret") {
		t.Fatalf("check: %v, want the key's field", err)
	}
	if strings.Contains(err.Error(), bad) {
		t.Errorf("error quotes the key: %v", err)
	}
	if after := snapshot(t, h.root); len(after) != len(before) {
		t.Errorf("host changed by a failed check")
	}
}

// TestAccountOwnedFilesWithSystemd is the regression test of files owned
// by a control-plane account of the Systemd runtime: host-check used to
// refuse them ("unknown user kubeadm-kas") because every file was checked
// and written before the kubeadm phase created the accounts. The accounts
// step now runs first, and host-check resolves such an owner when the
// file is written: a spec.host.files entry and the API server's
// webhook kubeconfig (named inside its authorization configuration) end
// up owned by kubeadm-kas; the files its flags name stay root's.
func TestAccountOwnedFilesWithSystemd(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs systemd-sysusers and root")
	}
	h := newTestHost(t)
	writeKey(t, h.root, testEncKey)
	cfg := securedHostSpec(t, "Systemd", "kubeadm-kas")
	runAll(t, cfg, h.env(nil))
	ids, err := files.LoadIDs(h.root)
	if err != nil {
		t.Fatal(err)
	}
	kas, err := ids.UID("kubeadm-kas")
	if err != nil {
		t.Fatalf("the accounts step did not create kubeadm-kas: %v", err)
	}
	for _, p := range []string{"/etc/kubernetes/extra/owned.conf", apiserverconfig.AuthorizationWebhookKubeConfigFile("opa")} {
		mode, uid, gid := stat(t, filepath.Join(h.root, p))
		if mode != 0o600 || int(uid) != kas || int(gid) == 0 {
			t.Errorf("%s: %04o %d:%d, want 0600 owned by kubeadm-kas (%d)", p, mode, uid, gid, kas)
		}
	}
	// The files the API server's flags name reach its unit as systemd
	// credentials: they stay root's, as with static pods.
	for _, p := range []string{apiserverconfig.EncryptionConfigFile, apiserverconfig.AuditPolicyFile, apiserverconfig.AuthorizationConfigFile} {
		mode, uid, gid := stat(t, filepath.Join(h.root, p))
		if mode != 0o600 || uid != 0 || gid != 0 {
			t.Errorf("%s: %04o %d:%d, want 0600 root:root (a credential of the unit)", p, mode, uid, gid)
		}
	}
}

// TestUnknownOwnerStillRefused: an owner that no step creates is still
// refused in host-check, with its field.
func TestUnknownOwnerStillRefused(t *testing.T) {
	h := newTestHost(t)
	writeKey(t, h.root, testEncKey)
	for _, rt := range []string{"StaticPods", "Systemd"} {
		cfg := securedHostSpec(t, rt, "nobody-here")
		err := Check(context.Background(), h.env(nil), Steps(cfg))
		if err == nil || !strings.Contains(err.Error(), "spec.host.files[0].owner") || !strings.Contains(err.Error(), "unknown user") {
			t.Errorf("%s: check = %v, want spec.host.files[0].owner unknown user", rt, err)
		}
	}
	// kubeadm-kas is an account only the Systemd runtime creates.
	cfg := securedHostSpec(t, "StaticPods", "kubeadm-kas")
	if err := Check(context.Background(), h.env(nil), Steps(cfg)); err == nil || !strings.Contains(err.Error(), "unknown user") {
		t.Errorf("static pods, owner kubeadm-kas: check = %v, want unknown user", err)
	}
}
