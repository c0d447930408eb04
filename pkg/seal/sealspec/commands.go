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

// CheckResult is what `machineadm unseal --check` reports: never a secret.
type CheckResult struct {
	// By is the recipient that opened the envelope.
	By seal.OpenedBy
	// Binding is what the envelope is sealed for.
	Binding seal.Binding
	// Items are the sealed field paths, sorted.
	Items []string
}

// CheckUnseal says whether the identities in identityFile open the
// SealedSecrets document of the multi-document file data, beside the clear
// spec in the same file (its digest must be the one sealed, as on the
// machine). It does not check the machine name (a workstation is not the
// machine); the machine does. Errors are as Unseal's.
func CheckUnseal(data []byte, identityFile string) (*CheckResult, error) {
	specDoc, sealed, err := seal.Split(data)
	if err != nil {
		return nil, err
	}
	if sealed == nil {
		return nil, errors.New("the file holds no SealedSecrets document")
	}
	env, err := seal.Parse(sealed)
	if err != nil {
		return nil, err
	}
	ids, err := seal.LoadIdentityFile(identityFile)
	if err != nil {
		return nil, err
	}
	digest, err := seal.SpecDigest(specDoc)
	if err != nil {
		return nil, err
	}
	opened, err := seal.Open(env, seal.Expect{SpecDigest: digest}, ids...)
	if err != nil {
		return nil, err
	}
	res := &CheckResult{By: opened.By, Binding: seal.Binding{ClusterName: env.ClusterName, MachineName: env.MachineName, SpecDigest: env.SpecDigest}}
	for p, v := range opened.Items {
		res.Items = append(res.Items, p)
		clear(v)
	}
	slices.Sort(res.Items)
	return res, nil
}
