package sealspec

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	kubeadmpki "github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/spec"
)

const (
	token   = "abcdef.0123456789abcdef"
	certKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// machineRoot writes the secret files the examples reference, and with
// pki the CA set of `machineadm pki init` (ECDSA P-256), below a
// temporary root.
func machineRoot(t testing.TB, pki bool) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "etc/machineadm/secrets")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "bootstrap-token"), []byte(token+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "certificate-key"), []byte(certKey+"\n"), 0o600)
	if pki {
		if _, err := kubeadmpki.InitPKI(filepath.Join(root, "etc/machineadm/pki"), "ECDSA-P256", func(string) {}); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func example(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../../docs/examples", name))
	if err != nil {
		t.Fatal(err)
	}
	if name == "control-plane-init.yaml" {
		b = bytes.Replace(b, []byte("# pki:\n    #   dir: /etc/machineadm/pki"), []byte("pki:\n      dir: /etc/machineadm/pki"), 1)
		if !bytes.Contains(b, []byte("\n    pki:\n      dir: /etc/machineadm/pki")) {
			t.Fatal("the example's pki comment changed")
		}
	}
	return b
}

func identity(t testing.TB, suite string) (*seal.HPKEIdentity, string) {
	t.Helper()
	id, err := seal.GenerateHPKEIdentity(suite)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "identity")
	if err := seal.WriteIdentityFile(path, id.String(), id.Recipient()); err != nil {
		t.Fatal(err)
	}
	return id, path
}

// secretForms are the forms in which a secret must not appear in a sealed
// file: raw, base64 and gzip+base64.
func secretForms(s string) []string {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(s))
	w.Close()
	return []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString(gz.Bytes())}
}

