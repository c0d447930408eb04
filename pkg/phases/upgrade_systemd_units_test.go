package phases

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/systemd"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// An upgrade derives the Systemd units from documents with placeholder
// secrets (upgradeDocs); a bootstrap from documents with the real ones
// (prepareKubeadm). For the same spec (certificate key, bootstrap tokens,
// pki.dir, audit policy, encryption, kubelet config) the rendered units
// must be byte-equal, or every upgrade would replace and restart every
// unit; the documents may differ in the secrets alone, and the kubelet
// patch is the same file with the same content and mode.
func TestUpgradeUnitsEqualBootstrapUnits(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "control-plane-systemd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), "    apiServer:\n", `    pki:
      dir: /etc/machineadm/pki
    apiServer:
      audit:
        policy:
          rules:
            - level: Metadata
      encryption:
        resources:
          - resources: [secrets]
            providers:
              - aescbc:
                  keys:
                    - name: key1
                      secret: {file: /etc/machineadm/secrets/encryption-key1}
              - identity: {}
`, 1)
	doc = strings.Replace(doc, "      extraArgs:\n        - {name: audit-log-path, value: /var/log/kubernetes/audit/audit.log}\n        - {name: audit-log-maxage, value: \"30\"}\n", "", 1)
	doc = strings.Replace(doc, "        ttl: 2h\n", "        ttl: 2h\n      - token: {file: /etc/machineadm/secrets/bootstrap-token-2}\n", 1)
	l, err := spec.Load([]byte(doc), "spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range []string{"ca.crt", "ca.key"} {
		p := filepath.Join(root, "etc/machineadm/pki", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("ca "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real := translate.Inputs{CertificateKey: strings.Repeat("ab", 32), BootstrapTokens: []string{"abcdef.0123456789abcdef", "ghijkl.0123456789abcdef"}}

	boot := testData(t)
	boot.Config, boot.Root = l.Config, root
	boot.secrets = &real
	st, _, err := prepareKubeadm(boot)
	if err != nil {
		t.Fatal(err)
	}
	bootPatch, err := os.ReadFile(filepath.Join(boot.WorkDir, "patches", translate.KubeletPatchFile))
	if err != nil {
		t.Fatal(err)
	}

	up := testData(t)
	up.Config, up.Root = l.Config, root
	up.Upgrade = &UpgradeRun{Cluster: &fakeCluster{}, Plan: &upgrade.Plan{From: "v1.37.2", To: "v1.37.2"}}
	docs, err := upgradeDocs(up)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(up.WorkDir, "patches", translate.KubeletPatchFile)
	upPatch, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the upgrade's kubelet patch: %v, %v; want 0600", fi, err)
	}
	if !bytes.Equal(bootPatch, upPatch) {
		t.Errorf("kubelet patch: bootstrap %q, upgrade %q", bootPatch, upPatch)
	}

	// The documents differ in the secrets alone (the work directories,
	// which name the patches directory, are made equal too).
	bootYAML := string(st.docs.YAML)
	for _, s := range append([]string{real.CertificateKey}, real.BootstrapTokens...) {
		if strings.Contains(string(docs.YAML), s) {
			t.Errorf("the upgrade's documents carry the secret %q", s)
		}
	}
	bootYAML = strings.ReplaceAll(bootYAML, real.CertificateKey, strings.Repeat("0", 64))
	for _, tok := range real.BootstrapTokens {
		bootYAML = strings.ReplaceAll(bootYAML, tok, "xxxxxx.xxxxxxxxxxxxxxxx")
	}
	bootYAML = strings.ReplaceAll(strings.ReplaceAll(bootYAML, boot.WorkDir, "WORK"), `"`, "")
	// (the placeholder key, all digits, is quoted in YAML)
	if upYAML := strings.ReplaceAll(strings.ReplaceAll(string(docs.YAML), up.WorkDir, "WORK"), `"`, ""); bootYAML != upYAML {
		t.Errorf("the documents differ beyond the secrets:\nbootstrap:\n%s\nupgrade:\n%s", bootYAML, upYAML)
	}

	render := func(d *Data, docs *translate.Documents) map[string]string {
		t.Helper()
		s, err := systemd.NewSystemdControlPlane(d.Config, docs)
		if err != nil {
			t.Fatal(err)
		}
		comps, err := s.ControlPlaneComponents()
		if err != nil {
			t.Fatal(err)
		}
		etcd, err := s.EtcdComponent(nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range append(comps, etcd) {
			fs, err := cpunits.Render(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				out[f.Path] = strings.ReplaceAll(string(f.Content), d.WorkDir, "WORK")
			}
		}
		return out
	}
	b, u := render(boot, st.docs), render(up, docs)
	if len(b) < 4 {
		t.Fatalf("rendered %d files", len(b))
	}
	for p, c := range b {
		if u[p] != c {
			t.Errorf("%s differs:\nbootstrap:\n%s\nupgrade:\n%s", p, c, u[p])
		}
	}
	for p := range u {
		if _, ok := b[p]; !ok {
			t.Errorf("%s only in the upgrade's units", p)
		}
	}
}

// On a joined control plane (HA) the units take from the documents the
// JoinConfiguration's node registration, local endpoint, patches and
// timeouts (the rest is the cluster's kubeadm-config): the upgrade's
// documents, with placeholders for the join token and the certificate
// key, differ from a bootstrap's in those secrets alone.
func TestUpgradeJoinDocumentsEqualBootstrapDocuments(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	l := loadExample(t, "control-plane-join.yaml")
	real := translate.Inputs{JoinToken: "abcdef.0123456789abcdef", CertificateKey: strings.Repeat("ab", 32)}
	boot := testData(t)
	boot.Config, boot.Root = l.Config, t.TempDir()
	boot.secrets = &real
	st, _, err := prepareKubeadm(boot)
	if err != nil {
		t.Fatal(err)
	}
	up := testData(t)
	up.Config, up.Root = l.Config, t.TempDir()
	up.Upgrade = &UpgradeRun{Cluster: &fakeCluster{}, Plan: &upgrade.Plan{From: "v1.37.2", To: "v1.37.2"}}
	docs, err := upgradeDocs(up)
	if err != nil {
		t.Fatal(err)
	}
	b := strings.ReplaceAll(strings.ReplaceAll(string(st.docs.YAML), boot.WorkDir, "WORK"), `"`, "")
	b = strings.ReplaceAll(strings.ReplaceAll(b, real.JoinToken, "xxxxxx.xxxxxxxxxxxxxxxx"), real.CertificateKey, strings.Repeat("0", 64))
	u := strings.ReplaceAll(strings.ReplaceAll(string(docs.YAML), up.WorkDir, "WORK"), `"`, "")
	if strings.Contains(u, real.JoinToken) || strings.Contains(u, real.CertificateKey) {
		t.Errorf("the upgrade's documents carry a secret:\n%s", u)
	}
	if b != u || !strings.Contains(u, "patches:") {
		t.Errorf("the documents differ beyond the secrets:\nbootstrap:\n%s\nupgrade:\n%s", b, u)
	}
}
