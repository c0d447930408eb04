package compliance

import (
	"strconv"
	"strings"
	"testing"

	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// KernelDefaults are the values the kubelet requires with
// protectKernelDefaults (pkg/kubelet/cm setupKernelTunables reads these
// constants of component-helpers).
func TestKernelDefaultsAreTheKubelets(t *testing.T) {
	want := map[string]int{
		utilsysctl.VMOvercommitMemory: utilsysctl.VMOvercommitMemoryAlways,
		utilsysctl.VMPanicOnOOM:       utilsysctl.VMPanicOnOOMInvokeOOMKiller,
		utilsysctl.KernelPanic:        utilsysctl.KernelPanicRebootTimeout,
		utilsysctl.KernelPanicOnOops:  utilsysctl.KernelPanicOnOopsAlways,
		utilsysctl.RootMaxKeys:        utilsysctl.RootMaxKeysSetting,
		utilsysctl.RootMaxBytes:       utilsysctl.RootMaxBytesSetting,
	}
	if len(KernelDefaults) != len(want) {
		t.Errorf("KernelDefaults has %d parameters, the kubelet checks %d", len(KernelDefaults), len(want))
	}
	for k, v := range want {
		key := strings.ReplaceAll(k, "/", ".")
		if got := KernelDefaults[key]; got != strconv.Itoa(v) {
			t.Errorf("KernelDefaults[%s] = %q, the kubelet wants %d", key, got, v)
		}
	}
}

// Every check has a unique ID within its profile, a title, a note and a
// known scope and way; the checks machineadm or kubeadm satisfy on a node
// have a probe (but for the ones named here), and cluster policies have
// none.
func TestCatalogue(t *testing.T) {
	noProbe := map[string]bool{"cis-1.12/4.3.1": true}
	for _, p := range Profiles {
		if Benchmark(p) == "" {
			t.Errorf("profile %s has no benchmark name", p)
		}
		seen := map[string]bool{}
		for _, c := range Checks(p) {
			key := string(p) + "/" + c.ID
			if seen[c.ID] {
				t.Errorf("%s twice", key)
			}
			seen[c.ID] = true
			if c.Title == "" || c.Note == "" || c.Profile != p {
				t.Errorf("%s: title %q, note %q, profile %q", key, c.Title, c.Note, c.Profile)
			}
			switch c.How {
			case HowMachineadm, HowKubeadm:
				if c.Probe == nil && !noProbe[key] && c.Scope != ScopePolicies {
					t.Errorf("%s (%s) has no probe", key, c.How)
				}
			case HowClusterPolicy:
				if c.Probe != nil {
					t.Errorf("%s is a cluster policy with a node probe", key)
				}
			case HowOperator:
			default:
				t.Errorf("%s: how %q", key, c.How)
			}
			if got, ok := Lookup(p, c.ID); !ok || got.ID != c.ID {
				t.Errorf("Lookup(%s, %s) = %v, %v", p, c.ID, got.ID, ok)
			}
		}
	}
	if _, ok := Lookup(CIS112, "V-242390"); ok {
		t.Error("a STIG ID found in cis-1.12")
	}
}
