//go:build !windows

package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// kubeadmConfigVersion reads the envtest workload's kubeadm-config: its
// ClusterConfiguration's kubernetesVersion and clusterName.
func (f *fixture) kubeadmConfigVersion() (string, string) {
	f.t.Helper()
	cm := &corev1.ConfigMap{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: kubeadmConfigNamespace, Name: kubeadmConfigName}, cm))
	cc := map[string]any{}
	f.must(yaml.Unmarshal([]byte(cm.Data[clusterConfigurationKey]), &cc))
	v, _ := cc["kubernetesVersion"].(string)
	n, _ := cc["clusterName"].(string)
	return v, n
}

func (f *fixture) setKubeadmConfig(cc string) {
	f.t.Helper()
	cm := &corev1.ConfigMap{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: kubeadmConfigNamespace, Name: kubeadmConfigName}, cm))
	cm.Data = map[string]string{clusterConfigurationKey: cc}
	f.must(k8s.Update(f.ctx, cm))
}

// TestEnvtestUpgradeSetsKubeadmVersion: a version change rolls the control
// plane by joining Machines of the new version, and kubeadm's join runs
// the version the workload cluster's kubeadm-config names; so before the
// first new Machine is created, kubeadm-config's ClusterConfiguration
// names spec.version (its other fields kept). When the workload cluster
// cannot be reached, no Machine is created and ScalingUp says why. A
// Machine of an older version (a scale-up while kubeadm-config is newer)
// never turns the version back.
func TestEnvtestUpgradeSetsKubeadmVersion(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.setKubeadmConfig("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: c1\nkubernetesVersion: v1.36.4\n")
	f.grow(1)
	if v, _ := f.kubeadmConfigVersion(); v != "v1.36.4" {
		t.Fatalf("kubeadm-config at %s after creation at v1.36.4", v)
	}
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Version = "v1.37.2" })

	// Unreachable workload cluster: nothing is created.
	f.r.WorkloadClient = func(context.Context, client.Client, *clusterv1.Cluster) (client.Client, error) {
		return nil, errors.New("connection refused")
	}
	if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.mcp)}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("reconcile with the workload cluster unreachable: %v, want its error", err)
	}
	if n := len(f.live()); n != 1 {
		t.Fatalf("%d Machines while kubeadm-config could not be updated, want the old one only", n)
	}
	mcp := &cpv1.MachineadmControlPlane{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.mcp), mcp))
	if c := cond(mcp, ScalingUpCondition); c.Reason != ReasonKubeadmConfigNotUpdated || !strings.Contains(c.Message, "v1.37.2") {
		t.Fatalf("ScalingUp = %+v, want reason %s naming v1.37.2", c, ReasonKubeadmConfigNotUpdated)
	}

	f.r.WorkloadClient = func(context.Context, client.Client, *clusterv1.Cluster) (client.Client, error) { return k8s, nil }
	f.reconcile()
	repl := f.pending()
	if repl == "" {
		t.Fatal("no replacement Machine after the version change")
	}
	if v, name := f.kubeadmConfigVersion(); v != "v1.37.2" || name != "c1" {
		t.Fatalf("kubeadm-config: kubernetesVersion %s clusterName %q when the v1.37.2 Machine was created, want v1.37.2 and c1 kept", v, name)
	}

	// Never back.
	f.setKubeadmConfig("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.38.0\n")
	changed, err := syncKubeadmVersion(f.ctx, k8s, "v1.37.2")
	if err != nil || changed {
		t.Fatalf("syncKubeadmVersion over a newer kubeadm-config: changed %v, %v", changed, err)
	}
	if v, _ := f.kubeadmConfigVersion(); v != "v1.38.0" {
		t.Fatalf("kubeadm-config turned back to %s", v)
	}
	f.setKubeadmConfig("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.4\n")
}
