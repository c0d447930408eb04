//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"
)

// The addons kubeadm deploys and the scenarios' network probe, all
// imported from images.sh's tarballs.
const (
	netcheckImage = imageRepository + "/netcheck:v1"
	// clusterDNSName is the API server's Service, which only the cluster
	// DNS (CoreDNS) can resolve.
	clusterDNSName = "kubernetes.default.svc.cluster.local."
	echoService    = "e2e-echo"
)

// checkAddonsEnabled reads the ClusterConfiguration that kubeadm's
// upload-config stored in the kube-system/kubeadm-config ConfigMap: it
// must not mark CoreDNS or kube-proxy disabled (both run), or `kubeadm
// upgrade apply` would leave them at their old versions.
func checkAddonsEnabled(ctx context.Context, cs kubernetes.Interface) error {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var cc kubeadmv1beta4.ClusterConfiguration
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc); err != nil {
		return fmt.Errorf("kubeadm-config's ClusterConfiguration: %w", err)
	}
	if cc.KubernetesVersion == "" {
		return fmt.Errorf("kubeadm-config holds no ClusterConfiguration: %q", cm.Data)
	}
	if cc.DNS.Disabled || cc.Proxy.Disabled {
		return fmt.Errorf("kubeadm-config's ClusterConfiguration marks addons disabled (dns %t, proxy %t) although both run", cc.DNS.Disabled, cc.Proxy.Disabled)
	}
	return nil
}

// waitDaemonPodsRunning waits until the kube-system pods labelled
// k8s-app=app run Ready on every named node.
func waitDaemonPodsRunning(ctx context.Context, cs kubernetes.Interface, app string, timeout time.Duration, nodes ...string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=" + app})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		running := map[string]bool{}
		var state []string
		for i := range pods.Items {
			p := &pods.Items[i]
			ok := p.Status.Phase == corev1.PodRunning && podReady(p)
			running[p.Spec.NodeName] = running[p.Spec.NodeName] || ok
			state = append(state, fmt.Sprintf("%s on %s: %s", p.Name, p.Spec.NodeName, podState(p)))
		}
		last = strings.Join(state, "; ")
		for _, n := range nodes {
			if !running[n] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s pods not Running and Ready on %v within %s (last: %s): %w", app, nodes, timeout, last, err)
	}
	return nil
}

// waitDeploymentReady waits until every replica of a kube-system
// Deployment is ready.
func waitDeploymentReady(ctx context.Context, cs kubernetes.Interface, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		last = fmt.Sprintf("%d/%d ready", d.Status.ReadyReplicas, want)
		return d.Status.ReadyReplicas >= want && want > 0, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s not ready within %s (%s): %w", name, timeout, last, err)
	}
	return nil
}

// checkClusterNetwork proves the cluster's Service network end to end:
// an echo pod on server (tolerating the control-plane taint) behind a
// ClusterIP Service, and a probe pod on client that must resolve
// kubernetes.default.svc.cluster.local to the API server's ClusterIP
// through CoreDNS and get the echo pod's answer through the Service's
// ClusterIP (kube-proxy's rules on the client node, then the pod route
// to the server node).
func checkClusterNetwork(ctx context.Context, cs kubernetes.Interface, server, client hostsEntry, timeout time.Duration) (string, error) {
	api, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	echo := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-echo-" + server.Name, Namespace: "default", Labels: map[string]string{"app": echoService}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": server.Name},
			Tolerations: []corev1.Toleration{{
				Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
			}},
			Containers: []corev1.Container{{
				Name: "echo", Image: netcheckImage, ImagePullPolicy: corev1.PullNever,
				Args:           []string{"serve", "-addr", ":8080"},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, echo, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create echo pod: %w", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: echoService, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": echoService},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	got, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = cs.CoreV1().Services("default").Get(ctx, echoService, metav1.GetOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("create service: %w", err)
	}
	clusterIP := got.Spec.ClusterIP
	var echoPod *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, echo.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		echoPod = p
		return p.Status.Phase == corev1.PodRunning && podReady(p), nil
	})
	if err != nil {
		return "", fmt.Errorf("echo pod not Ready on %s within %s (last: %s): %w", server.Name, timeout, podState(echoPod), err)
	}
	if echoPod.Spec.NodeName != server.Name {
		return "", fmt.Errorf("echo pod on %q, want %q", echoPod.Spec.NodeName, server.Name)
	}

	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-probe-" + client.Name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector:  map[string]string{"kubernetes.io/hostname": client.Name},
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: netcheckImage, ImagePullPolicy: corev1.PullNever,
				Args: []string{"probe", "-timeout", "90s",
					"-resolve", clusterDNSName, "-want-ip", api.Spec.ClusterIP,
					"-get", "http://" + clusterIP + "/", "-want-body", "netcheck " + echo.Name},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, probe, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create probe pod: %w", err)
	}
	var done *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout+30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, probe.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		done = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	logs := podLogs(ctx, cs, probe.Name)
	if err != nil {
		return logs, fmt.Errorf("probe pod on %s did not finish (last: %s): %w", client.Name, podState(done), err)
	}
	if done.Spec.NodeName != client.Name {
		return logs, fmt.Errorf("probe pod on %q, want %q", done.Spec.NodeName, client.Name)
	}
	if done.Status.Phase != corev1.PodSucceeded {
		return logs, fmt.Errorf("probe pod on %s %s: %s", client.Name, done.Status.Phase, strings.TrimSpace(logs))
	}
	return logs, nil
}

// podLogs returns a default-namespace pod's log (bounded), or why not.
func podLogs(ctx context.Context, cs kubernetes.Interface, name string) string {
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	limit := int64(16 << 10)
	b, err := cs.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{LimitBytes: &limit}).DoRaw(lctx)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}
