//go:build tools

// Package tools pins the code generators machineadm runs with `go run`
// (controller-gen for the Cluster API provider's CRDs, RBAC and deepcopy).
// It has its own go.mod so the generators' dependencies stay out of the
// main module.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
