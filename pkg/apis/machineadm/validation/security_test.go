package validation

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func TestValidateSecurity(t *testing.T) {
	sec := func(s *machineadm.Security) func(c *spec) {
		return func(c *spec) { c.Spec.Security = s }
	}
	const p = "spec.security."
	runCases(t, []vcase{
		{name: "cis profile", base: cpInit, mutate: sec(&machineadm.Security{Profile: "cis-1.12"})},
		{name: "cis profile worker with waiver", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "image policy keeps 0644"}}})},
		{name: "unknown profile", base: cpInit, mutate: sec(&machineadm.Security{Profile: "cis-1.11"}), want: []fe{{p + "profile", nsup}}},
		{name: "waivers without profile", base: worker, mutate: sec(&machineadm.Security{Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "x"}}}), want: []fe{{p + "profile", req}}},
		{name: "waiver of another profile's check", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "V-242390", Reason: "x"}}}), want: []fe{{p + "waivers[0].id", inv}}},
		{name: "waiver without id and reason", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{Reason: "  "}}}), want: []fe{{p + "waivers[0].id", req}, {p + "waivers[0].reason", req}}},
		{name: "waiver twice", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "a"}, {ID: "4.1.9", Reason: "b"}}}), want: []fe{{p + "waivers[1].id", dup}}},
		{name: "reason with a line break", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "a\nExecStart=x"}}}), want: []fe{{p + "waivers[0].reason", inv}}},
		{name: "reason too long", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: strings.Repeat("r", 1025)}}}), want: []fe{{p + "waivers[0].reason", "FieldValueTooLong"}}},
		// The reason rules the CRD's pattern and maxLength state too: any
		// Unicode space and invisible format characters are no text, C1
		// controls and U+2028/U+2029 break the line, and the bound counts
		// characters, not bytes.
		{name: "reason of no-break spaces", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "\u00a0\u3000"}}}), want: []fe{{p + "waivers[0].reason", req}}},
		{name: "reason of zero-width characters", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "\u200b\u200e\ufeff"}}}), want: []fe{{p + "waivers[0].reason", req}}},
		{name: "reason with a C1 next line", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "a\u0085ExecStart=x"}}}), want: []fe{{p + "waivers[0].reason", inv}}},
		{name: "reason with a line separator", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "a\u2028second line"}}}), want: []fe{{p + "waivers[0].reason", inv}}},
		{name: "reason with a paragraph separator", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "a\u2029b"}}}), want: []fe{{p + "waivers[0].reason", inv}}},
		{name: "reason of 1024 two-byte characters", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: strings.Repeat("é", 1024)}}})},
		{name: "reason of 1025 two-byte characters", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: strings.Repeat("é", 1025)}}}), want: []fe{{p + "waivers[0].reason", "FieldValueTooLong"}}},
		{name: "reason with a no-break space inside", base: worker, mutate: sec(&machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "accepted\u00a0by the AO"}}})},
		{name: "stig with static pods", base: cpInit, mutate: sec(&machineadm.Security{Profile: "stig"}), want: []fe{{"spec.controlPlane.runtime", inv}}},
		{name: "stig with static pods waived", base: cpInit, mutate: sec(&machineadm.Security{Profile: "stig", Waivers: []machineadm.Waiver{{ID: "V-242397", Reason: "static pods accepted by the AO"}}})},
		{name: "stig worker", base: worker, mutate: sec(&machineadm.Security{Profile: "stig"})},
		// The units read their keys and kubeconfigs as credentials and
		// etcd runs as etcd: no check needs a waiver.
		{name: "cis on a Systemd control plane needs no waiver", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			toSystemd(c, &b)
			c.Spec.Security = &machineadm.Security{Profile: "cis-1.12"}
		}},
	})
}

// A Windows spec with a profile is refused at spec.security.profile.
func TestValidateSecurityWindows(t *testing.T) {
	c := base(t, worker)
	c.Spec.OS = machineadm.OSWindows
	c.Spec.Security = &machineadm.Security{Profile: "cis-1.12"}
	r := Validate(c)
	for _, e := range r.Errors {
		if e.Field == "spec.security.profile" && e.Type == forb {
			return
		}
	}
	t.Errorf("no Forbidden error at spec.security.profile: %v", r.Errors)
}

// A spec with a profile, defaulted (the remediation applied), is valid:
// the profile's own settings pass validation on every role.
func TestProfileDefaultsValidate(t *testing.T) {
	for _, k := range []baseKind{cpInit, cpJoin, worker} {
		for _, prof := range []string{"cis-1.12", "stig"} {
			c := base(t, k)
			c.Spec.Security = &machineadm.Security{Profile: prof}
			if prof == "stig" && c.Spec.ControlPlane != nil {
				c.Spec.ControlPlane.Runtime = machineadm.RuntimeSystemd
				c.Spec.ControlPlane.Binaries = nil
				c.Spec.Host.StaticPods = nil
			}
			machineadm.SetDefaults(c)
			if r := Validate(c); len(r.Errors) > 0 {
				t.Errorf("%s %s: %v", k, prof, r.Errors)
			}
		}
	}
}

// The static pod path off is refused on a StaticPods control plane and
// valid on a worker.
func TestValidateStaticPodPathOff(t *testing.T) {
	runCases(t, []vcase{
		{name: "path off", base: worker, mutate: func(c *spec) { c.Spec.Node.Kubelet.Config["staticPodPath"] = "" }},
		{name: "path off on a static pod control plane", base: cpInit, mutate: func(c *spec) {
			c.Spec.Node.Kubelet.Config["staticPodPath"] = ""
		}, want: []fe{{"spec.node.kubelet.config.staticPodPath", forb}}},
	})
}

// A spec whose extraArgs give audit or anonymous flags keeps them under a
// profile: the profile does not add the typed fields that own (and would
// refuse) those flags.
func TestProfileKeepsExtraArgsAuditFlags(t *testing.T) {
	c := base(t, cpInit)
	c.Spec.ControlPlane.APIServer.ExtraArgs = []machineadm.Arg{{Name: "audit-log-maxage", Value: "30"}, {Name: "anonymous-auth", Value: "false"}}
	c.Spec.Security = &machineadm.Security{Profile: "cis-1.12"}
	machineadm.SetDefaults(c)
	if r := Validate(c); len(r.Errors) > 0 {
		t.Errorf("%v", r.Errors)
	}
	if a := c.Spec.ControlPlane.APIServer; a.Audit != nil || (a.Authentication != nil && a.Authentication.Anonymous != nil) {
		t.Errorf("profile added typed audit or anonymous settings beside the extraArgs: %+v %+v", a.Audit, a.Authentication)
	}
}
