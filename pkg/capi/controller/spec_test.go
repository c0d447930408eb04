package controller

import (
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
	cfg.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
	fill(reflect.ValueOf(cfg.Spec.ControlPlane).Elem())
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1.MachineSpec{Version: "v1.37.2"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "h", Port: 1}}}
	s, err := buildSpec(&cfg, m, cl, plan{controlPlane: true, action: mspec.ActionInit}, joinInfo{})
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{
		"node": {cfg.Spec.Node, s.Spec.Node}, "host": {cfg.Spec.Host, s.Spec.Host}, "report": {cfg.Spec.Report, s.Spec.Report},
		"controlPlane.apiServer": {cfg.Spec.ControlPlane.APIServer, s.Spec.ControlPlane.APIServer},
		"controlPlane.etcd":      {cfg.Spec.ControlPlane.Etcd, s.Spec.ControlPlane.Etcd},
	} {
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
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
	s, err := buildSpec(cfg, m, cl, plan{action: mspec.ActionJoin}, joinInfo{endpoint: "[fd00::1]:6443", caCertHash: "sha256:ab"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.ControlPlane != nil || s.Spec.Kubernetes.ImageRepository != "" || s.Spec.Join.Token.File != tokenPath || s.Spec.Kubernetes.ControlPlaneEndpoint != "[fd00::1]:6443" {
		t.Fatalf("worker spec: %+v", s.Spec)
	}
	cfg.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
	if _, err := buildSpec(cfg, m, cl, plan{action: mspec.ActionJoin}, joinInfo{}); err == nil || !strings.Contains(err.Error(), "spec.controlPlane") {
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
