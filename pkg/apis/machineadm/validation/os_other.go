//go:build !windows

package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// builtinRuntime is the runtime handler containerd always has: runc.
const builtinRuntime = "runc"

// validateOS adds the rules of the operating system machineadm is built
// for; on Linux: an offline domain join (djoin) is Windows-only. (A
// named-pipe CRI socket stays valid: a spec may be checked on Linux for
// a Windows machine.)
func validateOS(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	if dj := s.Host.DomainJoin; dj != nil && dj.OfflineJoinBlob != nil {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("host", "domainJoin", "offlineJoinBlob"), "offline domain join (djoin) is Windows-only; a Linux host joins with credentials (adcli)"))
	}
}

// splitVolume returns "" and v: Linux paths have no volume name.
func splitVolume(v string) (volume, rest string) { return "", v }
