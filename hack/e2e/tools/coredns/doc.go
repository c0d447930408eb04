// Package coredns pins the CoreDNS server the e2e cluster runs as its DNS
// addon to the version kubeadm deploys (constants.CoreDNSVersion of the
// embedded k8s.io/kubernetes), in a module of its own so CoreDNS's many
// dependencies (cloud DNS SDKs, etcd client) never reach machineadm's or the
// other tools' go.mod. Built by hack/e2e/components.sh; never imported.
package coredns
