//go:build !windows

package controller

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/spec"
)

// The tests below cover what a MachineadmConfig takes from Secrets in its
// namespace: file contents, registry and mirror client certificates and
// the external etcd's client certificate. Each value must reach the
// machine only inside the sealed envelope, and the machine must find it
// where its spec wants it (checked with sealspec.Unseal, the code the
// machine runs).

// unsealed opens cloud-config bootstrap data the way the machine does:
// the clear spec loaded and validated, the envelope opened with the
// fixture's identity and applied to it.
func (f *fixture) unsealed(data []byte) (*machineadm.MachineBootstrapConfig, *sealspec.Unsealed) {
	f.t.Helper()
	clear, _ := f.opened(data) // checks the envelope opens at all
	l, err := spec.Load([]byte(clear), "clear spec")
	f.must(err)
	file := f.specFile(data)
	_, env, err := seal.Split(file)
	f.must(err)
	u, err := sealspec.Unseal(l.Config, env, sealspec.UnsealOptions{Identities: []seal.Identity{f.identity}, NodeName: "any-host", ClearSpec: []byte(clear)})
	f.must(err)
	return l.Config, u
}

func (f *fixture) secret(name string, data map[string][]byte) *corev1.Secret {
	f.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Data: data}
	f.must(k8s.Create(f.ctx, s))
	return s
}

// clientPair is a certificate and its private key, PEM.
func clientPair(t *testing.T, cn string) (crt, key []byte) {
	t.Helper()
	crt, key, err := newCA(caSpec{commonName: cn}, "")
	if err != nil {
		t.Fatal(err)
	}
	return crt, key
}

func TestFileFromSecretIsSealed(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	value := []byte("db-password: s3cr3t-from-a-secret\n")
	f.secret("app-config", map[string][]byte{"app.yaml": value})
	_, c := f.machine("w1", false)
	c.Spec.Host.Files = []bootstrapv1.File{{
		Path:        "/etc/app/app.yaml",
		ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app-config", Key: "app.yaml"}},
	}}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("w1")
	tok, _ := tokenExists(t, ds.Annotations[TokenIDAnnotation])
	f.noLeak(ds, value, []byte("s3cr3t-from-a-secret"), []byte(ds.Annotations[TokenIDAnnotation]+"."+string(tok.Data["token-secret"])))
	clear, items := f.opened(ds.Data["value"])
	if !contains(clear, "/etc/app/app.yaml", "mode: \"0600\"") || strings.Contains(clear, "s3cr3t") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	if string(items["spec.host.files[0].content"]) != string(value) {
		t.Fatalf("sealed items %v: file content %q", keys(items), items["spec.host.files[0].content"])
	}
	cfg, _ := f.unsealed(ds.Data["value"])
	if got := cfg.Spec.Host.Files[0]; got.Content != string(value) || got.Mode != "0600" {
		t.Fatalf("the machine would write %+v", got)
	}
}

// A missing Secret or key is a condition naming namespace/name, the key
// and the field; no data Secret, no token and no init lock. Once the
// Secret is complete the data is written.
func TestMissingSecretIsACondition(t *testing.T) {
	f := newFixture(t)
	f.machine("cp1", true)
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "cp1"}, c))
	c.Spec.Host.Files = []bootstrapv1.File{
		{Path: "/etc/app/plain", Content: "plain"},
		{Path: "/etc/app/key", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "key"}}},
	}
	f.must(k8s.Update(f.ctx, c))

	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	wantCond(t, f.reconcile("cp1"), ReadyCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, "Secret "+f.ns+"/app not found", "spec.host.files[1].contentFrom.secret") {
		t.Fatalf("message %q does not name the Secret and the field", got.Message)
	}
	noData := func() {
		t.Helper()
		if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "cp1"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a data Secret was written: %v", err)
		}
		if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: initLockName("c1")}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the init lock was taken while a Secret is missing: %v", err)
		}
		if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("CAs were made while a Secret is missing: %v", err)
		}
	}
	noData()

	s := f.secret("app", map[string][]byte{"other": []byte("x")})
	got = wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, "Secret "+f.ns+"/app has no key \"key\"", "spec.host.files[1].contentFrom.secret") {
		t.Fatalf("message %q does not name the key", got.Message)
	}
	noData()

	s.Data["key"] = []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIK7sealedsealedsealedsealedsealedsealedsealedoAoGCCqGSM49\n-----END EC PRIVATE KEY-----\n")
	f.must(k8s.Update(f.ctx, s))
	wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("cp1")
	f.noLeak(ds, s.Data["key"])
	_, items := f.opened(ds.Data["value"])
	if string(items["spec.host.files[1].content"]) != string(s.Data["key"]) {
		t.Fatalf("sealed items %v", keys(items))
	}
}

