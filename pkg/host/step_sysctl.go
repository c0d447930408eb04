package host

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/kmod"
	"github.com/machineadm/machineadm/pkg/host/sysctl"
)

func init() {
	Register(Concern{Order: 30, Name: StepSysctl, Short: "Set kernel parameters live and persist them in /etc/sysctl.d", Class: errclass.HostPreparationFailed,
		OS: []string{OSLinux}, Fields: []string{"spec.host.sysctl"}, Validation: "validateHost, validateHostPrep",
		checker: func(cfg *machineadm.MachineBootstrapConfig) checker { return sysctlChecker(cfg.Spec.Host.Sysctl) }})
}

type sysctlPlan struct {
	params map[string]string
}

// sysctlChecker checks every key against /proc/sys. A key provided by a
// module that is not loaded yet (net.bridge.* before br_netfilter) is
// checked again after the kernel-modules step, when it is applied.
func sysctlChecker(params map[string]string) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		p := &sysctlPlan{params: params}
		if env.Offline || len(params) == 0 {
			return p, nil
		}
		if _, err := os.Stat(env.procSys()); err != nil {
			return nil, hostErr(hintKernel, "spec.host.sysctl: no sysctl tree at %s: %w", env.procSys(), err)
		}
		var errs []error
		for _, k := range sysctl.SortedKeys(params) {
			err := sysctl.Exists(env.procSys(), k)
			if err == nil {
				continue
			}
			if m := sysctl.ModuleFor(k); m != "" && errors.Is(err, sysctl.ErrUnknownKey) && !kmod.Present(env.sys(), env.proc(), m) {
				continue // appears once the kernel-modules step loads m
			}
			errs = append(errs, hostErr(hintKernel, "spec.host.sysctl[%s]: %w", k, err))
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return p, nil
	}
}

func (p *sysctlPlan) apply(ctx context.Context, env *Env, rec *recorder) error {
	d := files.Desired{Path: sysctl.ConfPath, Content: sysctl.Render(p.params), Mode: 0o644}
	if len(p.params) == 0 {
		d = files.Desired{Path: sysctl.ConfPath, Remove: true}
	}
	if _, err := rec.file(d, "spec.host.sysctl"); err != nil {
		return err
	}
	if env.Offline {
		if len(p.params) > 0 {
			rec.note("offline root: kernel parameters are persisted, not set live")
		}
		return nil
	}
	for _, k := range sysctl.SortedKeys(p.params) {
		want := sysctl.Normalize(p.params[k])
		cur, err := sysctl.Read(env.procSys(), k)
		if err != nil && env.DryRun && sysctl.ModuleFor(k) != "" {
			cur = "(after loading " + sysctl.ModuleFor(k) + ")"
		} else if err != nil && !errors.Is(err, os.ErrPermission) {
			return hostErr(hintKernel, "spec.host.sysctl[%s]: %w", k, err)
		}
		if cur == want {
			continue
		}
		line := fmt.Sprintf("set %s = %s (was %s)", k, want, cur)
		if err := rec.live(line, func() error { return sysctl.Set(env.procSys(), k, p.params[k]) }); err != nil {
			return hostErr(hintKernel, "spec.host.sysctl[%s]: %w", k, err)
		}
	}
	if !env.DryRun {
		return reportEffective(env, rec, p.params)
	}
	return nil
}

// hintSysctlEffective is the hint of a sysctl step that failed because a
// key does not hold the spec's value after all writes.
const hintSysctlEffective = "a kernel parameter does not hold the value spec.host.sysctl sets after all writes: another write (one key changing another), the kernel or a process on the host set it back. Compare `sysctl KEY` with the spec, and remove the key from the spec or stop what overrides it; the report's sysctl list shows desired and effective values"

// reportEffective re-reads every key after all writes and records, for
// each, the desired and the effective value (Result.Sysctl, and a line in
// Result.Notes). A key whose effective value now differs from the desired
// one fails the step (HostPreparationFailed, naming every such key): the
// spec says what the node needs, and a node that silently runs with
// another value fails later and far from the cause. A key that a sysctl.d
// file applied after machineadm's sets otherwise at the next boot is a
// warning (Result.Warnings, and the log): it holds now, and an
// administrator's file may be meant. A key the kernel does not let anyone
// read is recorded as not readable.
func reportEffective(env *Env, rec *recorder, params map[string]string) error {
	values, err := sysctl.Effective(env.root(), env.procSys(), params)
	if err != nil {
		env.log().Warn("sysctl.d files could not all be read; the values at the next boot may differ from those shown", "err", err)
	}
	rec.res.Sysctl = values
	var differ []error
	for _, v := range values {
		eff := v.Effective
		if v.Err != nil {
			eff = "(not readable)"
		}
		line := fmt.Sprintf("sysctl %s: desired %s, effective %s", v.Key, v.Desired, eff)
		if v.Boot != nil {
			line += fmt.Sprintf(", at boot %s (%s)", v.Boot.Value, v.Boot.File)
		}
		rec.res.Notes = append(rec.res.Notes, line)
		switch {
		case v.Err == nil && v.Effective != v.Desired:
			env.log().Error("kernel parameter differs from spec.host.sysctl after all writes", "key", v.Key, "desired", v.Desired, "effective", v.Effective)
			differ = append(differ, fmt.Errorf("spec.host.sysctl[%s]: desired %q, effective %q after all writes", v.Key, v.Desired, v.Effective))
		case v.Boot != nil:
			w := fmt.Sprintf("sysctl %s: %s sets %s at the next boot, after machineadm's %s (desired %s)", v.Key, v.Boot.File, v.Boot.Value, sysctl.ConfPath, v.Desired)
			rec.res.Warnings = append(rec.res.Warnings, w)
			env.log().Warn("a sysctl.d file applied after machineadm's sets another value at boot", "key", v.Key, "desired", v.Desired, "boot", v.Boot.Value, "file", v.Boot.File)
		default:
			env.log().Debug("kernel parameter", "key", v.Key, "desired", v.Desired, "effective", eff)
		}
	}
	if len(differ) > 0 {
		return errclass.New(errclass.HostPreparationFailed, hintSysctlEffective, errors.Join(differ...))
	}
	return nil
}
