// Command machineadm prepares a host and bootstraps it into a Kubernetes
// cluster from one machine spec. See README.md.
package main

import (
	"os"

	"github.com/machineadm/machineadm/pkg/cmd"
)

func main() {
	os.Exit(cmd.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