func TestRegistryClientCertificateFromSecret(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	crt, key := clientPair(t, "registry-client")
	ca, _ := clientPair(t, "registry-ca")
	mcrt, mkey := clientPair(t, "mirror-client")
	f.secret("registry-client", map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca})
	f.secret("mirror-client", map[string][]byte{"tls.crt": mcrt, "tls.key": mkey})
	_, c := f.machine("w1", false)
	c.Spec.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{
		Host:                  "registry.example.com",
		ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "registry-client"}},
		Mirrors: []bootstrapv1.Mirror{{
			URL:                   "https://mirror.example.com",
			ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "mirror-client"}},
		}},
	}}}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("w1")
	f.noLeak(ds, key, mkey)
	clear, items := f.opened(ds.Data["value"])
	// The CA from the Secret is not secret: it stays in the clear spec.
	if !contains(clear, "registry.example.com", "caCert: |") || strings.Contains(clear, "clientKey") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	for item, want := range map[string][]byte{
		"spec.host.containerd.registries[0].clientKey":             key,
		"spec.host.containerd.registries[0].clientCert":            crt,
		"spec.host.containerd.registries[0].mirrors[0].clientKey":  mkey,
		"spec.host.containerd.registries[0].mirrors[0].clientCert": mcrt,
	} {
		if string(items[item]) != string(want) {
			t.Errorf("sealed %s differs (items %v)", item, keys(items))
		}
	}
	cfg, _ := f.unsealed(ds.Data["value"])
	reg := cfg.Spec.Host.Containerd.Registries[0]
	if reg.ClientKey != string(key) || reg.CACert != string(ca) || reg.Mirrors[0].ClientKey != string(mkey) || reg.Mirrors[0].CACert != "" {
		t.Fatalf("the machine would configure %+v", reg)
	}

	// A Secret whose tls.key is not a key is refused, naming it.
	f.secret("broken", map[string][]byte{"tls.crt": crt, "tls.key": []byte("not a key")})
	_, c2 := f.machine("w2", false)
	c2.Spec.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{
		Host: "registry.example.com", ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "broken"}},
	}}}
	f.must(k8s.Update(f.ctx, c2))
	got := wantCond(t, f.reconcile("w2"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+"/broken", `"tls.key"`, "not a PEM private key", "spec.host.containerd.registries[0].clientCertificateFrom.secret") {
		t.Fatalf("message %q", got.Message)
	}
}

