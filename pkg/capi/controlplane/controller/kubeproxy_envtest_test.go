//go:build !windows

package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// The envtest API server is every fixture's workload cluster: these tests
// create kube-system/kube-proxy there (as kubeadm's addon phase makes it:
// a kube-proxy container, here beside a sidecar that must stay as it is)
// and delete it afterwards.

func (f *fixture) createKubeProxy(image string) {
	f.t.Helper()
	labels := map[string]string{"k8s-app": kubeProxyName}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: kubeProxyName, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: kubeProxyName, Image: image, Command: []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf"}},
					{Name: "sidecar", Image: "registry.example/sidecar:v1.36.4"},
				}},
			},
		},
	}
	f.must(k8s.Create(f.ctx, ds))
	f.t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), ds); err != nil && !apierrors.IsNotFound(err) {
			f.t.Errorf("deleting the test's kube-proxy DaemonSet: %v", err)
		}
	})
}

// kubeProxy returns the DaemonSet's kube-proxy and sidecar images and its
// resourceVersion.
func (f *fixture) kubeProxy() (image, sidecar, rv string) {
	f.t.Helper()
	ds := &appsv1.DaemonSet{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: kubeProxyName}, ds))
	for _, c := range ds.Spec.Template.Spec.Containers {
		switch c.Name {
		case kubeProxyName:
			image = c.Image
		case "sidecar":
			sidecar = c.Image
		}
	}
	return image, sidecar, ds.ResourceVersion
}

// TestEnvtestKubeProxyFollowsRollout: kube-proxy stays at the old version
// while any control-plane Machine of the old version remains (the
// replacement created, Ready, the old one being deleted), with
// KubeProxyUpToDate saying why; once every Machine runs the new version
// the kube-proxy container's image tag becomes it (the repository and the
// other container kept), and later passes do not patch it again.
func TestEnvtestKubeProxyFollowsRollout(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.createKubeProxy("registry.k8s.io/kube-proxy:v1.36.4")
	old := f.grow(1)[0]
	mcp := f.reconcile()
	img, side, rv := f.kubeProxy()
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionTrue || c.Reason != ReasonUpToDate {
		t.Fatalf("KubeProxyUpToDate = %+v at the version kube-proxy runs, want True %s", c, ReasonUpToDate)
	}
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Version = "v1.37.2" })

	check := func(step string) {
		t.Helper()
		mcp := f.reconcile()
		if i, _, r := f.kubeProxy(); i != img || r != rv {
			t.Fatalf("%s: kube-proxy changed to %s (resourceVersion %s → %s) while Machine %s of v1.36.4 remains", step, i, rv, r, old.Name)
		}
		if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionFalse || c.Reason != ReasonWaitingForControlPlaneVersion || !strings.Contains(c.Message, old.Name) {
			t.Fatalf("%s: KubeProxyUpToDate = %+v, want False %s naming %s", step, c, ReasonWaitingForControlPlaneVersion, old.Name)
		}
	}
	check("replacement created") // scale up first (maxSurge 1)
	repl := f.pending()
	if repl == "" {
		t.Fatal("no replacement Machine after the version change")
	}
	f.ready(repl)
	check("replacement Ready") // the old Machine's deletion starts
	check("old Machine deleting")
	f.waitingForHook(old.Name)
	check("old Machine in its pre-terminate hook")
	f.release(old.Name)

	mcp = f.reconcile()
	img2, side2, rv2 := f.kubeProxy()
	if img2 != "registry.k8s.io/kube-proxy:v1.37.2" || side2 != side {
		t.Fatalf("after the rollout: kube-proxy %s, sidecar %s; want registry.k8s.io/kube-proxy:v1.37.2 and the sidecar kept (%s)", img2, side2, side)
	}
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionTrue || c.Reason != ReasonUpToDate || !strings.Contains(c.Message, "v1.37.2") {
		t.Fatalf("KubeProxyUpToDate = %+v after the update", c)
	}
	for range 2 {
		f.reconcile()
		if _, _, r := f.kubeProxy(); r != rv2 {
			t.Fatalf("the DaemonSet was written again (resourceVersion %s → %s) though its image was already v1.37.2", rv2, r)
		}
	}
}

