package builtins

// The Windows host concerns.
import (
	_ "github.com/machineadm/machineadm/pkg/host/domainjoin"
	_ "github.com/machineadm/machineadm/pkg/host/windows"
)