// An external etcd: the client certificate comes from Cluster API's
// <cluster>-apiserver-etcd-client and the CA from <cluster>-etcd (only a
// certificate: the controller makes no etcd CA of its own and sends none).
// A later control plane finds the external etcd's files in kubeadm-certs,
// where kubeadm's join downloads them.
func TestExternalEtcd(t *testing.T) {
	f := newFixture(t)
	crt, key := clientPair(t, "kube-apiserver-etcd-client")
	etcdCA, _ := clientPair(t, "external-etcd-ca")
	external := &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379", "https://10.0.0.21:2379"}}}}
	f.machine("cp1", true)
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "cp1"}, c))
	c.Spec.ControlPlane = external.DeepCopy()
	f.must(k8s.Update(f.ctx, c))
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(c), c))
	if x := c.Spec.ControlPlane.Etcd.External; x.KeyFile != defaultEtcdKeyFile || x.CAFile != defaultEtcdCAFile {
		t.Fatalf("the API server did not default the file paths: %+v", x)
	}

	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+"/c1-apiserver-etcd-client not found", "spec.controlPlane.etcd.external.clientCertificateFrom.secret") {
		t.Fatalf("message %q", got.Message)
	}
	f.secret("c1-apiserver-etcd-client", map[string][]byte{"tls.crt": crt, "tls.key": key})
	got = wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+"/c1-etcd not found") {
		t.Fatalf("message %q does not name the etcd CA's Secret", got.Message)
	}
	f.secret("c1-etcd", map[string][]byte{"tls.crt": etcdCA})

	wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("cp1")
	f.noLeak(ds, key)
	t.Logf("control-plane init data with an external etcd: %d bytes", len(ds.Data["value"]))
	clear, _ := f.opened(ds.Data["value"])
	if !contains(clear, "external:", "https://10.0.0.20:2379", "keyFile: "+defaultEtcdKeyFile) || strings.Contains(clear, "local:") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	cfg, u := f.unsealed(ds.Data["value"])
	x := cfg.Spec.ControlPlane.Etcd.External
	if x == nil || len(x.Endpoints) != 2 || cfg.Spec.ControlPlane.Etcd.Local != nil {
		t.Fatalf("etcd: %+v", cfg.Spec.ControlPlane.Etcd)
	}
	files := map[string]machineadm.File{}
	for _, fl := range cfg.Spec.Host.Files {
		files[fl.Path] = fl
	}
	if files[x.KeyFile].Content != string(key) || files[x.KeyFile].Mode != "0600" || files[x.CertFile].Content != string(crt) || files[x.CAFile].Content != string(etcdCA) {
		t.Fatalf("the machine would write the etcd files %+v", files)
	}
	if _, ok := u.PKIFiles["etcd/ca.key"]; ok {
		t.Fatal("the stacked etcd's CA key is in the sealed CA set of a cluster with an external etcd")
	}
	if _, ok := u.PKIFiles["ca.key"]; !ok {
		t.Fatalf("the sealed CA set lacks ca.key: %v", u.PKIFiles)
	}
	etcdSecret := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-etcd"}, etcdSecret))
	if _, ok := etcdSecret.Data["tls.key"]; ok || len(etcdSecret.OwnerReferences) != 0 {
		t.Fatal("the controller changed the user's c1-etcd")
	}

	// A second control plane: kubeadm-certs carries the external etcd's
	// files under kubeadm's names, and no stacked etcd CA.
	f.setClusterStatus(true, true)
	_, c2 := f.machine("cp2", true)
	c2.Spec.ControlPlane = external.DeepCopy()
	f.must(k8s.Update(f.ctx, c2))
	wantCond(t, f.reconcile("cp2"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds2 := f.dataSecret("cp2")
	f.noLeak(ds2, key)
	kc, err := workload.CoreV1().Secrets("kube-system").Get(context.Background(), kubeadmCertsName, metav1.GetOptions{})
	f.must(err)
	ck, err := ensureCertificateKey(f.ctx, k8s, f.cluster, false)
	f.must(err)
	if string(decrypt(t, ck, kc.Data["external-etcd.key"])) != string(key) || string(decrypt(t, ck, kc.Data["external-etcd-ca.crt"])) != string(etcdCA) || len(kc.Data["external-etcd.crt"]) == 0 {
		t.Fatalf("kubeadm-certs lacks the external etcd's files: %v", keys(kc.Data))
	}
	if _, ok := kc.Data["etcd-ca.key"]; ok {
		t.Fatal("kubeadm-certs carries a stacked etcd CA for an external etcd")
	}
}

// The new fields are refused at admission with their field paths.
func TestSecretReferencesRefusedWithFieldPath(t *testing.T) {
	f := newFixture(t)
	from := &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "k"}}
	cert := &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "reg"}}
	ext := func(x bootstrapv1.ExternalEtcd) *bootstrapv1.ControlPlaneSpec {
		return &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &x}}
	}
	cases := map[string]admissionCase{
		"contentFrom and content": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Content: "x", ContentFrom: from}}
		}, "spec.host.files[0].contentFrom"},
		"contentFrom and encoding": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Encoding: "base64", ContentFrom: from}}
		}, "spec.host.files[0].encoding"},
		"contentFrom readable by others": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Mode: "0644", ContentFrom: from}}
		}, "spec.host.files[0].mode"},
		"contentFrom bad Secret name": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "Not_A_Name", Key: "k"}}}}
		}, "spec.host.files[0].contentFrom.secret.name"},
		"contentFrom bad key": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "a/b"}}}}
		}, "spec.host.files[0].contentFrom.secret.key"},
		"registry client Secret without name": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{Host: "r.example.com", ClientCertificateFrom: &bootstrapv1.CertificateSource{}}}}
		}, "spec.host.containerd.registries[0].clientCertificateFrom.secret.name"},
		"mirror client Secret bad name": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{Host: "r.example.com", ClientCertificateFrom: cert,
				Mirrors: []bootstrapv1.Mirror{{URL: "https://m.example.com", ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "UPPER"}}}}}}}
		}, "spec.host.containerd.registries[0].mirrors[0].clientCertificateFrom.secret.name"},
		"external etcd without endpoints": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = ext(bootstrapv1.ExternalEtcd{})
		}, "spec.controlPlane.etcd.external.endpoints"},
		"external etcd over http": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = ext(bootstrapv1.ExternalEtcd{Endpoints: []string{"http://10.0.0.20:2379"}})
		}, "spec.controlPlane.etcd.external.endpoints[0]"},
		"external etcd endpoint twice": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = ext(bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379", "https://10.0.0.20:2379"}})
		}, "spec.controlPlane.etcd.external.endpoints[1]"},
		"external etcd endpoints in one item": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = ext(bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379", "https://10.0.0.21:2379/,http://10.0.0.22:2379"}})
		}, "spec.controlPlane.etcd.external.endpoints[1]"},
		"external etcd relative key file": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = ext(bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}, KeyFile: "etcd.key"})
		}, "spec.controlPlane.etcd.external.keyFile"},
		"external etcd one path twice": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = ext(bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}, KeyFile: defaultEtcdCertFile})
		}, "spec.controlPlane.etcd.external"},
		"local and external etcd": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{Local: &bootstrapv1.LocalEtcd{}, External: &bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}}}}
		}, "spec.controlPlane.etcd.external"},
	}
	refusedWithPath(t, f, cases)
	// The template carries the same validation.
	tpl := &bootstrapv1.MachineadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: f.ns},
		Spec: bootstrapv1.MachineadmConfigTemplateSpec{Template: bootstrapv1.MachineadmConfigTemplateResource{Spec: f.spec()}}}
	tpl.Spec.Template.Spec.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Mode: "0640", ContentFrom: from}}
	if err := k8s.Create(f.ctx, tpl); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.spec.host.files[0].mode") {
		t.Fatalf("template: %v", err)
	}
	// A valid config with every new field is accepted.
	ok := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: f.ns}, Spec: f.spec()}
	ok.Spec.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Mode: "0400", ContentFrom: from}}
	ok.Spec.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{Host: "r.example.com", ClientCertificateFrom: cert,
		Mirrors: []bootstrapv1.Mirror{{URL: "https://m.example.com", ClientCertificateFrom: cert}}}}}
	ok.Spec.ControlPlane = ext(bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}, ClientCertificateFrom: cert})
	f.must(k8s.Create(f.ctx, ok))
}

