package windows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/domainjoin"
)

// Step names of the Windows host preparation, in order.
const (
	StepFeatures       = "windows-features"
	StepContainerd     = "containerd"
	StepKubeletService = "kubelet-service"
	StepFirewall       = "firewall"
)

// Runner runs a Windows tool (dism.exe, netsh.exe) and returns its
// combined output; a non-zero exit is an error (*exec.ExitError).
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ServiceState is what the service control manager holds for a service.
type ServiceState struct {
	// CommandLine is the BinaryPathName.
	CommandLine string
	// AutoStart is true for SERVICE_AUTO_START.
	AutoStart bool
	// Dependencies are the services it depends on.
	Dependencies []string
}

// ServiceManager is the part of the service control manager the steps
// use (golang.org/x/sys/windows/svc/mgr on Windows, a fake in tests).
type ServiceManager interface {
	// Query returns the service's state, or false when it does not exist.
	Query(name string) (ServiceState, bool, error)
	// Create registers d; Update rewrites an existing d.Name to match d.
	Create(d ServiceDefinition) error
	Update(d ServiceDefinition) error
	// Restart stops the service when it runs and starts it, waiting
	// (bounded) for it to run.
	Restart(name string) error
}

// Options say how the Windows steps reach Windows.
type Options struct {
	// Runner runs dism and netsh. Default: the real one (Windows only).
	Runner Runner
	// Services reaches the service control manager. Default: svc/mgr
	// (Windows only).
	Services ServiceManager
	// MachineadmPath and KubeletPath are the programs of the kubelet
	// service. Default: this executable and DefaultKubeletPath.
	MachineadmPath, KubeletPath string
	// DomainJoin configures the domain-join step (default: netapi32).
	DomainJoin domainjoin.Options
	// ContainerdConfigVersion is the config.toml schema (2 or 3).
	// Default: spec.host.containerd.configVersion, else the installed
	// containerd's (see configVersion).
	ContainerdConfigVersion int
}

// Steps returns the Windows host steps for a validated, defaulted spec,
// reaching Windows through o: the registered Windows concerns (see
// register.go and host.ConcernsFor) in their order — domain-join (only
// with spec.host.domainJoin, first: its reboot comes before anything
// else; see domainjoin.Step), windows-features (Containers must be
// enabled), containerd (config.toml in its Windows form, containerd
// restarted on change; only with spec.host.containerd), kubelet-service
// (registered or corrected) and firewall (inbound rules). Each is
// idempotent and honours env.DryRun. host.Steps gives the same steps with
// the default Options.
func Steps(cfg *machineadm.MachineBootstrapConfig, o Options) []host.Step {
	if cfg == nil {
		cfg = &machineadm.MachineBootstrapConfig{}
	}
	o = o.withDefaults()
	var cs []host.Concern
	for _, c := range host.ConcernsFor(host.OSWindows) {
		switch b := builders[c.Name]; {
		case b != nil:
			c.Step = func(cfg *machineadm.MachineBootstrapConfig) (host.Step, bool) { return b(cfg, o) }
		case c.Name == domainjoin.StepName:
			c.Step = func(cfg *machineadm.MachineBootstrapConfig) (host.Step, bool) {
				dj := cfg.Spec.Host.DomainJoin
				return domainjoin.Step(dj, o.DomainJoin), dj != nil
			}
		}
		cs = append(cs, c)
	}
	return host.StepsFor(cfg, cs)
}

// builders make this package's steps for a spec with explicit Options,
// by concern name (register.go).
var builders = map[string]func(cfg *machineadm.MachineBootstrapConfig, o Options) (host.Step, bool){}

// featuresStep checks the Windows features a worker needs.
func featuresStep(_ *machineadm.MachineBootstrapConfig, o Options) (host.Step, bool) {
	return host.Step{
		Check: func(context.Context, *host.Env) error { return nil },
		Apply: func(ctx context.Context, env *host.Env) (host.Result, error) { return features(ctx, o) },
	}, true
}

