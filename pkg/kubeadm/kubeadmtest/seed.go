// Package kubeadmtest prepares, for tests against a real API server
// (envtest), what kubeadm's upgrade code reads from a cluster.
package kubeadmtest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	nodeutil "k8s.io/component-helpers/node/util"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// SeedCluster creates, through cs, what kubeadm's upgrade data reads from
// a cluster: the kube-system namespace (when missing), the kubeadm-config
// ConfigMap holding clusterConfig (a ClusterConfiguration document), a
// kubelet-config ConfigMap (cgroupDriver systemd), a kube-proxy ConfigMap,
// and a Node named after this host, as kubeadm names the node when there
// is no kubelet.conf. Any error fails t.
func SeedCluster(t testing.TB, cs kubernetes.Interface, clusterConfig string) {
	t.Helper()
	ctx := t.Context()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string]string{
		kubeadmconstants.KubeadmConfigConfigMap:            {kubeadmconstants.ClusterConfigurationConfigMapKey: clusterConfig},
		kubeadmconstants.KubeletBaseConfigurationConfigMap: {kubeadmconstants.KubeletBaseConfigurationConfigMapKey: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n"},
		kubeadmconstants.KubeProxyConfigMap:                {kubeadmconstants.KubeProxyConfigMapKey: "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}, Data: data}
		if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	host, err := nodeutil.GetHostname("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: host}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