// tokenCount is the number of bootstrap tokens in the workload cluster.
func (f *fixture) tokenCount() int {
	f.t.Helper()
	l, err := workload.CoreV1().Secrets("kube-system").List(f.ctx, metav1.ListOptions{FieldSelector: "type=bootstrap.kubernetes.io/token"})
	f.must(err)
	return len(l.Items)
}

// TestTLSSecretsCheckedAsUsed: a TLS Secret is checked as kubeadm and
// containerd will use it, before anything is made. A key that does not
// match the certificate, two keys, a private key or other text in tls.crt
// or ca.crt (which are not sealed: a registry's caCert and an external
// etcd's certificate files are in the clear), a block that does not
// decode, and a value too large for any user data are each MissingSecret
// naming the Secret, the key and the field, never quoting the value; no
// data Secret, token, init lock or CA is made. The first control plane
// with an external etcd is the case where nothing else stops it.
func TestTLSSecretsCheckedAsUsed(t *testing.T) {
	f := newFixture(t)
	crt, key := clientPair(t, "client")
	_, otherKey := clientPair(t, "other")
	ca, _ := clientPair(t, "ca")
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	undecodable := []byte("-----BEGIN CERTIFICATE-----\nnot base64: db-password=hunter2hunter2\n-----END CERTIFICATE-----\n")
	cases := []struct {
		name      string
		data      map[string][]byte
		key, want string
	}{
		{"key of another certificate", map[string][]byte{"tls.crt": crt, "tls.key": otherKey}, "tls.key", "is not the private key of the first certificate in tls.crt"},
		{"two keys", map[string][]byte{"tls.crt": crt, "tls.key": cat(key, otherKey)}, "tls.key", "holds 2 private keys, want one"},
		{"key in tls.crt", map[string][]byte{"tls.crt": cat(crt, key), "tls.key": key}, "tls.crt", `holds a PEM "EC PRIVATE KEY" block`},
		{"text after the certificate", map[string][]byte{"tls.crt": cat(crt, []byte("db-password=hunter2hunter2\n")), "tls.key": key}, "tls.crt", "holds text outside its PEM blocks"},
		{"text before the key", map[string][]byte{"tls.crt": crt, "tls.key": cat([]byte("note: rotate me\n"), key)}, "tls.key", "holds text outside its PEM blocks"},
		{"undecodable block between certificates", map[string][]byte{"tls.crt": cat(crt, undecodable, ca), "tls.key": key}, "tls.crt", "holds text outside its PEM blocks, or a block that does not decode"},
		{"certificate that does not parse", map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n"), "tls.key": key}, "tls.crt", "holds a certificate that does not parse"},
		{"key in ca.crt", map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": cat(ca, otherKey)}, "ca.crt", `holds a PEM "EC PRIVATE KEY" block`},
		{"value too large", map[string][]byte{"tls.crt": cat(crt, bytes.Repeat([]byte("\n"), MaxSecretValueBytes)), "tls.key": key}, "tls.crt", "more than the limit of 131072"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("etcd-client-%d", i)
			f.secret(name, tc.data)
			cp := fmt.Sprintf("cp%d", i)
			f.machine(cp, true)
			c := &bootstrapv1.MachineadmConfig{}
			f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: cp}, c))
			c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{
				Endpoints: []string{"https://10.0.0.20:2379"}, ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: name}}}}}
			f.must(k8s.Update(f.ctx, c))
			res, err := f.r.Reconcile(f.ctx, ctrlRequest{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: cp}})
			f.must(err)
			if res.RequeueAfter != secretRetry {
				t.Errorf("requeue after %v, want %v (the Secret is read again)", res.RequeueAfter, secretRetry)
			}
			f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: cp}, c))
			got := wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
			if !contains(got.Message, "Secret "+f.ns+"/"+name+` key "`+tc.key+`" `, tc.want, "spec.controlPlane.etcd.external.clientCertificateFrom.secret") {
				t.Fatalf("message %q, want the Secret, key %s, %q and the field", got.Message, tc.key, tc.want)
			}
			if found := leakcheck.Check([]byte(got.Message), leakcheck.Options{Known: [][]byte{key, otherKey, []byte("hunter2hunter2")}}); len(found) > 0 {
				t.Fatalf("the condition message holds a secret: %v", found)
			}
			for _, o := range []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cp}}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: initLockName("c1")}}, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-ca"}}} {
				if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: o.GetName()}, o); !apierrors.IsNotFound(err) {
					t.Fatalf("%s %s was made for a config whose Secret is unusable: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
				}
			}
		})
	}
	// The same check for a registry client certificate on a worker: no
	// token is made.
	f.initialized()
	before := f.tokenCount()
	f.secret("registry-client", map[string][]byte{"tls.crt": crt, "tls.key": otherKey})
	_, w := f.machine("w1", false)
	w.Spec.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{Host: "r.example.com",
		Mirrors: []bootstrapv1.Mirror{{URL: "https://m.example.com", ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "registry-client"}}}}}}}
	f.must(k8s.Update(f.ctx, w))
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, "registry-client", "is not the private key", "spec.host.containerd.registries[0].mirrors[0].clientCertificateFrom.secret") {
		t.Fatalf("message %q", got.Message)
	}
	if n := f.tokenCount(); n != before {
		t.Fatalf("%d tokens after the refusal, %d before", n, before)
	}
}