// TestEnvtestKubeProxySkipAbsentAndFailures: no DaemonSet is no error
// (KubeProxyNotInstalled); the skip annotation keeps an older kube-proxy
// as it is (Unknown SkippedByAnnotation) until it is removed; an image
// pinned by digest is reported, not changed, and not retried as an error;
// an unreachable workload cluster returns the error to the controller's
// backoff with KubeProxyUpdateFailed.
func TestEnvtestKubeProxySkipAbsentAndFailures(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.grow(1)
	mcp := f.reconcile()
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionTrue || c.Reason != ReasonKubeProxyNotInstalled {
		t.Fatalf("KubeProxyUpToDate = %+v without a kube-proxy DaemonSet, want True %s", c, ReasonKubeProxyNotInstalled)
	}

	f.createKubeProxy("registry.example/k8s/kube-proxy:v1.36.3")
	_, _, rv := f.kubeProxy()
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) {
		c.Annotations = map[string]string{SkipKubeProxyAnnotation: ""}
	})
	mcp = f.reconcile()
	if _, _, r := f.kubeProxy(); r != rv {
		t.Fatal("the DaemonSet was changed though the control plane has the skip annotation")
	}
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionUnknown || c.Reason != ReasonKubeProxySkipped {
		t.Fatalf("KubeProxyUpToDate = %+v with the skip annotation", c)
	}
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { delete(c.Annotations, SkipKubeProxyAnnotation) })

	// Unreachable: the error goes back to the controller.
	f.r.WorkloadClient = func(context.Context, client.Client, *clusterv1.Cluster) (client.Client, error) {
		return nil, errors.New("connection refused")
	}
	if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.mcp)}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("reconcile with the workload cluster unreachable: %v, want its error", err)
	}
	mcp = &cpv1.MachineadmControlPlane{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.mcp), mcp))
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionFalse || c.Reason != ReasonKubeProxyUpdateFailed || !strings.Contains(c.Message, "connection refused") {
		t.Fatalf("KubeProxyUpToDate = %+v with the workload cluster unreachable", c)
	}
	f.r.WorkloadClient = func(context.Context, client.Client, *clusterv1.Cluster) (client.Client, error) { return k8s, nil }
	f.reconcile()
	if img, _, _ := f.kubeProxy(); img != "registry.example/k8s/kube-proxy:v1.36.4" {
		t.Fatalf("kube-proxy %s once the annotation is gone, want registry.example/k8s/kube-proxy:v1.36.4", img)
	}

	// Pinned by digest: reported, left alone, no error.
	ds := &appsv1.DaemonSet{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: kubeProxyName}, ds))
	pinned := "registry.example/k8s/kube-proxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	ds.Spec.Template.Spec.Containers[0].Image = pinned
	f.must(k8s.Update(f.ctx, ds))
	mcp = f.reconcile()
	if img, _, _ := f.kubeProxy(); img != pinned {
		t.Fatalf("a digest-pinned kube-proxy was changed to %s", img)
	}
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionFalse || c.Reason != ReasonKubeProxyImageUnsupported || !strings.Contains(c.Message, "digest") {
		t.Fatalf("KubeProxyUpToDate = %+v for a digest-pinned image", c)
	}
}

// TestEnvtestKubeProxyNotStaleAfterRollout: when the last old Machine is
// gone but the control plane still waits (here the replacement is no
// longer Ready), KubeProxyUpToDate must not keep saying it waits for a
// Machine that no longer exists (nor be True: kube-proxy still runs the
// old image); once the control plane is Ready again kube-proxy moves and
// the condition is True for the current generation.
func TestEnvtestKubeProxyNotStaleAfterRollout(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.createKubeProxy("registry.k8s.io/kube-proxy:v1.36.4")
	old := f.grow(1)[0]
	if c := cond(f.reconcile(), KubeProxyUpToDateCondition); c.Status != metav1.ConditionTrue {
		t.Fatalf("KubeProxyUpToDate = %+v before the rollout, want True", c)
	}
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Version = "v1.37.2" })
	f.reconcile()
	repl := f.pending()
	if repl == "" {
		t.Fatal("no replacement Machine after the version change")
	}
	f.ready(repl)
	f.reconcile() // the old Machine's deletion starts
	f.reconcile()
	f.waitingForHook(old.Name)
	f.reconcile()
	f.release(old.Name)
	f.setMachineCondition(repl, clusterv1.MachineReadyCondition, metav1.ConditionFalse, "Test")

	mcp := f.reconcile()
	if img, _, _ := f.kubeProxy(); img != "registry.k8s.io/kube-proxy:v1.36.4" {
		t.Fatalf("kube-proxy moved to %s while the control plane waits for a Machine to be Ready", img)
	}
	c := cond(mcp, KubeProxyUpToDateCondition)
	if c.Status == metav1.ConditionTrue || c.Reason != ReasonWaitingForStableControlPlane || c.ObservedGeneration != mcp.Generation || strings.Contains(c.Message, old.Name) {
		t.Fatalf("KubeProxyUpToDate = %+v while kube-proxy still runs v1.36.4 and spec.version is v1.37.2 (generation %d), want Unknown %s", c, mcp.Generation, ReasonWaitingForStableControlPlane)
	}

	f.ready(repl)
	mcp = f.reconcile()
	if img, _, _ := f.kubeProxy(); img != "registry.k8s.io/kube-proxy:v1.37.2" {
		t.Fatalf("kube-proxy %s once the control plane is Ready, want v1.37.2", img)
	}
	if c := cond(mcp, KubeProxyUpToDateCondition); c.Status != metav1.ConditionTrue || c.ObservedGeneration != mcp.Generation {
		t.Fatalf("KubeProxyUpToDate = %+v after the update", c)
	}
}
