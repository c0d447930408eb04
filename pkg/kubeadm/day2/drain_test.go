package day2

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// fakeAPIServer is client-go's fake clientset with the eviction
// subresource announced and answered (an eviction deletes its pod): no
// API server runs in unit tests. It records the evictions.
func fakeAPIServer(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *[]string) {
	c := fake.NewClientset(objs...)
	c.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true},
		{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1", Namespaced: true},
	}}}
	var evicted []string
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		e, ok := ca.GetObject().(*policyv1.Eviction)
		if !ok {
			return false, nil, nil
		}
		evicted = append(evicted, e.Namespace+"/"+e.Name)
		return true, nil, c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), e.Namespace, e.Name)
	})
	// The fake ignores field selectors; kubectl's drain lists the node's
	// pods with spec.nodeName=NODE.
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		la, ok := a.(k8stesting.ListAction)
		node, found := "", false
		if ok {
			node, found = la.GetListRestrictions().Fields.RequiresExactMatch("spec.nodeName")
		}
		if !found {
			return false, nil, nil
		}
		obj, err := c.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		all := obj.(*corev1.PodList)
		out := &corev1.PodList{}
		for _, p := range all.Items {
			if p.Spec.NodeName == node {
				out.Items = append(out.Items, p)
			}
		}
		return true, out, nil
	})
	return c, &evicted
}

func pod(name, node, ownerKind string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}}
	if ownerKind != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: "owner", UID: "u", Controller: &yes}}
	}
	return p
}

// TestDrainEvictsThroughTheEvictionAPI drains a node with kubectl's drain
// library against a fake API server: the node is cordoned, its
// ReplicaSet's pod evicted (not deleted), the DaemonSet's pod kept, the
// other node's pod untouched; Uncordon makes it schedulable again.
func TestDrainEvictsThroughTheEvictionAPI(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}
	c, evicted := fakeAPIServer(t, node, pod("web", "w1", "ReplicaSet"), pod("agent", "w1", "DaemonSet"), pod("other", "w2", "ReplicaSet"))
	// kubectl's drain lists the DaemonSet owner to keep its pod.
	c.Tracker().Add(&appsDaemonSet)
	lines, err := Drainer{Client: c}.Drain(context.Background(), "w1", 30*time.Second)
	if err != nil {
		t.Fatalf("%v (%v)", err, lines)
	}
	n, _ := c.CoreV1().Nodes().Get(context.Background(), "w1", metav1.GetOptions{})
	if !n.Spec.Unschedulable {
		t.Errorf("the node is not cordoned")
	}
	if strings.Join(*evicted, ",") != "default/web" {
		t.Errorf("evicted %v, want default/web alone", *evicted)
	}
	for _, deleted := range c.Actions() {
		if deleted.GetVerb() == "delete" && deleted.GetResource().Resource == "pods" {
			t.Errorf("a pod was deleted, not evicted: %v", deleted)
		}
	}
	if !strings.Contains(strings.Join(lines, "\n"), "evicted 1 pod(s)") {
		t.Errorf("lines %q", lines)
	}
	if err := (Drainer{Client: c}).Uncordon(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.CoreV1().Nodes().Get(context.Background(), "w1", metav1.GetOptions{}); n.Spec.Unschedulable {
		t.Errorf("the node is still cordoned")
	}
}

// appsDaemonSet owns the "agent" pod (pod's owner "owner").
var appsDaemonSet = appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default", UID: "u"}}

// TestDrainHonoursADisruptionBudget: an eviction the API server refuses
// (429, as for a PodDisruptionBudget that allows none) is retried until
// the drain's timeout, then the drain fails, classified, and the pod is
// still there.
func TestDrainHonoursADisruptionBudget(t *testing.T) {
	c, _ := fakeAPIServer(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}, pod("web", "w1", "ReplicaSet"))
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 1)
	})
	_, err := Drainer{Client: c}.Drain(context.Background(), "w1", 2*time.Second)
	if err == nil {
		t.Fatal("the drain evicted a pod its budget protects")
	}
	if cl, _ := errclass.Of(err); cl != errclass.Timeout && cl != errclass.DrainFailed {
		t.Errorf("class %s: %v", cl, err)
	}
	if _, gerr := c.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{}); gerr != nil {
		t.Errorf("the protected pod is gone: %v", gerr)
	}
}