// The etcd CA taken from <cluster>-etcd's tls.crt is checked the same way.
func TestExternalEtcdCAChecked(t *testing.T) {
	f := newFixture(t)
	crt, key := clientPair(t, "kube-apiserver-etcd-client")
	f.secret("c1-apiserver-etcd-client", map[string][]byte{"tls.crt": crt, "tls.key": key})
	f.secret("c1-etcd", map[string][]byte{"tls.crt": append(append([]byte{}, crt...), key...)})
	_, c := f.machine("cp1", true)
	c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}}}}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+`/c1-etcd key "tls.crt" holds a PEM "EC PRIVATE KEY" block`) {
		t.Fatalf("message %q", got.Message)
	}
}

// A file from a Secret that a later entry for the same path appends to
// with a mode readable by others would end up world-readable on the
// machine: refused with the field path, no data Secret.
func TestSecretFileNotWidenedByAppend(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.secret("app", map[string][]byte{"key": []byte("db-password=hunter2hunter2")})
	_, c := f.machine("w1", false)
	c.Spec.Host.Files = []bootstrapv1.File{
		{Path: "/etc/app/env", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "key"}}},
		{Path: "/etc/app/env", Content: "LOG=debug\n", Mode: "0644", Append: true},
	}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !contains(got.Message, "spec.host.files[1].mode", "owner-only") || strings.Contains(got.Message, "hunter2") {
		t.Fatalf("message %q", got.Message)
	}
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a data Secret was written: %v", err)
	}
}

