package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestRegisterRefusesBadConcerns: a concern registered twice for one OS,
// for an unknown OS, or without a name, OS or step panics and is not
// added.
func TestRegisterRefusesBadConcerns(t *testing.T) {
	step := func(*machineadm.MachineBootstrapConfig) (Step, bool) { return Step{}, false }
	for name, c := range map[string]Concern{
		"twice":      {Name: StepSysctl, OS: []string{OSLinux}, Step: step},
		"unknown OS": {Name: "test-only", OS: []string{"plan9"}, Step: step},
		"no name":    {OS: []string{OSLinux}, Step: step},
		"no OS":      {Name: "test-only", Step: step},
		"no step":    {Name: "test-only", OS: []string{OSLinux}},
	} {
		before := len(Concerns())
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			Register(c)
		}()
		if len(Concerns()) != before {
			t.Errorf("%s: the concern was added", name)
		}
	}
}

// TestStepsFollowTheRegistry: Steps gives one step per concern of this
// OS that an empty spec asks for (the conditional ones, accounts and
// apiserver-config, are left out), in the registry's order, with name,
// help, class and AfterKubeadm from the concern.
func TestStepsFollowTheRegistry(t *testing.T) {
	empty := &machineadm.MachineBootstrapConfig{}
	var cs []Concern
	for _, c := range ConcernsFor(CurrentOS()) {
		if c.when != nil && !c.when(empty) {
			continue
		}
		if c.checker == nil {
			if _, ok := c.Step(empty); !ok {
				continue
			}
		}
		cs = append(cs, c)
	}
	steps := Steps(nil)
	if len(steps) != len(cs) || len(cs) == 0 {
		t.Fatalf("%d steps for %d concerns", len(steps), len(cs))
	}
	for i, c := range cs {
		s := steps[i]
		if s.Name != c.Name || s.Short != c.Short || s.Class != c.Class || s.AfterKubeadm != c.AfterKubeadm {
			t.Errorf("step %d = %s %q %s %v, concern %s %q %s %v", i, s.Name, s.Short, s.Class, s.AfterKubeadm, c.Name, c.Short, c.Class, c.AfterKubeadm)
		}
	}
	if want := []string{StepFiles, StepKernelModules, StepSysctl, StepContainerd, StepStaticPods}; CurrentOS() == OSLinux && !slices.Equal(Names(steps), want) {
		t.Errorf("steps %s, want %s", strings.Join(Names(steps), ","), strings.Join(want, ","))
	}
}
