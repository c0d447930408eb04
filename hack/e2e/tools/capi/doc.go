// Package capi pins Cluster API's core manager (sigs.k8s.io/cluster-api/core)
// and clusterctl (sigs.k8s.io/cluster-api/cmd/clusterctl) for the Cluster API
// e2e's management cluster, in a module of its own: Cluster API v1.14.2
// requires k8s.io v0.36 and controller-runtime v0.24, while machineadm's main
// module (machineadm-controller) is on k8s.io v0.37 and controller-runtime
// v0.25. Cluster API's own go.mod replaces sigs.k8s.io/cluster-api/api with
// ./api, which does not apply to a dependent module; the replace below pins
// the published module instead. Never imported; built with
// `go build sigs.k8s.io/cluster-api/core` in this directory.
package capi
