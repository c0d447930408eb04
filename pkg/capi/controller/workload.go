package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// kubeconfigKey is the key of the kubeconfig in Cluster API's
// "<cluster>-kubeconfig" Secret.
const kubeconfigKey = "value"

// workloadTimeout bounds each request to a workload cluster.
const workloadTimeout = 10 * time.Second

// WorkloadClientFunc returns a client of a Cluster's workload cluster:
// the core API group's typed client (bootstrap token Secrets, the
// kubeadm-certs Secret, Nodes), the one group the bootstrap provider
// uses. Not client-go's full clientset: building one constructs a client
// for each of its ~50 API groups, which keeps their code in the binary
// and pages several MiB of it in (docs/design.md, "Memory").
type WorkloadClientFunc func(ctx context.Context, c client.Client, cl *clusterv1.Cluster) (corev1client.CoreV1Interface, error)

// KubeconfigSecretClient builds the workload client from the Cluster's
// "<cluster>-kubeconfig" Secret (key "value"), as every Cluster API
// component does. A missing Secret wraps errNoKubeconfig.
func KubeconfigSecretClient(ctx context.Context, c client.Client, cl *clusterv1.Cluster) (corev1client.CoreV1Interface, error) {
	name := secretName(cl.Name, "kubeconfig")
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, kubeconfigMissing(name)
		}
		return nil, err
	}
	return workloadFromSecret(s)
}

func kubeconfigMissing(name string) error { return fmt.Errorf("Secret %s: %w", name, errNoKubeconfig) }

// workloadFromSecret builds a workload client from the kubeconfig in s.
func workloadFromSecret(s *corev1.Secret) (corev1client.CoreV1Interface, error) {
	rc, err := clientcmd.RESTConfigFromKubeConfig(s.Data[kubeconfigKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", s.Name, err)
	}
	rc.Timeout = workloadTimeout
	// No client-side rate limit, as controller-runtime's client for the
	// management cluster: the workload API server's priority and
	// fairness limits the requests. The client is kept per Cluster and
	// shared by every reconcile (Reconciler.workloadClient); client-go's
	// default, 5 a second, would throttle a fleet's joins.
	rc.QPS = -1
	rc.UserAgent = "machineadm-controller"
	return corev1client.NewForConfig(rc)
}
