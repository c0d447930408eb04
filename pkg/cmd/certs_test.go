package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCertsCheckExpirationBadInput: what a user mistypes on the command
// line is a usage error naming the flag (exit code 2): an --output kubeadm
// has no printer for, a --config, --kubeconfig or --cert-dir that does not
// exist (a missing --cert-dir printed every certificate as missing, exit
// 0), a --cert-dir that is a file, a --config that is the machine spec
// rather than kubeadm's configuration, of an old version, or with a
// document kubeadm's loader refuses (kubeadm failed, exit 1).
func TestCertsCheckExpirationBadInput(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if err := os.Mkdir(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	machineSpec := file("spec.yaml", "apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec: {role: Worker}\n")
	joinOnly := file("join.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n")
	oldVersion := file("v1beta3.yaml", "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\n")
	mixed := file("mixed.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\n")
	// Split as kubeadm's loader splits them, which refuses (exit 1) a
	// document without kind or a group-qualified apiVersion, a comment
	// alone between separators, a kind given twice.
	noAPIVersion := file("noapi.yaml", "kind: JoinConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
	commentDoc := file("comment.yaml", "# the cluster's\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
	twice := file("twice.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
	jsonRun := file("run.json", `{"apiVersion":"kubeadm.k8s.io/v1beta4","kind":"ClusterConfiguration"}`+"\n"+`{"apiVersion":"kubeadm.k8s.io/v1beta4","kind":"InitConfiguration"}`)
	experimental := file("v1.yaml", "apiVersion: kubeadm.k8s.io/v1\nkind: ClusterConfiguration\n")
	unknown := file("v9.yaml", "apiVersion: kubeadm.k8s.io/V1beta4\nkind: ClusterConfiguration\n")
	// The YAML layer quotes a map key or tagged value it cannot take: the
	// error leaves its message out (the file may hold credentials).
	nullKey := file("null-key.yaml", "users:\n- name: u\n  user:\n    ~: SECRET-null-key\n")
	tagged := file("tagged.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncertificatesDir: !!int SECRET-tagged\n")
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"output xml", []string{"-o", "xml"}, []string{"--output", "text, json, yaml"}},
		{"config missing", []string{"--config", missing}, []string{"--config", "does not exist"}},
		{"kubeconfig missing", []string{"--kubeconfig", missing}, []string{"--kubeconfig", "does not exist"}},
		{"cert-dir missing", []string{"--cert-dir", missing}, []string{"--cert-dir", "does not exist"}},
		{"cert-dir a file", []string{"--cert-dir", machineSpec}, []string{"--cert-dir", "not a directory"}},
		{"config a machine spec", []string{"--config", machineSpec}, []string{"--config", "machineadm spec", "kubeadm-init.yaml", "on a control plane", "a worker"}},
		{"config a join configuration", []string{"--config", joinOnly}, []string{"--config", "JoinConfiguration", "leave --config out", "on a control plane", "admin.conf", "a worker"}},
		{"config of an old version", []string{"--config", oldVersion}, []string{"--config", "kubeadm.k8s.io/v1beta3", "reads kubeadm.k8s.io/v1beta4", "kubeadm config migrate"}},
		{"config with one old document", []string{"--config", mixed}, []string{"--config", "its ClusterConfiguration is kubeadm.k8s.io/v1beta3"}},
		{"config with a document without apiVersion", []string{"--config", noAPIVersion}, []string{"--config " + noAPIVersion, "kind and apiVersion is mandatory"}},
		{"config with a comment-only document", []string{"--config", commentDoc}, []string{"--config " + commentDoc, "kind and apiVersion is mandatory"}},
		{"config with JSON objects without ---", []string{"--config", jsonRun}, []string{"--config " + jsonRun, "not one JSON object"}},
		{"config of the experimental version", []string{"--config", experimental}, []string{"--config", "kubeadm.k8s.io/v1 is experimental", "write it as kubeadm.k8s.io/v1beta4"}},
		{"config of an unknown version", []string{"--config", unknown}, []string{"--config", "kubeadm.k8s.io/V1beta4 is no version kubeadm has", "write it as kubeadm.k8s.io/v1beta4"}},
		{"config with a null map key", []string{"--config", nullKey}, []string{"--config " + nullKey, "a map key or a tagged value"}},
		{"config with a tagged value", []string{"--config", tagged}, []string{"--config " + tagged, "a map key or a tagged value"}},
		{"config with a kind twice", []string{"--config", twice}, []string{"--config " + twice, "specified twice"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"certs", "check-expiration", "--cert-dir", pki}, c.args...)
			code, out, errOut := run(t, "", args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(out+errOut, "SECRET") {
				t.Errorf("the file's content reached the output:\n%s\n%s", out, errOut)
			}
		})
	}
	// A kubeadm configuration with a ClusterConfiguration passes the check
	// (kubeadm then prints its table).
	cfg := file("kubeadm.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
	if code, out, errOut := run(t, "", "certs", "check-expiration", "--cert-dir", pki, "--config", cfg, "-o", "json"); code != 0 || !strings.Contains(out, "certificates") {
		t.Fatalf("a kubeadm configuration: exit %d\n%s\n%s", code, out, errOut)
	}
}
