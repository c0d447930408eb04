package phases

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/spec"
)

// profileCP is a control plane under profile cis-1.12 whose CA set is at
// pki.dir /etc/machineadm/pki under the returned root, holding key (none
// when key is "").
func profileCP(t *testing.T, key string) (*Data, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "etc/machineadm/pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if key != "" {
		if err := os.WriteFile(filepath.Join(dir, pki.EncryptionKeyFile), []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{
		Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		Security:     &machineadm.Security{Profile: "cis-1.12"},
		ControlPlane: &machineadm.ControlPlane{PKI: machineadm.PKI{Dir: "/etc/machineadm/pki"}},
	}}
	return &Data{Config: cfg, Root: root}, dir
}

// withEtcdMember gives the node under root a local etcd member in
// DefaultEtcdDataDir: the cluster's data is there.
func withEtcdMember(t *testing.T, root string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, machineadm.DefaultEtcdDataDir, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
}

func testEncryptionKey() string {
	return base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
}

// Under a profile, a control plane with the CA set's key and no encryption
// field encrypts Secrets with aescbc and that key (identity reads what was
// written before); the key reaches the redactor.
func TestDefaultEncryptionFromCASet(t *testing.T) {
	key := testEncryptionKey()
	d, _ := profileCP(t, key)
	var told []string
	d.AddSecrets = func(s ...string) { told = append(told, s...) }
	if err := DefaultEncryption(d); err != nil {
		t.Fatal(err)
	}
	e := d.Config.Spec.ControlPlane.APIServer.Encryption
	if e == nil || len(e.Resources) != 1 {
		t.Fatalf("encryption %+v, want one resource entry", e)
	}
	r := e.Resources[0]
	if strings.Join(r.Resources, ",") != "secrets" || len(r.Providers) != 2 || r.Providers[0].AESCBC == nil || r.Providers[1].Identity == nil {
		t.Fatalf("resource %+v, want secrets by aescbc then identity", r)
	}
	if k := r.Providers[0].AESCBC.Keys; len(k) != 1 || k[0].Secret.Value != key || k[0].Name != machineadm.CASetEncryptionKeyName {
		t.Errorf("aescbc keys %+v", k)
	}
	if len(told) != 1 || told[0] != key {
		t.Errorf("the redactor was told %d secrets, want the key", len(told))
	}
}

// The sealed CA set's key is used as pki.dir's would be; a sealed CA set
// without one is refused like a directory without one.
func TestDefaultEncryptionFromSealedCASet(t *testing.T) {
	key := testEncryptionKey()
	d, _ := profileCP(t, "")
	d.sealedPKI = map[string][]byte{"ca.crt": []byte("x"), pki.EncryptionKeyFile: []byte(key + "\n")}
	if err := DefaultEncryption(d); err != nil {
		t.Fatal(err)
	}
	if e := d.Config.Spec.ControlPlane.APIServer.Encryption; e == nil || e.Resources[0].Providers[0].AESCBC.Keys[0].Secret.Value != key {
		t.Fatalf("sealed key not used: %+v", e)
	}
	d, _ = profileCP(t, key) // pki.dir has one, the sealed set does not
	d.sealedPKI = map[string][]byte{"ca.crt": []byte("x")}
	if err := DefaultEncryption(d); !spec.IsInvalidSpec(err) || !strings.Contains(err.Error(), "sealed CA set") {
		t.Fatalf("sealed CA set without a key: %v", err)
	}
}

// Without a key to take, a control plane under a profile is refused with
// an invalid-spec error (exit code 2) naming the field and how to give a
// key, and its spec is left as it was; a malformed key is refused too.
func TestDefaultEncryptionRefusesWithoutKey(t *testing.T) {
	noDir, _ := profileCP(t, "")
	noDir.Config.Spec.ControlPlane.PKI.Dir = ""
	noKey, _ := profileCP(t, "")
	bad, _ := profileCP(t, "c2hvcnQ=") // 5 bytes
	for name, tc := range map[string]struct {
		d    *Data
		says string
	}{
		"no pki.dir":        {noDir, "no CA set"},
		"CA set without it": {noKey, "/etc/machineadm/pki/encryption.key"},
		"malformed key":     {bad, "base64"},
	} {
		err := DefaultEncryption(tc.d)
		var ie *spec.InvalidSpecError
		if !errors.As(err, &ie) || len(ie.Errors) != 1 || ie.Errors[0].Field != "spec.controlPlane.apiServer.encryption" {
			t.Errorf("%s: %v, want an invalid spec at spec.controlPlane.apiServer.encryption", name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want it to say %q", name, err, tc.says)
		}
		if name != "malformed key" && !strings.Contains(err.Error(), "machineadm pki encryption-key --out DIR/encryption.key") {
			t.Errorf("%s: %v, want the way to add a key", name, err)
		}
		if tc.d.Config.Spec.ControlPlane.APIServer.Encryption != nil {
			t.Errorf("%s: the spec was changed", name)
		}
	}
}

// A spec that configures encryption itself, by the field or the flag, no
// profile, and a worker are left alone, key or not.
func TestDefaultEncryptionLeavesOthersAlone(t *testing.T) {
	own := &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{{Identity: &machineadm.IdentityProvider{}}}}}}
	for name, change := range map[string]func(s *machineadm.MachineBootstrapSpec){
		"field": func(s *machineadm.MachineBootstrapSpec) { s.ControlPlane.APIServer.Encryption = own },
		"flag": func(s *machineadm.MachineBootstrapSpec) {
			s.ControlPlane.APIServer.ExtraArgs = []machineadm.Arg{{Name: "encryption-provider-config", Value: "/x"}}
		},
		"no profile": func(s *machineadm.MachineBootstrapSpec) { s.Security = nil },
		"worker":     func(s *machineadm.MachineBootstrapSpec) { s.Role = machineadm.RoleWorker },
	} {
		d, _ := profileCP(t, "")
		change(&d.Config.Spec)
		before := d.Config.Spec.ControlPlane.APIServer.Encryption
		if err := DefaultEncryption(d); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if d.Config.Spec.ControlPlane.APIServer.Encryption != before {
			t.Errorf("%s: encryption changed", name)
		}
	}
}

