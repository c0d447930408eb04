package seal

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	spec := "apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec:\n  role: Worker\n"
	env := "apiVersion: machineadm.io/v1alpha1\nkind: SealedSecrets\n"
	for name, in := range map[string]string{
		"spec then sealed": spec + "---\n" + env,
		"sealed then spec": "---\n" + env + "--- # the spec\n" + spec + "---\n",
	} {
		s, e, err := Split([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(s) != spec || string(e) != env {
			t.Errorf("%s: spec %q sealed %q", name, s, e)
		}
	}
	s, e, err := Split([]byte(spec))
	if err != nil || string(s) != spec || e != nil {
		t.Errorf("plain spec: %q %q %v", s, e, err)
	}
	if got := string(Join([]byte(spec), []byte(env))); got != spec+"---\n"+env {
		t.Errorf("Join: %q", got)
	}
	for name, in := range map[string]string{
		"two specs":  spec + "---\n" + spec,
		"two sealed": spec + "---\n" + env + "---\n" + env,
		"no spec":    "---\n" + env,
		"bad yaml":   spec + "---\n" + "kind: [\n",
		"too large":  strings.Repeat("#", MaxSealedSpecBytes+1),
	} {
		if _, _, err := Split([]byte(in)); err == nil {
			t.Errorf("%s: split without error", name)
		}
	}
}
