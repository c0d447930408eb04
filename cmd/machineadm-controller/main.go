// Command machineadm-controller is machineadm's Cluster API bootstrap
// provider (contract v1beta2): it reconciles MachineadmConfigs into data
// Secrets holding a rendered stub and the sealed machine spec. See
// docs/cluster-api.md.
package main

import (
	"os"

	"github.com/machineadm/machineadm/pkg/capi/manager"
)

func main() {
	os.Exit(manager.Main(os.Args[1:], os.Stderr))
}