func TestSealControlPlaneInitRoundTrip(t *testing.T) {
	root := machineRoot(t, true)
	id, idFile := identity(t, seal.HPKESuiteP384)
	sealed, err := SealSpec(example(t, "control-plane-init.yaml"), SealOptions{Recipients: []string{id.Recipient()}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.controlPlane.bootstrapTokens[0].token", "spec.controlPlane.certificateKey",
		"spec.controlPlane.pki.dir",
	}
	if strings.Join(sealed.Items, " ") != strings.Join(want, " ") {
		t.Errorf("items %v", sealed.Items)
	}
	if d, _ := seal.SpecDigest(sealed.File[:bytes.Index(sealed.File, []byte("\n---\n"))+1]); sealed.Binding != (seal.Binding{ClusterName: "demo", MachineName: "cp1", SpecDigest: d}) {
		t.Errorf("binding %+v", sealed.Binding)
	}
	// no secret in the file, in any form
	secrets := []string{token, certKey}
	for _, name := range []string{"ca.key", "front-proxy-ca.key", "etcd/ca.key", "sa.key"} {
		b, _ := os.ReadFile(filepath.Join(root, "etc/machineadm/pki", name))
		secrets = append(secrets, string(b))
	}
	for _, s := range secrets {
		for _, f := range secretForms(s) {
			if bytes.Contains(sealed.File, []byte(f)) {
				t.Fatalf("the sealed file holds a secret")
			}
		}
	}
	if bytes.Contains(sealed.File, []byte("PRIVATE KEY")) {
		t.Fatal("the sealed file holds a PEM private key")
	}
	// the clear part validates and keeps the comments
	clearSpec, env, err := seal.Split(sealed.File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(clearSpec, []byte("# The shared CA set")) {
		t.Error("comments were lost")
	}
	loaded, err := spec.Load(clearSpec, "sealed")
	if err != nil {
		t.Fatal(err)
	}
	// on the machine: a root file system without the secret files
	cfg := loaded.Config
	u, err := Unseal(cfg, env, UnsealOptions{IdentityFile: idFile, NodeName: "cp1", ClearSpec: clearSpec})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Spec.ControlPlane.CertificateKey.Value != certKey || cfg.Spec.ControlPlane.CertificateKey.File != "" ||
		cfg.Spec.ControlPlane.BootstrapTokens[0].Token.Value != token {
		t.Errorf("secrets not applied: %+v", cfg.Spec.ControlPlane)
	}
	for _, name := range PKIFiles {
		b, _ := os.ReadFile(filepath.Join(root, "etc/machineadm/pki", name))
		if !bytes.Equal(u.PKIFiles[name], b) {
			t.Errorf("PKI file %s differs", name)
		}
	}
	if u.By.Type != "hpke" || u.By.KeyID != id.KeyID() {
		t.Errorf("opened by %+v", u.By)
	}
	// another machine name: VerificationFailed
	loaded, _ = spec.Load(clearSpec, "sealed")
	_, err = Unseal(loaded.Config, env, UnsealOptions{IdentityFile: idFile, NodeName: "cp2", ClearSpec: clearSpec})
	if c, _ := errclass.Of(err); c != errclass.VerificationFailed {
		t.Errorf("other machine: %v", err)
	}
	// what unseal --check reports: every sealed item, and another
	// identity does not open the envelope
	if len(u.Items) != len(want) {
		t.Errorf("unsealed items %v, want %d", u.Items, len(want))
	}
	_, otherFile := identity(t, seal.HPKESuiteP384)
	loaded, _ = spec.Load(clearSpec, "sealed")
	if _, err := Unseal(loaded.Config, env, UnsealOptions{IdentityFile: otherFile, NodeName: "cp1", ClearSpec: clearSpec}); !seal.IsOpenError(err) {
		t.Errorf("unseal with another identity: %v", err)
	}
}

func TestSealInlineRegistryAndFiles(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(k)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	certPEM := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("kubeconfig-secret"))
	w.Close()
	in := `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {value: ` + token + `}
    caCertHashes: ["sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"]
  host:
    files:
      - {path: /etc/public, content: hello}
      - {path: /etc/secret.gz, mode: "0600", encoding: gzip+base64, content: ` + base64.StdEncoding.EncodeToString(gz.Bytes()) + `}
    containerd:
      registries:
        - host: registry.example.com
          clientCert: |
` + indent(certPEM, "            ") + `          clientKey: |
` + indent(keyPEM, "            ")
	if _, err := spec.Load([]byte(in), "in"); err != nil {
		t.Fatal(err)
	}
	id, idFile := identity(t, seal.HPKESuiteP384)
	sealed, err := SealSpec([]byte(in), SealOptions{Recipients: []string{id.Recipient()}, MachineName: seal.AnyMachine})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(secretForms(token), "EC PRIVATE KEY", "kubeconfig-secret", base64.StdEncoding.EncodeToString(gz.Bytes())) {
		if bytes.Contains(sealed.File, []byte(s)) {
			t.Fatalf("sealed file holds %q", s)
		}
	}
	clearSpec, env, _ := seal.Split(sealed.File)
	if !bytes.Contains(clearSpec, []byte("file: "+SealedFileDir+"/spec.join.token")) || !bytes.Contains(clearSpec, []byte("content: hello")) {
		t.Errorf("clear spec:\n%s", clearSpec)
	}
	loaded, err := spec.Load(clearSpec, "sealed")
	if err != nil {
		t.Fatal(err)
	}
	cfg := loaded.Config
	if _, err := Unseal(cfg, env, UnsealOptions{IdentityFile: idFile, NodeName: "w9", ClearSpec: clearSpec}); err != nil {
		t.Fatal(err)
	}
	r := cfg.Spec.Host.Containerd.Registries[0]
	f := cfg.Spec.Host.Files[1]
	if cfg.Spec.Join.Token.Value != token || r.ClientKey != keyPEM || r.ClientCert != certPEM || f.Content != "kubeconfig-secret" || f.Encoding != "" {
		t.Errorf("not applied: token %v, registry %v, file %q/%q", cfg.Spec.Join.Token.Value == token, r.ClientKey == keyPEM, f.Content, f.Encoding)
	}
}

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(pre + l)
		}
	}
	return b.String()
}