// containerdWindowsStep writes config.toml in its Windows form; only with
// spec.host.containerd.
func containerdWindowsStep(cfg *machineadm.MachineBootstrapConfig, o Options) (host.Step, bool) {
	cd := cfg.Spec.Host.Containerd
	if cd == nil {
		return host.Step{}, false
	}
	var v versionChoice
	return host.Step{
		Check: func(ctx context.Context, env *host.Env) error {
			_, err := ContainerdConfig(cd, v.get(ctx, env, cd, o))
			return hostErr(err)
		},
		Apply: func(ctx context.Context, env *host.Env) (host.Result, error) {
			return containerdStep(env, cd, v.get(ctx, env, cd, o), o)
		},
	}, true
}

// kubeletServiceStep registers the kubelet service.
func kubeletServiceStep(_ *machineadm.MachineBootstrapConfig, o Options) (host.Step, bool) {
	return host.Step{
		Check: func(context.Context, *host.Env) error { return nil },
		Apply: func(ctx context.Context, env *host.Env) (host.Result, error) {
			return EnsureService(env, o.Services, KubeletService(o.MachineadmPath, o.KubeletPath))
		},
	}, true
}

// firewallStep adds the inbound firewall rules.
func firewallStep(_ *machineadm.MachineBootstrapConfig, o Options) (host.Step, bool) {
	return host.Step{
		Check: func(context.Context, *host.Env) error { return nil },
		Apply: func(ctx context.Context, env *host.Env) (host.Result, error) { return firewall(ctx, env, o) },
	}, true
}

func (o Options) withDefaults() Options {
	if o.Runner == nil {
		o.Runner = defaultRunner()
	}
	if o.Services == nil {
		o.Services = defaultServices()
	}
	if o.MachineadmPath == "" {
		if exe, err := os.Executable(); err == nil {
			o.MachineadmPath = exe
		}
	}
	return o
}

func features(ctx context.Context, o Options) (host.Result, error) {
	var res host.Result
	var errs []error
	for _, f := range RequiredFeatures {
		out, err := o.Runner.Run(ctx, "dism.exe", DismArgs(f)...)
		if err != nil {
			errs = append(errs, errclass.Errorf(errclass.HostPreparationFailed, "run `dism /Online /Get-FeatureInfo /FeatureName:"+f+"` as an administrator", "checking Windows feature %s: %w: %s", f, err, strings.TrimSpace(string(out))))
			continue
		}
		state, err := FeatureState(out)
		if err != nil {
			err = errclass.Errorf(errclass.HostPreparationFailed, "run `dism /Online /English /Get-FeatureInfo /FeatureName:"+f+"` as an administrator and check that it prints the feature's State",
				"checking Windows feature %s: %w: %.200q", f, err, strings.TrimSpace(string(out))) // at most 200 runes of DISM's output
		} else {
			err = CheckFeature(f, state)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.Changes = append(res.Changes, "Windows feature "+f+" is enabled")
	}
	return res, errors.Join(errs...)
}

func containerdStep(env *host.Env, cd *machineadm.Containerd, version int, o Options) (host.Result, error) {
	var res host.Result
	data, err := ContainerdConfig(cd, version)
	if err != nil {
		return res, hostErr(err)
	}
	path := hostPath(env, cd.ConfigFile)
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, hostErr(err)
	}
	if string(cur) == string(data) {
		res.Changes = []string{cd.ConfigFile + " is up to date"}
		return res, nil
	}
	res.Changed = true
	if env.DryRun {
		fmt.Fprintf(out(env), "would write %s (%d bytes) and restart containerd\n", cd.ConfigFile, len(data))
		res.Changes = []string{fmt.Sprintf("would write %s (%d bytes)", cd.ConfigFile, len(data)), "would restart containerd"}
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return res, hostErr(err)
	}
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return res, hostErr(err)
	}
	res.Changes = []string{fmt.Sprintf("wrote %s (%d bytes)", cd.ConfigFile, len(data))}
	if err := o.Services.Restart(ContainerdServiceName); err != nil {
		return res, errclass.Errorf(errclass.ContainerRuntimeUnavailable, "check `Get-Service containerd` and containerd's log; the config written is "+cd.ConfigFile, "restarting containerd: %w", err)
	}
	res.Changes = append(res.Changes, "restarted containerd")
	return res, nil
}

