// Command gen-capi generates the Cluster API provider's manifests into
// contrib/cluster-api: the CRDs (controller-gen, plus Cluster API's
// contract-version label), the RBAC role (controller-gen, from the
// reconciler's +kubebuilder:rbac markers), the Deployment, clusterctl's
// metadata.yaml, bootstrap-components.yaml (everything the one controller
// needs, in one file, as clusterctl installs it) and
// control-plane-components.yaml (the control-plane CRDs again, for
// clusterctl's control-plane provider; see ControlPlaneComponentsFile).
// Run it through `make capi-manifests`.
//
// Usage: gen-capi -controller-gen PATH [-out DIR]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	cg := flag.String("controller-gen", "bin/controller-gen", "controller-gen binary (built from hack/tools)")
	out := flag.String("out", "contrib/cluster-api", "output directory")
	flag.Parse()
	if err := generate(*cg, ".", *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen-capi:", err)
		os.Exit(1)
	}
}