func TestSealRefusals(t *testing.T) {
	id, _ := identity(t, seal.HPKESuiteP384)
	r := []string{id.Recipient()}
	root := machineRoot(t, false)
	noName := []byte(strings.Replace(string(example(t, "worker.yaml")), "name: w1", "name: ''", 1))
	if _, err := SealSpec(noName, SealOptions{Recipients: r, Root: root}); err == nil || !strings.Contains(err.Error(), "--machine-name") {
		t.Errorf("no node name: %v", err)
	}
	if _, err := SealSpec(example(t, "worker.yaml"), SealOptions{Recipients: r, Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "spec.join.token.file") {
		t.Errorf("missing token file: %v", err)
	}
	if _, err := SealSpec([]byte("kind: nonsense\n"), SealOptions{Recipients: r}); !spec.IsInvalidSpec(err) {
		t.Errorf("invalid spec: %v", err)
	}
	ok, err := SealSpec(example(t, "worker.yaml"), SealOptions{Recipients: r, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SealSpec(ok.File, SealOptions{Recipients: r, Root: root}); err == nil {
		t.Error("sealed a sealed spec")
	}
}

func TestIdentityFileModes(t *testing.T) {
	id, path := identity(t, seal.HPKESuiteP384)
	_ = id
	for _, mode := range []os.FileMode{0o640, 0o644, 0o400, 0o700} {
		os.Chmod(path, mode)
		_, err := seal.LoadIdentityFile(path)
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !strings.Contains(err.Error(), "0600") {
			t.Errorf("mode %o: %v", mode, err)
		}
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(path, link)
	if _, err := seal.LoadIdentityFile(link); err == nil {
		t.Error("followed a symbolic link")
	}
	if _, err := seal.LoadIdentityFile(path); err != nil {
		t.Error(err)
	}
	if err := seal.WriteIdentityFile(path, "x", "y"); err == nil {
		t.Error("replaced an identity")
	}
}

// TestUnsealRefusesEditedClearSpec: an edit that takes an item's place
// away is named as such before the envelope is opened (any other edit
// fails to open, TestUnsealTamperedClearSpec). A secret file whose mode
// was widened to 0644, or a spec that lost the mirror an item names, is
// refused with InvalidSpec and the spec is left as it was.
func TestUnsealRefusesEditedClearSpec(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(k)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	certPEM := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	in := `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  node: {name: w2}
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"]
  host:
    files:
      - {path: /etc/secret, mode: "0600", content: kubeconfig-secret}
    containerd:
      registries:
        - host: registry.example.com
          mirrors:
            - url: https://mirror.example.com
              clientCert: |
` + indent(certPEM, "                ") + `              clientKey: |
` + indent(keyPEM, "                ")
	id, idFile := identity(t, seal.HPKESuiteP384)
	sealed, err := SealSpec([]byte(in), SealOptions{Recipients: []string{id.Recipient()}, Root: machineRoot(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	want := "spec.host.containerd.registries[0].mirrors[0].clientCert spec.host.containerd.registries[0].mirrors[0].clientKey spec.host.files[0].content spec.join.token"
	if got := strings.Join(sealed.Items, " "); got != want {
		t.Errorf("items %s", got)
	}
	clearSpec, env, _ := seal.Split(sealed.File)
	if bytes.Contains(clearSpec, []byte("clientCert")) || bytes.Contains(clearSpec, []byte("kubeconfig-secret")) {
		t.Errorf("clear spec keeps a sealed field:\n%s", clearSpec)
	}
	// the mirror's pair comes back
	loaded, err := spec.Load(clearSpec, "sealed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Unseal(loaded.Config, env, UnsealOptions{IdentityFile: idFile, NodeName: "w2", ClearSpec: clearSpec}); err != nil {
		t.Fatal(err)
	}
	if m := loaded.Config.Spec.Host.Containerd.Registries[0].Mirrors[0]; m.ClientKey != keyPEM || m.ClientCert != certPEM {
		t.Errorf("mirror pair not applied")
	}
	for _, c := range []struct{ name, from, to, msg string }{
		{"widened mode", `mode: "0600"`, `mode: "0644"`, "owner-only"},
		{"mirror removed", "          mirrors:\n            - url: https://mirror.example.com\n", "", "have no place"},
	} {
		edited := strings.Replace(string(clearSpec), c.from, c.to, 1)
		if edited == string(clearSpec) {
			t.Fatalf("%s: the clear spec has no %q:\n%s", c.name, c.from, clearSpec)
		}
		loaded, err := spec.Load([]byte(edited), "edited")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = Unseal(loaded.Config, env, UnsealOptions{IdentityFile: idFile, NodeName: "w2", ClearSpec: []byte(edited)})
		if cl, _ := errclass.Of(err); cl != errclass.InvalidSpec || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v", c.name, err)
		}
		if loaded.Config.Spec.Join.Token.Value != "" || loaded.Config.Spec.Host.Files[0].Content != "" {
			t.Errorf("%s: the spec was changed", c.name)
		}
	}
}

// A recipient that does not parse or a machine name the envelope cannot
// hold is an *OptionError, found before any secret file is read: here the
// root holds none, and the error is still the option's.
func TestSealSpecRefusesOptionsBeforeReadingSecrets(t *testing.T) {
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for name, opts := range map[string]SealOptions{
		"bad recipient":    {Recipients: []string{id.Recipient(), "nosuch:key"}, Root: empty},
		"bad machine name": {Recipients: []string{id.Recipient()}, MachineName: "w 1", Root: empty},
	} {
		_, err := SealSpec(example(t, "worker.yaml"), opts)
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an *OptionError", name, err)
			continue
		}
		if want := map[string]string{"bad recipient": "Recipients[1]", "bad machine name": "MachineName"}[name]; oe.Option != want {
			t.Errorf("%s: option %q, want %q", name, oe.Option, want)
		}
	}
	// With good options the missing secret file is what fails.
	if _, err := SealSpec(example(t, "worker.yaml"), SealOptions{Recipients: []string{id.Recipient()}, Root: empty}); err == nil || !strings.Contains(err.Error(), "spec.join.token.file") {
		t.Errorf("missing token file: %v", err)
	}
}

// A token or certificate-key file that does not hold what the machine's
// inputs-check accepts is refused when sealing, naming the field and never
// quoting the content; what the machine accepts (upper-case hex in a
// certificate key, a trailing newline) is sealed.
func TestSealSpecChecksSecretFilesAsTheMachineDoes(t *testing.T) {
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(root string) SealOptions { return SealOptions{Recipients: []string{id.Recipient()}, Root: root} }
	for name, tc := range map[string]struct {
		file, content, spec, want string
	}{
		"token garbage":     {"bootstrap-token", "SECRET-not-a-token-42\n", "worker.yaml", "spec.join.token.file"},
		"token empty":       {"bootstrap-token", "\n\n", "worker.yaml", "is empty"},
		"certificate key":   {"certificate-key", "SECRET-short-key\n", "control-plane-join.yaml", "spec.controlPlane.certificateKey.file"},
		"upper-case hex ok": {"certificate-key", strings.ToUpper(certKey) + "\n", "control-plane-join.yaml", ""},
	} {
		root := machineRoot(t, false)
		os.WriteFile(filepath.Join(root, "etc/machineadm/secrets", tc.file), []byte(tc.content), 0o600)
		_, err := SealSpec(example(t, tc.spec), opts(root))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "SECRET"):
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}

// TestUnsealTamperedClearSpec: the envelope binds the clear spec beside
// it (its digest is in every item's additional data). Editing any clear
// field the machine relies on — the node name above all, for an envelope
// sealed for a machine and for a template that opens on any machine, the
// endpoint, the CA pin, where a sealed secret goes, a file's path or
// mode, a sysctl — makes Unseal and unseal --check fail with
// VerificationFailed and the spec untouched; the untampered spec, and one
// only re-commented or re-ordered, opens.
func TestUnsealTamperedClearSpec(t *testing.T) {
	root := t.TempDir()
	tok := filepath.Join(root, "etc/machineadm/secrets/bootstrap-token")
	os.MkdirAll(filepath.Dir(tok), 0o700)
	if err := os.WriteFile(tok, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id, idFile := identity(t, seal.HPKESuiteP384)
	in := `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  node: {name: w2}
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:` + strings.Repeat("ab", 32) + `"]
  host:
    sysctl: {net.ipv4.ip_forward: "1"}
    files:
      - path: /etc/app/secret.conf
        mode: "0600"
        content: top-secret-config
`
	edits := []struct{ name, from, to string }{
		{"node name", "node: {name: w2}", "node: {name: w3}"},
		{"node name removed (host name used)", "  node: {name: w2}\n", ""},
		{"endpoint", "cp.demo.example:6443", "evil.example:6443"},
		{"CA pin", "sha256:abab", "sha256:cdab"},
		{"where the sealed token goes", "/etc/machineadm/secrets/bootstrap-token", "/tmp/bootstrap-token"},
		{"sealed file's path", "/etc/app/secret.conf", "/etc/profile.d/x.sh"},
		{"sysctl", `ip_forward: "1"`, `ip_forward: "0"`},
		{"kubernetes version", "v1.37.2", "v1.37.1"},
		{"field added", "  host:\n", "  host:\n    kernelModules: [dummy]\n"},
	}
	for _, machine := range []string{"", seal.AnyMachine} {
		sealed, err := SealSpec([]byte(in), SealOptions{Recipients: []string{id.Recipient()}, Root: root, MachineName: machine})
		if err != nil {
			t.Fatal(err)
		}
		clearSpec, env, err := seal.Split(sealed.File)
		if err != nil {
			t.Fatal(err)
		}
		unseal := func(doc string, node string) (*machineadm.MachineBootstrapConfig, error) {
			t.Helper()
			loaded, err := spec.Load([]byte(doc), "sealed")
			if err != nil {
				t.Fatalf("the edited spec does not load: %v\n%s", err, doc)
			}
			_, err = Unseal(loaded.Config, env, UnsealOptions{IdentityFile: idFile, NodeName: node, ClearSpec: []byte(doc)})
			return loaded.Config, err
		}
		// The same spec with spec.role moved last: another order, one value.
		var roleLine string
		var others []string
		for _, l := range strings.SplitAfter(string(clearSpec), "\n") {
			if strings.TrimSpace(l) == "role: Worker" {
				roleLine = l
			} else {
				others = append(others, l)
			}
		}
		if roleLine == "" {
			t.Fatalf("no role line:\n%s", clearSpec)
		}
		reordered := strings.Join(others, "") + roleLine
		for _, same := range []string{string(clearSpec), "# re-commented\n" + string(clearSpec), reordered} {
			if cfg, err := unseal(same, "w2"); err != nil || cfg.Spec.Join.Token.Value != token {
				t.Fatalf("machine %q: the untampered spec does not open: %v\n%s", machine, err, same)
			}
		}
		for _, e := range edits {
			edited := strings.Replace(string(clearSpec), e.from, e.to, 1)
			if edited == string(clearSpec) {
				t.Fatalf("%s: the clear spec has no %q:\n%s", e.name, e.from, clearSpec)
			}
			node := "w2"
			if strings.Contains(edited, "name: w3") || !strings.Contains(edited, "name: w2") {
				node = "w3" // the host the edited spec was moved to
			}
			cfg, err := unseal(edited, node)
			if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !seal.IsOpenError(err) {
				t.Errorf("machine %q, %s edited: opened or failed with %s: %v", machine, e.name, c, err)
			}
			if cfg.Spec.Join.Token.Value != "" {
				t.Errorf("machine %q, %s edited: the token was put into the spec", machine, e.name)
			}
			// on the machine it was sealed for, the edited spec alone
			// keeps the envelope shut
			if _, err := unseal(edited, "w2"); !errors.Is(err, seal.ErrSpecMismatch) {
				t.Errorf("machine %q, %s edited, on w2: %v, want the spec mismatch", machine, e.name, err)
			}
		}
	}
}
