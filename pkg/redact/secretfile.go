package redact

import (
	"fmt"
	"io"
	"os"
)

// MaxSecretFileSize bounds a secret file: tokens and keys are far
// smaller; a device or a runaway file must not exhaust memory.
const MaxSecretFileSize = 64 << 10

// ReadSecretFile reads a regular file of at most MaxSecretFileSize bytes.
// FIFOs, devices and directories are refused without being opened for
// reading, so that a misplaced path cannot block the boot or exhaust
// memory. Both the redactor (SpecSecrets) and the phases that use the
// secrets read secret files through it.
func ReadSecretFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > MaxSecretFileSize {
		return nil, fmt.Errorf("%d bytes, more than the %d a secret file may hold", fi.Size(), MaxSecretFileSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretFileSize+1))
	if err == nil && len(data) > MaxSecretFileSize {
		err = fmt.Errorf("more than the %d bytes a secret file may hold", MaxSecretFileSize)
	}
	return data, err
}
