package validation

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
)

// maxWaiverReason bounds a waiver's reason, in characters (runes), as
// the Cluster API CRD's maxLength counts them.
const maxWaiverReason = 1024

// reasonText reports whether r shows as text: not a space (any Unicode
// one: U+00A0, U+3000…), not a control character and not an invisible
// format character (a zero-width space, a direction mark). A reason needs
// one; the CRD's pattern says the same with [^\p{Cc}\p{Z}\p{Cf}].
func reasonText(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r)
}

// reasonBreak reports whether r may not appear in a reason: a control
// character (C0, DEL and the C1 ones such as U+0085, a line break on some
// readers) or a line or paragraph separator (U+2028, U+2029), any of
// which would start a new line in the report, a log or a unit file. The
// CRD's pattern says the same with [\p{Cc}\p{Zl}\p{Zp}].
func reasonBreak(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// validateSecurity checks spec.security: a known profile, Linux only; each
// waiver a check of that profile, once, with a one-line reason; and the
// stig profile's static pod rule (V-242397) against a StaticPods control
// plane.
func validateSecurity(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	sec := s.Security
	if sec == nil {
		return
	}
	prof := compliance.Profile(sec.Profile)
	switch {
	case sec.Profile == "":
		if len(sec.Waivers) > 0 {
			r.Errors = append(r.Errors, field.Required(p.Child("profile"), "waivers excuse checks of a profile: name the profile"))
		}
		return
	case !compliance.Known(prof):
		r.Errors = append(r.Errors, field.NotSupported(p.Child("profile"), sec.Profile, compliance.Profiles))
		return
	}
	if r.os == machineadm.OSWindows {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("profile"), "profiles are for Linux nodes: their checks read Linux files and flags"))
		return
	}
	waived := map[string]bool{}
	for i, w := range sec.Waivers {
		wp := p.Child("waivers").Index(i)
		switch _, ok := compliance.Lookup(prof, w.ID); {
		case w.ID == "":
			r.Errors = append(r.Errors, field.Required(wp.Child("id"), "the benchmark ID of the check, as docs/compliance.md lists it"))
		case !ok:
			r.Errors = append(r.Errors, field.Invalid(wp.Child("id"), w.ID, "not a check of profile "+sec.Profile+" (docs/compliance.md lists them)"))
		case waived[w.ID]:
			r.Errors = append(r.Errors, field.Duplicate(wp.Child("id"), w.ID))
		}
		waived[w.ID] = true
		switch {
		case strings.IndexFunc(w.Reason, reasonText) < 0:
			r.Errors = append(r.Errors, field.Required(wp.Child("reason"), "say why the check is waived: the report and an auditor read it"))
		case utf8.RuneCountInString(w.Reason) > maxWaiverReason:
			r.Errors = append(r.Errors, field.TooLong(wp.Child("reason"), "", maxWaiverReason))
		case strings.IndexFunc(w.Reason, reasonBreak) >= 0:
			r.Errors = append(r.Errors, field.Invalid(wp.Child("reason"), w.Reason, "one line, without control characters (C0, DEL, C1 such as U+0085) or line and paragraph separators (U+2028, U+2029)"))
		}
	}
	if prof == compliance.STIG && s.Role == machineadm.RoleControlPlane && s.ControlPlane != nil &&
		s.ControlPlane.Runtime == machineadm.RuntimeStaticPods && !waived["V-242397"] {
		r.Errors = append(r.Errors, field.Invalid(field.NewPath("spec", "controlPlane", "runtime"), s.ControlPlane.Runtime,
			"profile stig forbids the kubelet's static pod path (V-242397): use runtime Systemd, or waive V-242397 in spec.security.waivers with a reason"))
	}
}

// validateStaticPodPathOff refuses a kubelet whose staticPodPath is ""
// (off: the stig profile's default on workers, or the spec's own) on a
// control plane of runtime StaticPods: the kubelet would run none of
// kubeadm's manifests. (Workers run no static pods; runtime Systemd turns
// the path off itself.)
func validateStaticPodPathOff(r *Result, s *machineadm.MachineBootstrapSpec) {
	cp := s.ControlPlane
	if v, ok := s.Node.Kubelet.Config["staticPodPath"]; ok && v == "" && s.Role == machineadm.RoleControlPlane && cp != nil && cp.Runtime == machineadm.RuntimeStaticPods {
		r.Errors = append(r.Errors, field.Forbidden(field.NewPath("spec", "node", "kubelet", "config", "staticPodPath"),
			"\"\" turns static pods off, and runtime StaticPods runs the control plane as static pods: use runtime Systemd"))
	}
}
