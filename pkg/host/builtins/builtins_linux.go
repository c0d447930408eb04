package builtins

// The Linux host concerns that live in their own packages; pkg/host's own
// register with it.
import (
	_ "github.com/machineadm/machineadm/pkg/host/domainjoin"
)
