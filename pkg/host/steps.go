package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// Names of this package's own (Linux) steps, in the order Steps returns
// them.
const (
	StepFiles         = "files"
	StepKernelModules = "kernel-modules"
	StepSysctl        = "sysctl"
	StepContainerd    = "containerd"
	StepStaticPods    = "static-pods"
)

// plan is the checked input of one step, kept between Check and Apply.
type plan interface {
	apply(ctx context.Context, env *Env, rec *recorder) error
}

// releaser is a plan that holds resources (the files step's staged
// content): release frees them once the plan was applied or will not
// be (a failed check, a check run again).
type releaser interface{ release() }

// releasePlan frees what p holds, if anything.
func releasePlan(p plan) {
	if r, ok := p.(releaser); ok {
		r.release()
	}
}

// checker computes a step's plan from the spec and the host, changing
// nothing.
type checker func(ctx context.Context, env *Env) (plan, error)

// run holds the checked plans of one Steps list for one Env, and the
// dry-run view of files planned so far.
type run struct {
	plans   map[string]plan
	overlay map[string]overlayEntry
}

// Steps returns the host-preparation steps of this OS (CurrentOS) for a
// (defaulted, validated) hub spec, one per registered concern (Register)
// in order: on Linux files, kernel-modules, sysctl, containerd,
// static-pods and the concerns of other packages linked in (domain-join
// when spec.host.domainJoin is set); on Windows those of
// pkg/host/windows. Steps with nothing to do still run and report no
// change (they also remove files machineadm wrote earlier that the spec
// no longer asks for: the sysctl and modules lists, the proxy drop-in).
// A nil cfg gives the steps of an empty spec, for listing names.
func Steps(cfg *machineadm.MachineBootstrapConfig) []Step {
	return StepsFor(cfg, ConcernsFor(CurrentOS()))
}

// StepsFor returns the steps of the given concerns for cfg, in the
// concerns' order, leaving out those whose Step says the spec does not
// ask for them. This package's own concerns share one dry-run view of
// the files they plan. Every step refuses, in Check and Apply, a spec for
// another OS than this machine's (CheckOS).
func StepsFor(cfg *machineadm.MachineBootstrapConfig, cs []Concern) []Step {
	if cfg == nil {
		cfg = &machineadm.MachineBootstrapConfig{}
	}
	var mu sync.Mutex
	runs := map[*Env]*run{}
	state := func(env *Env) *run {
		mu.Lock()
		defer mu.Unlock()
		r := runs[env]
		if r == nil {
			r = &run{plans: map[string]plan{}, overlay: map[string]overlayEntry{}}
			runs[env] = r
		}
		return r
	}
	var steps []Step
	for _, c := range cs {
		var st Step
		if c.checker != nil {
			if c.when != nil && !c.when(cfg) {
				continue
			}
			st = newStep(c.Name, c.Short, c.checker(cfg), state, &mu)
		} else {
			var ok bool
			if st, ok = c.Step(cfg); !ok {
				continue
			}
		}
		st.Name, st.Short, st.Class, st.AfterKubeadm = c.Name, c.Short, c.Class, c.AfterKubeadm
		steps = append(steps, guardOS(cfg, st))
	}
	return steps
}

