package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The workload cluster's kubeadm configuration: kubeadm's join (both
// runtimes: machineadm runs kubeadm's join phases, and the Systemd runtime
// reads it too) takes the control plane's Kubernetes version from the
// ClusterConfiguration in this ConfigMap, not from the joining node's
// config.
const (
	kubeadmConfigNamespace  = "kube-system"
	kubeadmConfigName       = "kubeadm-config"
	clusterConfigurationKey = "ClusterConfiguration"
)

// workloadTimeout bounds each request to a workload cluster's API server.
const workloadTimeout = 30 * time.Second

// WorkloadClient opens a client to a Cluster's workload API server. The
// controller uses it only to keep kubeadm-config's version right before a
// control-plane Machine of a newer version joins, and to move the
// kube-proxy DaemonSet's image to spec.version once every control-plane
// Machine runs it (syncKubeProxy).
type WorkloadClient func(ctx context.Context, c client.Client, cl *clusterv1.Cluster) (client.Client, error)

// KubeconfigWorkloadClient is the default WorkloadClient: the admin
// kubeconfig of Secret "<cluster>-kubeconfig" (key "value", which the
// controller writes), requests bounded by 30 s. It fails when the Secret
// is missing or holds no valid kubeconfig.
func KubeconfigWorkloadClient(ctx context.Context, c client.Client, cl *clusterv1.Cluster) (client.Client, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: secretName(cl.Name, "kubeconfig")}, s); err != nil {
		return nil, fmt.Errorf("the workload cluster's kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[kubeconfigKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s key %s: %w", secretName(cl.Name, "kubeconfig"), kubeconfigKey, err)
	}
	cfg.Timeout = workloadTimeout
	return client.New(cfg, client.Options{})
}

// syncKubeadmVersion makes kubeadm-config's ClusterConfiguration name
// want when it names an older version, so that a control-plane Machine of
// version want that joins next runs want's control plane (kubeadm's join
// reads the version from there; left at the old version, the new Machine
// would run the old API server, or none when the old images are not on
// it). A newer or equal version is left as it is: a Machine of an older
// version never turns it back (Cluster API's kubeadm control-plane
// provider does the same before it scales up during an upgrade). It
// reports whether it changed the ConfigMap; a missing ConfigMap, a
// ClusterConfiguration that does not parse, or a version that is not
// semantic is an error.
func syncKubeadmVersion(ctx context.Context, wc client.Client, want string) (bool, error) {
	wantV, err := version.ParseSemantic(want)
	if err != nil {
		return false, fmt.Errorf("spec.version %q: %w", want, err)
	}
	cm := &corev1.ConfigMap{}
	if err := wc.Get(ctx, client.ObjectKey{Namespace: kubeadmConfigNamespace, Name: kubeadmConfigName}, cm); err != nil {
		return false, fmt.Errorf("ConfigMap %s/%s: %w", kubeadmConfigNamespace, kubeadmConfigName, err)
	}
	if cm.Data[clusterConfigurationKey] == "" {
		return false, fmt.Errorf("ConfigMap %s/%s has no %s", kubeadmConfigNamespace, kubeadmConfigName, clusterConfigurationKey)
	}
	cc := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data[clusterConfigurationKey]), &cc); err != nil {
		return false, fmt.Errorf("ConfigMap %s/%s key %s: %w", kubeadmConfigNamespace, kubeadmConfigName, clusterConfigurationKey, err)
	}
	cur, _ := cc["kubernetesVersion"].(string)
	if cur != "" {
		curV, err := version.ParseSemantic(cur)
		if err != nil {
			return false, fmt.Errorf("ConfigMap %s/%s: kubernetesVersion %q: %w", kubeadmConfigNamespace, kubeadmConfigName, cur, err)
		}
		if !curV.LessThan(wantV) {
			return false, nil
		}
	}
	cc["kubernetesVersion"] = want
	b, err := yaml.Marshal(cc)
	if err != nil {
		return false, err
	}
	cm.Data[clusterConfigurationKey] = string(b)
	// An Update with the read resourceVersion: a concurrent change (kubeadm's
	// upload-config of a joining node) makes it fail and the pass retry.
	if err := wc.Update(ctx, cm); err != nil {
		return false, fmt.Errorf("ConfigMap %s/%s: %w", kubeadmConfigNamespace, kubeadmConfigName, err)
	}
	return true, nil
}
