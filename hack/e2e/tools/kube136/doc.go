// Package kube136 pins the previous-minor Kubernetes components
// (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// kube-proxy at k8s.io/kubernetes v1.36.x) that the upgrade e2e bootstraps
// a cluster with before `machineadm upgrade` moves it to the embedded
// kubeadm's version. A module of its own, beside hack/e2e/tools/kube, so the
// two versions' dependencies and stamps never mix. Built by
// hack/e2e/components.sh; never imported.
package kube136
