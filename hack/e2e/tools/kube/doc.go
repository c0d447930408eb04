// Package kube pins the Kubernetes components the e2e machines run
// (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy) to the
// same k8s.io/kubernetes version as machineadm's embedded kubeadm, in a module
// of its own so their many extra dependencies never reach machineadm's
// go.mod. Built by hack/e2e/components.sh; never imported.
package kube
