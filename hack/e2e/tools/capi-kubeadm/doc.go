// Package capikubeadm pins Cluster API's kubeadm bootstrap provider
// (sigs.k8s.io/cluster-api/bootstrap/kubeadm, the capi-kubeadm-bootstrap
// manager) for the side-by-side scale benchmark (hack/bench/capi). Its
// go.mod is hack/e2e/tools/capi's plus the modules the kubeadm provider's
// Ignition support needs; a module of its own so that the core manager's
// go.sum, and with it the cached capi-manager's stamp, stay as they are.
// Never imported; built with `go build sigs.k8s.io/cluster-api/bootstrap/kubeadm`
// in this directory.
package capikubeadm