// A node this default configured before keeps its key when the CA set
// no longer holds one (taken off the node after the bootstrap): the key
// named machineadm.CASetEncryptionKeyName in its encryption configuration. The CA
// set's key, when the same, is taken; when another (a CA set remade, a
// key file replaced) and the etcd member there, the run is refused at the
// field, the spec and the node's key untouched, and neither key quoted:
// the API server would no longer read the Secrets encrypted so far. A
// node reset for a new cluster (no member) takes the new key.
func TestDefaultEncryptionKeepsAppliedKey(t *testing.T) {
	applied := base64.StdEncoding.EncodeToString([]byte("applied-key-applied-key-applied!"))
	write := func(root string) {
		t.Helper()
		p := filepath.Join(root, "etc/kubernetes/apiserver/encryption-config.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - {name: " + machineadm.CASetEncryptionKeyName + ", secret: " + applied + "}\n  - identity: {}\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := profileCP(t, "")
	write(d.Root)
	if err := DefaultEncryption(d); err != nil {
		t.Fatal(err)
	}
	if got := d.Config.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers[0].AESCBC.Keys[0].Secret.Value; got != applied {
		t.Errorf("key %q, want the applied one", got)
	}
	d, _ = profileCP(t, applied)
	write(d.Root)
	if err := DefaultEncryption(d); err != nil {
		t.Fatal(err)
	}
	if got := d.Config.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers[0].AESCBC.Keys[0].Secret.Value; got != applied {
		t.Errorf("key %q, want the CA set's (the applied one)", got)
	}
	for name, sealed := range map[string]bool{"pki.dir": false, "sealed": true} {
		d, _ = profileCP(t, testEncryptionKey())
		if sealed {
			d.Config.Spec.ControlPlane.PKI.Dir = ""
			d.sealedPKI = map[string][]byte{"ca.crt": []byte("x"), pki.EncryptionKeyFile: []byte(testEncryptionKey() + "\n")}
		}
		write(d.Root)
		withEtcdMember(t, d.Root)
		err := DefaultEncryption(d)
		var ie *spec.InvalidSpecError
		if !errors.As(err, &ie) || len(ie.Errors) != 1 || ie.Errors[0].Field != "spec.controlPlane.apiServer.encryption" || !strings.Contains(err.Error(), "unreadable") {
			t.Fatalf("%s: another CA-set key than the applied one: %v, want an invalid spec at the field", name, err)
		}
		if strings.Contains(err.Error(), applied) || strings.Contains(err.Error(), testEncryptionKey()) {
			t.Errorf("%s: the error quotes a key: %v", name, err)
		}
		if d.Config.Spec.ControlPlane.APIServer.Encryption != nil {
			t.Errorf("%s: the spec was changed", name)
		}
	}
	// A node reset for a new cluster (etcd's member gone) has no data
	// the stale configuration encrypted: the CA set's new key is taken.
	d, _ = profileCP(t, testEncryptionKey())
	write(d.Root)
	if err := DefaultEncryption(d); err != nil {
		t.Fatalf("reset node: %v", err)
	}
	if got := d.Config.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers[0].AESCBC.Keys[0].Secret.Value; got != testEncryptionKey() {
		t.Errorf("reset node: not the CA set's key")
	}
}

// A node whose API server reads Secrets with providers the spec gave
// before and no longer gives (an upgrade whose spec dropped the field for
// the profile's default), its data in a local etcd member or an external
// etcd, is refused at the field, naming the providers
// and quoting no key: the default's configuration would drop them and
// leave what they encrypted unreadable. An identity-only configuration
// drops no reader and is replaced.
func TestDefaultEncryptionKeepsForeignReaders(t *testing.T) {
	own := base64.StdEncoding.EncodeToString([]byte("the-operators-own-key-32-bytes!!"))
	for name, tc := range map[string]struct {
		providers string
		says      string
	}{
		"aescbc":    {"  - aescbc:\n      keys:\n      - {name: k1, secret: " + own + "}\n  - identity: {}\n", "aescbc key k1"},
		"secretbox": {"  - secretbox:\n      keys:\n      - {name: sb, secret: " + own + "}\n", "secretbox key sb"},
		"kms":       {"  - kms: {apiVersion: v2, name: vault, endpoint: unix:///run/kms/k.sock}\n  - identity: {}\n", "kms vault"},
		"identity":  {"  - identity: {}\n", ""},
	} {
		d, _ := profileCP(t, testEncryptionKey())
		p := filepath.Join(d.Root, "etc/kubernetes/apiserver/encryption-config.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + tc.providers
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if name == "kms" {
			// An external etcd keeps the data whatever the node's state.
			d.Config.Spec.ControlPlane.Etcd.External = &machineadm.ExternalEtcd{Endpoints: []string{"https://10.0.0.2:2379"}}
		} else {
			withEtcdMember(t, d.Root)
		}
		err := DefaultEncryption(d)
		if tc.says == "" {
			if err != nil || d.Config.Spec.ControlPlane.APIServer.Encryption == nil {
				t.Errorf("%s: %v, want the default", name, err)
			}
			continue
		}
		var ie *spec.InvalidSpecError
		if !errors.As(err, &ie) || len(ie.Errors) != 1 || ie.Errors[0].Field != "spec.controlPlane.apiServer.encryption" || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an invalid spec at the field naming %q", name, err, tc.says)
			continue
		}
		if strings.Contains(err.Error(), own) || strings.Contains(err.Error(), testEncryptionKey()) {
			t.Errorf("%s: the error quotes a key: %v", name, err)
		}
		if d.Config.Spec.ControlPlane.APIServer.Encryption != nil {
			t.Errorf("%s: the spec was changed", name)
		}
	}
}

// What the default configures, written as the apiserver-config phase
// writes it (apiserverconfig.Files), is read back as this default's own
// key with no other reader: a re-run keeps it, without the CA set too.
func TestDefaultEncryptionRoundTrip(t *testing.T) {
	d, dir := profileCP(t, testEncryptionKey())
	if err := DefaultEncryption(d); err != nil {
		t.Fatal(err)
	}
	files, err := apiserverconfig.Files(&d.Config.Spec.ControlPlane.APIServer, func(_ string, s *machineadm.SecretSource) ([]byte, error) { return []byte(s.Value), nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(d.Root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if key, others := appliedKey(d); key != testEncryptionKey() || len(others) != 0 {
		t.Fatalf("read back key match %v, others %v", key == testEncryptionKey(), others)
	}
	if err := os.Remove(filepath.Join(dir, pki.EncryptionKeyFile)); err != nil {
		t.Fatal(err)
	}
	d.Config.Spec.ControlPlane.APIServer.Encryption = nil
	if err := DefaultEncryption(d); err != nil {
		t.Fatalf("re-run without the CA set's key: %v", err)
	}
}

// A spec that dropped spec.security, on a node whose API server encrypts
// with the key the profile's default gave it and whose etcd member holds
// the data, is refused at the field (the API server would lose the key);
// on a node reset for a new cluster (no member), or without that
// configuration, a spec without a profile is left alone.
func TestDefaultEncryptionRefusesDroppingTheProfile(t *testing.T) {
	d, _ := profileCP(t, testEncryptionKey())
	if err := DefaultEncryption(d); err != nil {
		t.Fatal(err)
	}
	files, err := apiserverconfig.Files(&d.Config.Spec.ControlPlane.APIServer, func(_ string, s *machineadm.SecretSource) ([]byte, error) { return []byte(s.Value), nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(d.Root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d.Config.Spec.ControlPlane.APIServer.Encryption = nil
	d.Config.Spec.Security = nil
	if err := DefaultEncryption(d); err != nil || d.Config.Spec.ControlPlane.APIServer.Encryption != nil {
		t.Fatalf("reset node (no etcd member) without the profile: %v", err)
	}
	withEtcdMember(t, d.Root)
	err = DefaultEncryption(d)
	var ie *spec.InvalidSpecError
	if !errors.As(err, &ie) || len(ie.Errors) != 1 || ie.Errors[0].Field != "spec.controlPlane.apiServer.encryption" || !strings.Contains(err.Error(), "spec.security.profile") {
		t.Fatalf("profile dropped: %v, want an invalid spec at the field", err)
	}
	if strings.Contains(err.Error(), testEncryptionKey()) || d.Config.Spec.ControlPlane.APIServer.Encryption != nil {
		t.Errorf("the error quotes the key, or the spec was changed: %v", err)
	}
	plain, _ := profileCP(t, "")
	plain.Config.Spec.Security = nil
	if err := DefaultEncryption(plain); err != nil || plain.Config.Spec.ControlPlane.APIServer.Encryption != nil {
		t.Errorf("no profile, no configuration: %v", err)
	}
}