// A Secret that happens to have the config's name (here the one holding
// the config's own file content, a natural name to give it) is not this
// config's data Secret: it is never adopted as the Machine's bootstrap
// data nor changed; the condition says so, and once it is gone the data
// is written.
func TestForeignSecretOfTheConfigsNameNotAdopted(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	for i, typ := range []corev1.SecretType{corev1.SecretTypeOpaque, ClusterSecretType} {
		name := fmt.Sprintf("web-%d", i)
		value := []byte("api-key=not-bootstrap-data-" + name)
		own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Type: typ, Data: map[string][]byte{"api-key": value}}
		f.must(k8s.Create(f.ctx, own))
		_, c := f.machine(name, false)
		c.Spec.Host.Files = []bootstrapv1.File{{Path: "/etc/web/api-key", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: name, Key: "api-key"}}}}
		f.must(k8s.Update(f.ctx, c))
		before := f.tokenCount()
		c = f.reconcile(name)
		got := wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonDataSecretNameTaken)
		if !contains(got.Message, "Secret "+f.ns+"/"+name+" exists and is not this config's data Secret") || c.Status.DataSecretName != "" || ptrTrue(c.Status.Initialization.DataSecretCreated) {
			t.Fatalf("%s: condition %q, status %+v", typ, got.Message, c.Status)
		}
		if after := f.dataSecret(name); string(after.Data["api-key"]) != string(value) || len(after.Data) != 1 || len(after.OwnerReferences) != 0 {
			t.Fatalf("%s: the Secret was changed: %+v", typ, after)
		}
		if n := f.tokenCount(); n != before {
			t.Fatalf("%s: %d tokens, %d before", typ, n, before)
		}
	}
	// Renamed: the config's data is written.
	f.must(k8s.Delete(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: f.ns}}))
	f.secret("web-api", map[string][]byte{"api-key": []byte("api-key=not-bootstrap-data")})
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "web-0"}, c))
	c.Spec.Host.Files[0].ContentFrom.Secret.Name = "web-api"
	f.must(k8s.Update(f.ctx, c))
	c = f.reconcile("web-0")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	f.noLeak(f.dataSecret("web-0"), []byte("api-key=not-bootstrap-data"))
}

// The values read from Secrets are bounded all together, not only one by
// one: refused before any token is made.
func TestSecretValuesBoundedInTotal(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	half := bytes.Repeat([]byte("x"), MaxSecretValueBytes/2+1)
	f.secret("a", map[string][]byte{"v": half})
	f.secret("b", map[string][]byte{"v": half})
	_, c := f.machine("w1", false)
	c.Spec.Host.Files = []bootstrapv1.File{
		{Path: "/etc/a", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "a", Key: "v"}}},
		{Path: "/etc/b", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "b", Key: "v"}}},
	}
	f.must(k8s.Update(f.ctx, c))
	before := f.tokenCount()
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+`/b key "v" brings the values read from Secrets to `, "more than the limit of 131072 for all of them", "spec.host.files[1].contentFrom.secret") {
		t.Fatalf("message %q", got.Message)
	}
	if n := f.tokenCount(); n != before {
		t.Fatalf("%d tokens, %d before", n, before)
	}
}

