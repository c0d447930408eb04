package sealspec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealage"
	"github.com/machineadm/machineadm/pkg/seal/sealtpm"
)

// KeygenTypes are the identity types `machineadm keygen --type` creates,
// with their suites (the first is the default).
var KeygenTypes = map[string][]string{
	seal.TypeHPKE: {seal.HPKESuiteP384, seal.HPKESuiteMLKEM768P256},
	sealage.Type:  {"x25519", "hybrid"},
	sealtpm.Type:  {"p256"},
}

// Keygen creates an identity of type typ ("hpke", "age" or "tpm2") and
// suite (empty for the type's default; see KeygenTypes), writes it to the
// new file out (mode 0600; an existing file is never replaced) and returns
// its recipient string for `machineadm seal --recipient`. A tpm2 identity
// is enrolled in this machine's TPM (sealtpm.OpenTPM); its file holds the
// TPM-wrapped key, which opens only in that TPM.
func Keygen(typ, suite, out string) (recipient string, err error) {
	suites, ok := KeygenTypes[typ]
	if !ok {
		return "", fmt.Errorf("unknown identity type %q: want hpke, age or tpm2", typ)
	}
	if suite == "" {
		suite = suites[0]
	}
	if !slices.Contains(suites, suite) {
		return "", fmt.Errorf("unknown %s suite %q: want one of %v", typ, suite, suites)
	}
	if out == "" {
		return "", errors.New("an output file is required")
	}
	var line string
	switch typ {
	case seal.TypeHPKE:
		id, err := seal.GenerateHPKEIdentity(suite)
		if err != nil {
			return "", err
		}
		line, recipient = id.String(), id.Recipient()
	case sealage.Type:
		if line, recipient, err = sealage.Generate(suite == "hybrid"); err != nil {
			return "", err
		}
	case sealtpm.Type:
		id, err := sealtpm.Generate()
		if err != nil {
			return "", err
		}
		line, recipient = id.String(), id.Recipient()
	}
	if err := seal.WriteIdentityFile(out, line, recipient); err != nil {
		return "", err
	}
	return recipient, nil
}
