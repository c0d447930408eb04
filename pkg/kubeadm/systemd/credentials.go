package systemd

import (
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// credentialFlags are, per component, the flags whose value is a file the
// process only reads (machineadm.SystemdCredentialFlags, which validation
// shares). TestSystemdExtraArgsFileFlagsAreCredentials sets the upstream
// ones.
var credentialFlags = machineadm.SystemdCredentialFlags

// credentials are the credentials of component name's command argv: one
// per argument "--FLAG=PATH" of a flag of credentialFlags with an
// absolute, clean PATH without white space or "%", in the order of
// credentialFlags and then argv. The first of a flag has the flag's name
// as its ID, a repeat of it (a flag that takes several files, such as
// --service-account-key-file) the ID FLAG-2, FLAG-3, … An argument given
// twice, or with a relative path, is left to the process to open.
func credentials(name string, argv []string) []cpunits.Credential {
	args := map[string]int{}
	for _, a := range argv[1:] {
		args[a]++
	}
	var out []cpunits.Credential
	for _, f := range credentialFlags[name] {
		n := 0
		for _, a := range argv[1:] {
			v, ok := strings.CutPrefix(a, "--"+f+"=")
			if !ok || args[a] != 1 || !machineadm.SystemdCredentialPath(v) {
				continue
			}
			n++
			cr := cpunits.Credential{ID: f, Path: v}
			if n > 1 {
				cr.ID, cr.Flag = fmt.Sprintf("%s-%d", f, n), f
			}
			out = append(out, cr)
		}
	}
	return out
}