func newStep(name, short string, c checker, state func(*Env) *run, mu *sync.Mutex) Step {
	var release func(env *Env)
	check := func(ctx context.Context, env *Env) error {
		p, err := c(ctx, env)
		if err != nil {
			return err
		}
		r := state(env)
		mu.Lock()
		old := r.plans[name]
		r.plans[name] = p
		mu.Unlock()
		if old != nil {
			releasePlan(old)
		}
		env.hold(heldKey{r, name}, func() { release(env) })
		return nil
	}
	// release frees the plan Check kept for env, which will not be
	// applied.
	release = func(env *Env) {
		r := state(env)
		mu.Lock()
		p := r.plans[name]
		delete(r.plans, name)
		mu.Unlock()
		if p != nil {
			releasePlan(p)
		}
	}
	apply := func(ctx context.Context, env *Env) (Result, error) {
		log := env.log().With("step", name)
		start := time.Now()
		log.Info("host step start", "dryRun", env.DryRun)
		r := state(env)
		mu.Lock()
		p := r.plans[name]
		mu.Unlock()
		if p == nil {
			if err := check(ctx, env); err != nil {
				log.Error("host step failed", "phase", "check", "err", err, "duration", time.Since(start))
				return Result{}, err
			}
			mu.Lock()
			p = r.plans[name]
			mu.Unlock()
		}
		rec := &recorder{env: env, run: r, step: name}
		if env.DryRun {
			fmt.Fprintf(env.out(), "== %s: %s\n", name, short)
		}
		err := p.apply(ctx, env, rec)
		// Applied (or failed): what it staged is freed now rather than
		// at the process's exit, and an Apply again checks again. Not
		// in a dry run, whose view of the files planned (overlay) may
		// still read it in a later step: Env.Release frees it when the
		// run ends.
		if !env.DryRun {
			release(env)
		}
		if env.DryRun && !rec.res.Changed {
			fmt.Fprintln(env.out(), "(no changes)")
		}
		if err != nil {
			log.Error("host step failed", "err", err, "changes", len(rec.res.Changes), "duration", time.Since(start))
			return rec.res, err
		}
		log.Info("host step done", "changed", rec.res.Changed, "changes", len(rec.res.Changes), "duration", time.Since(start))
		return rec.res, nil
	}
	return Step{Name: name, Short: short, Apply: apply, Check: check, release: release}
}

// Check runs Check of every step, in order, and returns all their errors
// joined (each carries its report class; errclass.Of gives the
// first's). Call it with the steps that will run, before the first Apply,
// so that a bad input in any step stops the run before anything is
// written.
func Check(ctx context.Context, env *Env, steps []Step) error {
	var errs []error
	for _, s := range steps {
		start := time.Now()
		if err := s.Check(ctx, env); err != nil {
			env.log().Error("host step check failed", "step", s.Name, "err", err, "duration", time.Since(start))
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		env.log().Debug("host step checked", "step", s.Name, "duration", time.Since(start))
	}
	if len(errs) > 0 {
		// Nothing is applied: the plans of the steps that passed are
		// freed (the files step's staged content).
		for _, s := range steps {
			if s.release != nil {
				s.release(env)
			}
		}
	}
	return errors.Join(errs...)
}

// Names returns the names of steps, in order.
func Names(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
	}
	return out
}

// Hints of the report classes used by the steps.
const (
	hintWrite       = "check that the root file system is writable and has space, and that the path is not a directory or read-only mount"
	hintPayload     = "check that the URL is reachable from this machine (proxy, DNS, firewall) and serves the file"
	hintPayloadFile = "check that the file:// path is a regular file on the machine (under --root DIR for an image) that machineadm may read"
	hintTooLarge    = "machineadm fetches a spec.host.files source of 256 MiB at most: check that the URL names the file meant, or install a larger one another way"
	hintStaging     = "a spec.host.files source is staged while its sha256 is checked, beside its destination where that file system has room, else in $TMPDIR (default /tmp): check that $TMPDIR exists, is writable and has room for the largest source, or point TMPDIR elsewhere"
	hintVerify      = "the fetched content is not what the spec pinned: fix spec.host.files[].source.sha256 or the file served"
	hintKernel      = "check the kernel parameter and module names for this kernel (ls /proc/sys, modinfo)"
	hintContainerd  = "check `systemctl status containerd` and `journalctl -u containerd`; the config written is in /etc/containerd/config.toml"
	hintFileOwner   = "the owner or group must exist in the machine's /etc/passwd and /etc/group, or be numeric"
	hintStaticPods  = "the manifest must be a valid v1 Pod"
	hintServiceless = "no service manager is available to restart containerd; run prepare on the running host or restart it yourself"
)

func hostErr(hint string, format string, args ...any) error {
	return errclass.Errorf(errclass.HostPreparationFailed, hint, format, args...)
}
