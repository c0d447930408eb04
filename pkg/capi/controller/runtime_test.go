package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// TestRuntimeAnnotation: the control-plane provider's runtime annotation
// reaches spec.controlPlane.runtime; a bad value or a worker's config with
// it is refused with the annotation's path.
func TestRuntimeAnnotation(t *testing.T) {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1.MachineSpec{Version: "v1.37.2"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.1", Port: 6443}}}
	cfg := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RuntimeAnnotation: "Systemd"}}}
	s, err := buildSpec(cfg, m, cl, plan{controlPlane: true, action: mspec.ActionInit}, joinInfo{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.ControlPlane.Runtime != mspec.RuntimeSystemd {
		t.Fatalf("runtime %q, want Systemd", s.Spec.ControlPlane.Runtime)
	}
	delete(cfg.Annotations, RuntimeAnnotation)
	if s, err = buildSpec(cfg, m, cl, plan{controlPlane: true, action: mspec.ActionInit}, joinInfo{}, nil); err != nil || s.Spec.ControlPlane.Runtime != "" {
		t.Fatalf("without the annotation: runtime %q, %v", s.Spec.ControlPlane.Runtime, err)
	}
	cfg.Annotations[RuntimeAnnotation] = "Docker"
	if _, err := buildSpec(cfg, m, cl, plan{controlPlane: true, action: mspec.ActionInit}, joinInfo{}, nil); err == nil || !strings.Contains(err.Error(), RuntimeAnnotation) {
		t.Fatalf("bad runtime: %v", err)
	}
	cfg.Annotations[RuntimeAnnotation] = "Systemd"
	if _, err := buildSpec(cfg, m, cl, plan{action: mspec.ActionJoin}, joinInfo{endpoint: "10.0.0.1:6443", caCertHash: "sha256:ab"}, nil); err == nil || !strings.Contains(err.Error(), "only for control-plane Machines") {
		t.Fatalf("a worker with a runtime: %v", err)
	}
}