// Bootstrap data larger than a Secret holds (here from inline files that
// do not compress) is a condition, not an endless retry of a create the
// API server refuses; its token is deleted.
func TestDataTooLarge(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, c := f.machine("w1", false)
	for i := range 18 {
		raw := make([]byte, 48<<10)
		_, _ = rand.Read(raw)
		c.Spec.Host.Files = append(c.Spec.Host.Files, bootstrapv1.File{Path: fmt.Sprintf("/opt/blob%d", i), Encoding: "base64", Content: base64.StdEncoding.EncodeToString(raw)})
	}
	f.must(k8s.Update(f.ctx, c))
	before := f.tokenCount()
	res, err := f.r.Reconcile(f.ctx, ctrlRequest{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: "w1"}})
	if err != nil {
		t.Fatalf("reconcile: %v (retried without end)", err)
	}
	_ = res
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(c), c))
	got := wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonDataTooLarge)
	t.Log(got.Message)
	if n := f.tokenCount(); n != before {
		t.Fatalf("%d tokens, %d before", n, before)
	}
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("data Secret: %v", err)
	}
}

// A config file on a path where the controller writes an external etcd's
// file is refused naming the config's own field, not the controller's
// entry after it.
func TestExternalEtcdFilePathTaken(t *testing.T) {
	f := newFixture(t)
	crt, key := clientPair(t, "kube-apiserver-etcd-client")
	f.secret("etcd-client", map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": crt})
	_, c := f.machine("cp1", true)
	c.Spec.Host.Files = []bootstrapv1.File{{Path: "/etc/motd", Content: "hello"}, {Path: defaultEtcdKeyFile, Content: "mine", Mode: "0600"}}
	c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{
		Endpoints: []string{"https://10.0.0.20:2379"}, ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "etcd-client"}}}}}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !contains(got.Message, "spec.host.files[1].path", "spec.controlPlane.etcd.external.keyFile") {
		t.Fatalf("message %q", got.Message)
	}
}

// A control-plane config in error never takes the init lock: another,
// valid control-plane Machine initialises the cluster instead of waiting
// for the broken one to be fixed.
func TestInvalidFirstControlPlaneTakesNoInitLock(t *testing.T) {
	f := newFixture(t)
	f.secret("app", map[string][]byte{"key": []byte("db-password=hunter2hunter2")})
	_, bad := f.machine("cp-bad", true)
	bad.Spec.Host.Files = []bootstrapv1.File{
		{Path: "/etc/app/env", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "key"}}},
		{Path: "/etc/app/env", Content: "LOG=debug\n", Mode: "0644", Append: true},
	}
	f.must(k8s.Update(f.ctx, bad))
	wantCond(t, f.reconcile("cp-bad"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: initLockName("c1")}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the invalid config took the init lock: %v", err)
	}
	f.machine("cp-good", true)
	wantCond(t, f.reconcile("cp-good"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if a := f.dataSecret("cp-good").Annotations[ActionAnnotation]; a != "init" {
		t.Fatalf("the valid control plane got %q data, want init", a)
	}
	wantCond(t, f.reconcile("cp-bad"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
}

// A recipient that passes admission but does not parse is InvalidConfig
// naming it, before the init lock, the CAs or a token exist.
func TestBadRecipientTakesNoInitLock(t *testing.T) {
	f := newFixture(t)
	_, c := f.machine("cp1", true)
	c.Spec.Recipients = []string{f.recip, "hpke:p384:not-a-key"}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.Contains(got.Message, "spec.recipients[1]") {
		t.Fatalf("message %q", got.Message)
	}
	for _, o := range []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: initLockName("c1")}}, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-ca"}}} {
		if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: o.GetName()}, o); !apierrors.IsNotFound(err) {
			t.Fatalf("%s was made for a config with a bad recipient: %v", o.GetName(), err)
		}
	}
}
