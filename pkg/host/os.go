package host

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// currentOS is the concerns' OS of this binary (CurrentOS): the OS
// machineadm is built for, the default of spec.os.
const currentOS = string(machineadm.DefaultOS)

// CheckOS refuses a spec written for another operating system than this
// machine's (spec.os, machineadm.OSOf, against CurrentOS): a Linux
// machineadm validates, seals and renders a spec.os windows spec, but
// never prepares a Linux host with it, nor the reverse. The error names
// the field spec.os and has class InvalidSpec (exit code 2, nothing
// changed on the host); nil for a spec of this OS or a nil cfg.
func CheckOS(cfg *machineadm.MachineBootstrapConfig) error {
	fe := OSMismatch(cfg)
	if fe == nil {
		return nil
	}
	return errclass.New(errclass.InvalidSpec, "run machineadm with this spec on a "+fmt.Sprint(fe.BadValue)+" machine, or set spec.os to the machine's OS", fe)
}

// OSMismatch is CheckOS's finding as a field error at spec.os, or nil.
func OSMismatch(cfg *machineadm.MachineBootstrapConfig) *field.Error {
	if cfg == nil {
		return nil
	}
	specOS := machineadm.OSOf(&cfg.Spec)
	if string(specOS) == CurrentOS() {
		return nil
	}
	return field.Invalid(field.NewPath("spec", "os"), string(specOS),
		fmt.Sprintf("the spec is for %s machines and this machine runs %s: it can be validated, sealed and rendered here, not applied", specOS, CurrentOS()))
}

// guardOS makes st refuse, in Check and in Apply, a cfg for another OS
// (CheckOS) before it reads or changes anything.
func guardOS(cfg *machineadm.MachineBootstrapConfig, st Step) Step {
	check, apply := st.Check, st.Apply
	if check != nil {
		st.Check = func(ctx context.Context, env *Env) error {
			if err := CheckOS(cfg); err != nil {
				return err
			}
			return check(ctx, env)
		}
	}
	if apply != nil {
		st.Apply = func(ctx context.Context, env *Env) (Result, error) {
			if err := CheckOS(cfg); err != nil {
				return Result{}, err
			}
			return apply(ctx, env)
		}
	}
	return st
}
