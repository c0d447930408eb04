package host

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// Operating systems a Concern runs on (Concern.OS), named as GOOS.
const (
	// OSLinux is the Linux host preparation; it also stands for every
	// other GOOS except windows (see CurrentOS).
	OSLinux = "linux"
	// OSWindows is the Windows host preparation.
	OSWindows = "windows"
)

// Concern is one host-preparation concern as registered (Register): the
// one value from which the workflow's host phases, `prepare`'s help, the
// phase table of docs/host-preparation.md and the field-ownership fence
// are all derived.
type Concern struct {
	// Name is the phase name shown in reports and used by --skip-phases,
	// for example "sysctl". Unique among the concerns of one OS.
	Name string
	// Short is the one-line description of the phase.
	Short string
	// Order places the phase among the others of its OS, ascending:
	// files 10, domain-join 15, kernel-modules 20, windows-features 25,
	// sysctl 30, containerd 40, kubelet-service 50, firewall 60,
	// static-pods 90.
	Order int
	// OS lists the operating systems the concern runs on: OSLinux,
	// OSWindows or both. Required.
	OS []string
	// Class is the report class of the phase's failures whose error
	// carries none (errclass).
	Class errclass.Class
	// AfterKubeadm says that the phase belongs after kubeadm's
	// control-plane phases in `machineadm bootstrap` (static pods:
	// kubeadm's preflight refuses a non-empty manifest directory).
	AfterKubeadm bool
	// Fields are the spec fields the concern owns, as json paths from the
	// document root with "." between names and no list indexes, for
	// example "spec.host.sysctl"; a path owns everything below it. Every
	// field of spec.host (and of the Cluster API MachineadmConfig's
	// spec.host) must be owned by a concern or excluded with a reason
	// (the fence in pkg/host/builtins).
	Fields []string
	// Validation names where the concern's spec validation lives: a
	// function of pkg/apis/machineadm/validation, which may not import
	// this package (the API imports no runtime, see docs/design.md).
	// For the docs; "" when the fields need no more than their types.
	Validation string
	// Step returns the concern's step for a validated, defaulted spec
	// (its Check reads and changes nothing; its Apply changes the host or,
	// in a dry run, prints), and false when the spec does not ask for the
	// concern: the phase is then not part of the workflow. Name, Short
	// and Class of the returned step are set from the Concern. Required
	// unless the concern is one of this package's own.
	Step func(cfg *machineadm.MachineBootstrapConfig) (Step, bool)

	// checker, for this package's own concerns, computes the step's plan
	// from the spec; their steps share one dry-run view of the files.
	checker func(cfg *machineadm.MachineBootstrapConfig) checker
	// when, for this package's own concerns, says whether the spec asks
	// for the concern; nil: always (the step then reports no change).
	when func(cfg *machineadm.MachineBootstrapConfig) bool
}

// RunsOn says whether the concern runs on os (OSLinux or OSWindows).
func (c Concern) RunsOn(os string) bool { return slices.Contains(c.OS, os) }

var (
	concernsMu sync.Mutex
	// concerns holds every registered concern, sorted by Order then Name.
	concerns []Concern
)

// Register adds a host concern to the registry. Call it from the init
// function of the concern's package, and import that package from the
// builtins file of each OS it runs on (pkg/host/builtins). It panics on a
// concern without name, OS or step, with an OS other than OSLinux and
// OSWindows, or whose name is already registered for one of its OSes:
// those are programming errors found by any test.
func Register(c Concern) {
	if c.Name == "" || len(c.OS) == 0 || (c.Step == nil && c.checker == nil) {
		panic(fmt.Sprintf("host.Register: concern %q needs a name, an OS and a step", c.Name))
	}
	concernsMu.Lock()
	defer concernsMu.Unlock()
	for _, os := range c.OS {
		if os != OSLinux && os != OSWindows {
			panic(fmt.Sprintf("host.Register: concern %q: unknown OS %q", c.Name, os))
		}
		for _, o := range concerns {
			if o.Name == c.Name && o.RunsOn(os) {
				panic(fmt.Sprintf("host.Register: concern %q registered twice for %s", c.Name, os))
			}
		}
	}
	c.OS, c.Fields = slices.Clone(c.OS), slices.Clone(c.Fields)
	i, _ := slices.BinarySearchFunc(concerns, c, func(a, b Concern) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(strings.Join(a.OS, ","), strings.Join(b.OS, ","))
	})
	concerns = slices.Insert(concerns, i, c)
}

// Concerns returns every registered concern, of every OS, in order (by
// Order, then Name, then OS). Which are registered depends on the concern packages
// linked in (pkg/host/builtins links all of them).
func Concerns() []Concern {
	concernsMu.Lock()
	defer concernsMu.Unlock()
	return slices.Clone(concerns)
}

// ConcernsFor returns the registered concerns that run on os, in order.
func ConcernsFor(os string) []Concern {
	var out []Concern
	for _, c := range Concerns() {
		if c.RunsOn(os) {
			out = append(out, c)
		}
	}
	return out
}

// CurrentOS is the concern OS of this binary: OSWindows on Windows,
// OSLinux on every other GOOS (as the Linux steps always ran there).
func CurrentOS() string { return currentOS }
