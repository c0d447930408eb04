package validation

import (
	"encoding/hex"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// SecretShapeProblem says what is wrong with v, a resolved secret (read
// from its file and trimmed) of format, for after the secret's name, or ""
// when the machine accepts it: a bootstrap token
// (machineadm.SecretFormatBootstrapToken) must be
// "[a-z0-9]{6}.[a-z0-9]{16}", a certificate key
// (machineadm.SecretFormatCertificateKey) 32 bytes in hex, either case, as
// kubeadm decodes it (an inline value is held to lower case by Validate).
// Other formats have no shape here. The phrase never quotes v. It is the
// one check of the machine's inputs-check (pki.CheckInputs in pkg/kubeadm/pki) and of
// `machineadm seal`, which refuses such a file before it is sealed.
func SecretShapeProblem(format, v string) string {
	switch format {
	case machineadm.SecretFormatBootstrapToken:
		if !bootstraputil.IsValidBootstrapToken(v) {
			return "not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}"
		}
	case machineadm.SecretFormatCertificateKey:
		if b, err := hex.DecodeString(v); err != nil || len(b) != 32 {
			return "not 64 hex characters (a 32-byte AES key)"
		}
	}
	return ""
}
