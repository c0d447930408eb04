package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
	"github.com/machineadm/machineadm/pkg/seal"
)

// fill sets every field of v (a pointer) to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type() == reflect.TypeFor[*apiextensionsv1.JSON]() {
			v.Set(reflect.ValueOf(&apiextensionsv1.JSON{Raw: []byte(`{"k":1}`)}))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[apiextensionsv1.JSON]() {
			v.Set(reflect.ValueOf(apiextensionsv1.JSON{Raw: []byte(`{"k":1}`)}))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(2)
	}
}

// TestEveryFieldReachesTheMachineSpec fills every field of the provider's
// node, host, report and control-plane types and checks that each one
// arrives in the machine spec (strict copy: a field without a counterpart
// is an error, and none is dropped).
func TestEveryFieldReachesTheMachineSpec(t *testing.T) {
	var cfg bootstrapv1.MachineadmConfig
	fill(reflect.ValueOf(&cfg.Spec.Node).Elem())
	fill(reflect.ValueOf(&cfg.Spec.Host).Elem())
	fill(reflect.ValueOf(&cfg.Spec.Report).Elem())
	fill(reflect.ValueOf(&cfg.Spec.Kubernetes).Elem())
	cfg.Spec.Security = &bootstrapv1.Security{}
	fill(reflect.ValueOf(cfg.Spec.Security).Elem())
	cfg.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
	fill(reflect.ValueOf(cfg.Spec.ControlPlane).Elem())
	// Secret references have no counterpart: TestSecretRefsAreSealed
	// and TestProfileConfigRendersSecurity cover them.
	cfg.Spec.Host = stripRefs(cfg.Spec.Host)
	cfg.Spec.ControlPlane.APIServer = apiServerWithoutRefs(cfg.Spec.ControlPlane.APIServer)
	cfg.Spec.ControlPlane.Etcd.External = nil
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1.MachineSpec{Version: "v1.37.2"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "h", Port: 1}}}
	s, err := buildSpec(&cfg, m, cl, plan{controlPlane: true, action: mspec.ActionInit}, joinInfo{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{
		"node": {cfg.Spec.Node, s.Spec.Node}, "host": {cfg.Spec.Host, s.Spec.Host}, "report": {cfg.Spec.Report, s.Spec.Report},
		"security":                       {cfg.Spec.Security, s.Spec.Security},
		"controlPlane.controllerManager": {cfg.Spec.ControlPlane.ControllerManager, s.Spec.ControlPlane.ControllerManager},
		"controlPlane.apiServer":         {cfg.Spec.ControlPlane.APIServer, s.Spec.ControlPlane.APIServer},
		"controlPlane.etcd":              {cfg.Spec.ControlPlane.Etcd, s.Spec.ControlPlane.Etcd},
	} {
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
		// The secret slots the Secret references fill stay empty here.
		b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(`"kubeConfig":{},`), nil), []byte(`,"secret":{}`), nil)
		if string(a) != string(b) {
			t.Errorf("%s differs:\nconfig: %s\nspec:   %s", name, a, b)
		}
	}
	if s.Spec.ControlPlane.PKI.EncryptionAlgorithm != "x" || s.Spec.ControlPlane.BindPort != 2 || s.Spec.Kubernetes.ImageRepository != "x" || !s.Spec.Kubernetes.FeatureGates["x"] {
		t.Errorf("control-plane settings lost: %+v %+v", s.Spec.ControlPlane, s.Spec.Kubernetes)
	}
	if s.Spec.ControlPlane.PKI.Dir != pkiDir || s.Spec.ControlPlane.CertificateKey.File != certificateKeyPath || s.Spec.Join != nil {
		t.Errorf("init secrets not referenced: %+v", s.Spec.ControlPlane)
	}
}

func TestWorkerSpecHasNoControlPlane(t *testing.T) {
	cfg := &bootstrapv1.MachineadmConfig{}
	cfg.Spec.Kubernetes.ImageRepository = "registry.example.com"
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: clusterv1.MachineSpec{Version: "v1.37.2"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "fd00::1", Port: 6443}}}
	s, err := buildSpec(cfg, m, cl, plan{action: mspec.ActionJoin}, joinInfo{endpoint: "[fd00::1]:6443", caCertHash: "sha256:ab"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.ControlPlane != nil || s.Spec.Kubernetes.ImageRepository != "" || s.Spec.Join.Token.File != tokenPath || s.Spec.Kubernetes.ControlPlaneEndpoint != "[fd00::1]:6443" {
		t.Fatalf("worker spec: %+v", s.Spec)
	}
	cfg.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
	if _, err := buildSpec(cfg, m, cl, plan{action: mspec.ActionJoin}, joinInfo{}, nil); err == nil || !strings.Contains(err.Error(), "spec.controlPlane") {
		t.Fatalf("a worker with controlPlane settings: %v", err)
	}
}

func TestControlPlaneInitializedSignals(t *testing.T) {
	cl := &clusterv1.Cluster{}
	if controlPlaneInitialized(cl) {
		t.Fatal("an empty Cluster is not initialised")
	}
	cl.Status.Initialization.ControlPlaneInitialized = ptr(true)
	if !controlPlaneInitialized(cl) {
		t.Fatal("status.initialization.controlPlaneInitialized ignored")
	}
	cl = &clusterv1.Cluster{}
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue, Reason: "x"})
	if !controlPlaneInitialized(cl) {
		t.Fatal("the ControlPlaneInitialized condition ignored")
	}
}

