package sealtpm

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/go-tpm/tpm2/transport"
	"github.com/google/go-tpm/tpm2/transport/linuxtpm"
)

// DefaultDevices are the TPM device nodes OpenTPM tries on Linux, in
// order: the kernel's resource manager first.
var DefaultDevices = []string{"/dev/tpmrm0", "/dev/tpm0"}

func openDefault() (transport.TPMCloser, error) {
	var errs []error
	for _, d := range DefaultDevices {
		if _, err := os.Stat(d); err != nil {
			errs = append(errs, err)
			continue
		}
		t, err := linuxtpm.Open(d)
		if err == nil {
			return t, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no TPM 2.0 device: %w", errors.Join(errs...))
}
