package main

import (
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func main() {}
