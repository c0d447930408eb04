// Package kubectl pins the kubectl that `make demo` and `make demo-kubectl`
// run on the host, inside the e2e's network namespace, to the same
// k8s.io/kubernetes version as the cluster's components. A module of its
// own, apart from hack/e2e/tools/kube, so adding kubectl (and its
// kustomize dependencies) leaves that module's go.sum, and with it the
// cached builds of the cluster's components, as they are. Built by
// hack/e2e/components.sh; never imported.
package kubectl
