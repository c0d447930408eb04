//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// adminClient is a client-go clientset from cp1's admin.conf, reaching the
// API server at its address on the harness bridge.
func adminClient(cp *Machine) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cp.Root, "etc/kubernetes/admin.conf"))
	if err != nil {
		return nil, fmt.Errorf("admin.conf: %w", err)
	}
	cfg.Timeout = 15 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// nodeReadyTime is when the node's Ready condition last became True, or
// the zero time when it is not Ready.
func nodeReadyTime(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// waitNodesReady waits until every named node is Ready and returns when
// each became Ready.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, names ...string) (map[string]time.Time, error) {
	ready := map[string]time.Time{}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var state []string
		for _, n := range nodes.Items {
			if t := nodeReadyTime(&n); !t.IsZero() {
				ready[n.Name] = t
			}
			state = append(state, fmt.Sprintf("%s ready=%v", n.Name, !nodeReadyTime(&n).IsZero()))
		}
		last = strings.Join(state, ", ")
		for _, name := range names {
			if _, ok := ready[name]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return ready, fmt.Errorf("nodes %v not Ready within %s (last: %s): %w", names, timeout, last, err)
	}
	return ready, nil
}

// checkControlPlaneNode checks kubeadm's mark-control-plane result: the
// control-plane role label and the NoSchedule taint.
func checkControlPlaneNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; !ok {
		return fmt.Errorf("node %s lacks label node-role.kubernetes.io/control-plane: %v", name, n.Labels)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == "node-role.kubernetes.io/control-plane" && t.Effect == corev1.TaintEffectNoSchedule
	}) {
		return fmt.Errorf("node %s lacks taint node-role.kubernetes.io/control-plane:NoSchedule: %v", name, n.Spec.Taints)
	}
	return nil
}

// waitStaticPodsRunning waits until the kube-system static pods of a
// control-plane node (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) are Running and Ready.
func waitStaticPodsRunning(ctx context.Context, cs kubernetes.Interface, node string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var notReady []string
		for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			p, err := cs.CoreV1().Pods("kube-system").Get(ctx, c+"-"+node, metav1.GetOptions{})
			if err != nil {
				notReady = append(notReady, fmt.Sprintf("%s: %v", c, err))
				continue
			}
			if p.Status.Phase != corev1.PodRunning || !podReady(p) {
				notReady = append(notReady, fmt.Sprintf("%s: %s ready=%v", c, p.Status.Phase, podReady(p)))
			}
		}
		last = strings.Join(notReady, "; ")
		return len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("static pods on %s not Running within %s (%s): %w", node, timeout, last, err)
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runTestPod creates a pause pod that the scheduler must place on node (by
// its hostname label), waits for it to run, and checks that it got an
// address from that node's pod CIDR (the CNI configuration from the spec).
func runTestPod(ctx context.Context, cs kubernetes.Interface, node hostsEntry, timeout time.Duration) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-pause-" + node.Name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node.Name},
			Containers: []corev1.Container{{
				Name: "pause", Image: pauseImage, ImagePullPolicy: corev1.PullNever,
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create test pod: %w", err)
	}
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = p
		return p.Status.Phase == corev1.PodRunning && podReady(p), nil
	})
	if err != nil {
		return got, fmt.Errorf("test pod not Running on %s within %s (last: %s): %w", node.Name, timeout, podState(got), err)
	}
	if got.Spec.NodeName != node.Name {
		return got, fmt.Errorf("test pod scheduled on %q, want %q", got.Spec.NodeName, node.Name)
	}
	_, cidr, _ := net.ParseCIDR(podCIDR(node))
	if ip := net.ParseIP(got.Status.PodIP); ip == nil || !cidr.Contains(ip) {
		return got, fmt.Errorf("test pod IP %q not in %s's pod CIDR %s", got.Status.PodIP, node.Name, cidr)
	}
	return got, nil
}

func podState(p *corev1.Pod) string {
	if p == nil {
		return "not found"
	}
	s := fmt.Sprintf("phase=%s node=%s", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			s += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			s += fmt.Sprintf(" waiting=%s(%s)", cs.State.Waiting.Reason, cs.State.Waiting.Message)
		}
	}
	return s
}
