package main

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestDeploymentRecreates checks that the controller's Deployment replaces
// its pod by stopping the old one first (strategy Recreate), both when it
// is created and when clusterctl init or upgrade merge-patches the
// generated Deployment over one already there (clusterctl's client.Merge)
// that the API server defaulted to a rolling update and that an operator
// put on the host network: the result must be Recreate without rolling
// parameters (the API server refuses Recreate with them), and the
// operator's host network stays. With a rolling update on a one-node
// management cluster, the new pod cannot take the old one's host ports and
// the provider never becomes Available.
func TestDeploymentRecreates(t *testing.T) {
	gen, err := json.Marshal(deployment())
	if err != nil {
		t.Fatal(err)
	}
	var created appsv1.Deployment
	if err := json.Unmarshal(gen, &created); err != nil {
		t.Fatal(err)
	}
	if s := created.Spec.Strategy; s.Type != appsv1.RecreateDeploymentStrategyType || s.RollingUpdate != nil {
		t.Errorf("generated Deployment: strategy %+v, want Recreate without rollingUpdate", s)
	}

	quarter := intstr.FromString("25%")
	existing := created.DeepCopy()
	existing.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter},
	}
	existing.Spec.Template.Spec.HostNetwork = true
	existing.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	cur, err := json.Marshal(existing)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := jsonpatch.MergePatch(cur, gen)
	if err != nil {
		t.Fatal(err)
	}
	var got appsv1.Deployment
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	if s := got.Spec.Strategy; s.Type != appsv1.RecreateDeploymentStrategyType || s.RollingUpdate != nil {
		t.Errorf("generated Deployment merge-patched over a rolling one: strategy %+v, want Recreate without rollingUpdate", s)
	}
	if !got.Spec.Template.Spec.HostNetwork {
		t.Error("merge patch dropped the operator's hostNetwork; the test no longer models clusterctl's patch")
	}
}
