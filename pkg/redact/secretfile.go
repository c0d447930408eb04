package redact

import (
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// MaxSecretFileSize bounds a secret file: tokens and keys are far
// smaller; a device or a runaway file must not exhaust memory.
const MaxSecretFileSize = 64 << 10

// ReadSecretFile reads a regular file of at most MaxSecretFileSize bytes
// through readlimit.File: FIFOs, devices and directories are refused
// without blocking (*readlimit.NotRegularError), so that a misplaced path
// cannot block the boot, and a larger file is refused
// (*readlimit.TooLargeError) without exhausting memory. Both the redactor
// (SpecSecrets) and the phases that use the secrets read secret files
// through it.
func ReadSecretFile(path string) ([]byte, error) {
	return readlimit.File(path, MaxSecretFileSize)
}
