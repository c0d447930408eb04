package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/kmod"
	"github.com/machineadm/machineadm/pkg/host/sysctl"
)

func init() {
	Register(Concern{Order: 20, Name: StepKernelModules, Short: "Load kernel modules and persist them in /etc/modules-load.d", Class: errclass.HostPreparationFailed,
		OS: []string{OSLinux}, Fields: []string{"spec.host.kernelModules"}, Validation: "validateHost",
		checker: func(cfg *machineadm.MachineBootstrapConfig) checker { return kmodChecker(&cfg.Spec.Host) }})
}

type kmodPlan struct {
	modules []string // persisted, in order
}

// kmodModules is spec.host.kernelModules followed by the modules the
// sysctl keys need (br_netfilter for net.bridge.*), each once.
func kmodModules(h *machineadm.Host) []string {
	out := slices.Clone(h.KernelModules)
	for _, m := range sysctl.RequiredModules(h.Sysctl) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return slices.Compact(out)
}

// kmodChecker checks that modules that must be loaded can be: the
// kernel supports loadable modules and modprobe exists.
func kmodChecker(h *machineadm.Host) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		p := &kmodPlan{modules: kmodModules(h)}
		if env.Offline {
			return p, nil
		}
		missing := p.missing(env)
		if len(missing) == 0 {
			return p, nil
		}
		if !kmod.ModulesSupported(env.proc()) {
			env.log().Warn("kernel without loadable module support; assuming the modules are built in", "modules", missing)
			return p, nil
		}
		if mp, ok := env.modules().(kmod.Modprobe); ok {
			if _, err := mp.Binary(); err != nil {
				return nil, hostErr(hintKernel, "spec.host.kernelModules: %v must be loaded: %w", missing, err)
			}
		}
		return p, nil
	}
}

func (p *kmodPlan) missing(env *Env) []string {
	var out []string
	for _, m := range p.modules {
		if !kmod.Present(env.sys(), env.proc(), m) {
			out = append(out, m)
		}
	}
	return out
}

func (p *kmodPlan) apply(ctx context.Context, env *Env, rec *recorder) error {
	d := files.Desired{Path: kmod.ConfPath, Content: kmod.Render(p.modules), Mode: 0o644}
	if len(p.modules) == 0 {
		d = files.Desired{Path: kmod.ConfPath, Remove: true}
	}
	if _, err := rec.file(d, "spec.host.kernelModules"); err != nil {
		return err
	}
	if env.Offline {
		if len(p.modules) > 0 {
			rec.note("offline root: kernel modules are persisted, not loaded")
		}
		return nil
	}
	supported := kmod.ModulesSupported(env.proc())
	for _, m := range p.missing(env) {
		if !supported {
			rec.note(fmt.Sprintf("kernel module %s not seen and the kernel cannot load modules; assuming it is built in", m))
			continue
		}
		err := rec.live("load kernel module "+m, func() error { return env.modules().Load(ctx, m) })
		if err != nil {
			return hostErr(hintKernel, "spec.host.kernelModules: %w", err)
		}
	}
	return nil
}