// TestSecretRefsAreSealed builds a control-plane init spec whose file,
// registry and mirror client keys and external etcd come from Secret
// values, seals it with the real SpecSealer and checks that every secret
// value left the clear spec for the envelope, that certificates stayed
// readable where the machine spec wants them, and that the external etcd
// points at the files that carry them.
func TestSecretRefsAreSealed(t *testing.T) {
	crt, key, err := newCA(caSpec{commonName: "client"}, "")
	if err != nil {
		t.Fatal(err)
	}
	etcdCA, _, err := newCA(caSpec{commonName: "etcd-ca"}, "")
	if err != nil {
		t.Fatal(err)
	}
	secretFile := []byte("password=correct-horse-battery\n")
	cfg := &bootstrapv1.MachineadmConfig{}
	cfg.Spec.Recipients = []string{"x"}
	cfg.Spec.Host.Files = []bootstrapv1.File{
		{Path: "/etc/app/plain.conf", Content: "plain"},
		{Path: "/etc/app/secret.conf", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "conf"}}},
	}
	cfg.Spec.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{
		Host:                  "registry.example.com",
		ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "reg"}},
		Mirrors: []bootstrapv1.Mirror{{
			URL:                   "https://mirror.example.com",
			ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "reg"}},
		}},
	}}}
	cfg.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}}}}
	refs := &refValues{
		files:      map[int][]byte{1: secretFile},
		registries: map[int]tlsValues{0: {cert: crt, key: key, ca: etcdCA}},
		mirrors:    map[[2]int]tlsValues{{0, 0}: {cert: crt, key: key}},
		etcd:       &tlsValues{cert: crt, key: key, ca: etcdCA},
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1.MachineSpec{Version: "v1.37.2"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.10", Port: 6443}}}
	s, err := buildSpec(cfg, m, cl, plan{controlPlane: true, action: mspec.ActionInit}, joinInfo{}, refs)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Spec.ControlPlane.Etcd.External
	if x == nil || x.KeyFile != defaultEtcdKeyFile || x.CertFile != defaultEtcdCertFile || x.CAFile != defaultEtcdCAFile || x.Endpoints[0] != "https://10.0.0.20:2379" || s.Spec.ControlPlane.Etcd.Local != nil {
		t.Fatalf("external etcd: %+v", s.Spec.ControlPlane.Etcd)
	}
	if got := s.Spec.Host.Files[1]; got.Mode != defaultSecretFileMode || got.Encoding != "base64" {
		t.Fatalf("file from a Secret: %+v", got)
	}
	if reg := s.Spec.Host.Containerd.Registries[0]; reg.ClientKey != string(key) || reg.CACert != string(etcdCA) || reg.Mirrors[0].ClientKey != string(key) || reg.Mirrors[0].CACert != "" {
		t.Fatalf("registry client certificate: %+v", reg)
	}
	doc, err := specYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := SpecSealer{TempDir: t.TempDir()}.Seal(context.Background(), SealRequest{
		Spec: doc, Recipients: []string{id.Recipient()},
		Secrets: []SecretFile{{Path: certificateKeyPath, Data: []byte(strings.Repeat("ab", 32))}, {Path: pkiDir + "/ca.crt", Data: crt}, {Path: pkiDir + "/ca.key", Data: key}},
	})
	if err != nil {
		t.Fatal(err)
	}
	clear, env, err := seal.Split(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if f := leakcheck.Check(clear, leakcheck.Options{Known: [][]byte{secretFile, key}}); len(f) > 0 {
		t.Fatalf("the clear spec holds secrets: %v\n%s", f, clear)
	}
	if !strings.Contains(string(clear), "-----BEGIN CERTIFICATE-----") || !strings.Contains(string(clear), defaultEtcdKeyFile) {
		t.Fatalf("the external etcd's certificate files are not in the clear spec:\n%s", clear)
	}
	e, err := seal.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := seal.SpecDigest(clear)
	if err != nil {
		t.Fatal(err)
	}
	o, err := seal.Open(e, seal.Expect{ClusterName: "c", MachineName: "any", SpecDigest: digest}, id)
	if err != nil {
		t.Fatal(err)
	}
	for item, want := range map[string][]byte{
		"spec.host.files[1].content":                               secretFile,
		"spec.host.files[4].content":                               key, // the etcd key, after the two files, the CA and the cert
		"spec.host.containerd.registries[0].clientKey":             key,
		"spec.host.containerd.registries[0].mirrors[0].clientKey":  key,
		"spec.host.containerd.registries[0].mirrors[0].clientCert": crt,
	} {
		if got, ok := o.Items[item]; !ok || !bytes.Equal(got, want) {
			t.Errorf("sealed item %s: %q, want the Secret's value", item, got)
		}
	}
}
