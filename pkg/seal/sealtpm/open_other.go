//go:build !linux

package sealtpm

import "github.com/google/go-tpm/tpm2/transport"

// openDefault opens the platform's TPM (TPM Base Services on Windows).
func openDefault() (transport.TPMCloser, error) { return transport.OpenTPM() }