// EnsureService registers d, or corrects an existing service with that
// name whose command line, start type or dependencies differ; a matching
// service is left unchanged.
func EnsureService(env *host.Env, m ServiceManager, d ServiceDefinition) (host.Result, error) {
	var res host.Result
	want := ServiceState{CommandLine: d.CommandLine(), AutoStart: d.AutoStart, Dependencies: d.Dependencies}
	cur, exists, err := m.Query(d.Name)
	if err != nil {
		return res, errclass.Errorf(errclass.KubeletFailed, "", "querying service %s: %w", d.Name, err)
	}
	if exists && cur.CommandLine == want.CommandLine && cur.AutoStart == want.AutoStart && slices.Equal(cur.Dependencies, want.Dependencies) {
		res.Changes = []string{"service " + d.Name + " is registered: " + want.CommandLine}
		return res, nil
	}
	verb, past, do := "register", "registered", m.Create
	if exists {
		verb, past, do = "update", "updated", m.Update
	}
	res.Changed = true
	line := fmt.Sprintf("%s service %s: %s", verb, d.Name, want.CommandLine)
	if env.DryRun {
		fmt.Fprintln(out(env), "would "+line)
		res.Changes = []string{"would " + line}
		return res, nil
	}
	if err := do(d); err != nil {
		return res, errclass.Errorf(errclass.KubeletFailed, "run machineadm as an administrator; `sc.exe qc "+d.Name+"` shows the service", "%s service %s: %w", verb, d.Name, err)
	}
	res.Changes = []string{past + strings.TrimPrefix(line, verb)}
	return res, nil
}

func firewall(ctx context.Context, env *host.Env, o Options) (host.Result, error) {
	var res host.Result
	for _, r := range FirewallRules() {
		if _, err := o.Runner.Run(ctx, "netsh.exe", r.ShowArgs()...); err == nil {
			continue
		}
		res.Changed = true
		line := fmt.Sprintf("add firewall rule %q (%s %s inbound)", r.Name, r.Protocol, r.Ports)
		if env.DryRun {
			fmt.Fprintln(out(env), "would "+line)
			res.Changes = append(res.Changes, "would "+line)
			continue
		}
		if outp, err := o.Runner.Run(ctx, "netsh.exe", r.AddArgs()...); err != nil {
			return res, errclass.Errorf(errclass.HostPreparationFailed, "run machineadm as an administrator; Windows Firewall's service (mpssvc) must run", "netsh: adding rule %q: %w: %s", r.Name, err, strings.TrimSpace(string(outp)))
		}
		res.Changes = append(res.Changes, "added"+strings.TrimPrefix(line, "add"))
	}
	if !res.Changed {
		res.Changes = []string{"firewall rules present"}
	}
	return res, nil
}

// hostPath places a Windows path below env.Root in tests; with Root ""
// or "/" it is the path itself.
func hostPath(env *host.Env, p string) string {
	if env.Root == "" || env.Root == "/" {
		return p
	}
	if len(p) >= 2 && p[1] == ':' {
		p = p[2:]
	}
	return filepath.Join(env.Root, filepath.FromSlash(strings.ReplaceAll(p, `\`, "/")))
}

func hostErr(err error) error {
	if err == nil {
		return nil
	}
	return errclass.New(errclass.HostPreparationFailed, "", err)
}

func out(env *host.Env) interface{ Write([]byte) (int, error) } {
	if env.Out == nil {
		return discard{}
	}
	return env.Out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
