package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/host/files"
)

func init() {
	Register(Concern{Order: 40, Name: StepContainerd, Short: "Write containerd's config.toml, hosts.toml and proxy drop-in; restart containerd on change", Class: errclass.ContainerRuntimeUnavailable,
		OS: []string{OSLinux}, Fields: []string{"spec.host.containerd"}, Validation: "validateHost, validateContainerdPrep",
		checker: func(cfg *machineadm.MachineBootstrapConfig) checker {
			return containerdChecker(cfg.Spec.Host.Containerd)
		}})
}

// restartPending is a marker written before containerd's configuration
// changes and removed after containerd restarted, so that a run that
// crashed in between still restarts containerd the next time.
const restartPending = "/var/lib/machineadm/containerd-restart-pending"

type containerdPlan struct {
	enabled     bool
	configFile  string
	version     int
	config      []byte
	hosts       []containerd.File
	proxy       []byte // nil: no drop-in
	proxyMode   uint32 // 0600 when a proxy URL carries credentials
	proxySecret bool
	// checked is what the check learnt about the installed containerd,
	// recorded by apply (see containerdChecked).
	checked *containerdChecked
}

// containerdChecker picks the config schema version (from the spec, else
// from `containerd --version`, else 2 with a warning) and renders every
// file, checking config.toml with the installed containerd's loader unless
// that very binary accepted the same bytes before (containerdChecked).
func containerdChecker(c *machineadm.Containerd) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		if c == nil {
			return &containerdPlan{}, nil
		}
		// A registry's client key and certificate sealed and not put back:
		// hosts.toml would go out without the client certificate.
		for i, r := range c.Registries {
			rp := fmt.Sprintf("spec.host.containerd.registries[%d]", i)
			for _, f := range []string{".clientKey", ".clientCert"} {
				if err := withheld(env, rp+f, containerd.RegistryDir(r.Host)); err != nil {
					return nil, err
				}
			}
			for j := range r.Mirrors {
				mp := fmt.Sprintf("%s.mirrors[%d]", rp, j)
				for _, f := range []string{".clientKey", ".clientCert"} {
					if err := withheld(env, mp+f, containerd.RegistryDir(r.Host)); err != nil {
						return nil, err
					}
				}
			}
		}
		p := &containerdPlan{enabled: true, configFile: c.ConfigFile, version: c.ConfigVersion, checked: loadChecked(env)}
		if p.version == 0 {
			p.version = detectConfigVersion(ctx, env, p.checked)
		}
		var err error
		if p.config, err = containerd.Render(c, p.version); err != nil {
			var pe *containerd.PatchError
			if errors.As(err, &pe) || c.ConfigPatch != "" && strings.HasPrefix(err.Error(), containerd.PatchField) {
				return nil, errclass.New(errclass.InvalidSpec, hintPatch, err)
			}
			return nil, hostErr(hintContainerd, "spec.host.containerd: %w", err)
		}
		if err := verifyContainerdConfig(ctx, env, c, p.version, p.config, p.checked); err != nil {
			return nil, err
		}
		if p.hosts, err = containerd.HostsFiles(c.Registries); err != nil {
			return nil, hostErr(hintContainerd, "spec.host.containerd.registries: %w", err)
		}
		p.proxy = containerd.RenderProxy(c.Proxy)
		p.proxyMode, p.proxySecret = containerd.ProxyMode(c.Proxy)
		return p, nil
	}
}

// hintPatch is the hint of a configPatch that breaks or contradicts
// config.toml.
const hintPatch = "fix spec.host.containerd.configPatch: containerd must be able to read the result, and the patch may not change what a structured field of spec.host.containerd sets"

// verifyContainerdConfig runs the installed containerd's own loader on the
// rendered config.toml (containerd.VerifyConfig, or env.ContainerdVerify)
// when its schema version is the one rendered, unless ck says that the
// same binary accepted the same bytes before: the check proves nothing new
// then, and `containerd config dump` costs 0.1–0.2 s. A config.toml that
// imports other files (containerd.Imports) is neither skipped nor
// recorded: those files can change while config.toml does not. A refusal is bad
// input (InvalidSpec), named after configPatch when there is one; a
// missing or other containerd is only logged. An accepted config is noted
// in ck (ck.accepted) for apply to record.
func verifyContainerdConfig(ctx context.Context, env *Env, c *machineadm.Containerd, version int, config []byte, ck *containerdChecked) error {
	digest := configDigest(config)
	// A config that imports other files is checked every time: the
	// record covers only config.toml's bytes and the binary.
	cacheable := !containerd.Imports(config)
	if cacheable && ck.verified(digest) {
		env.log().Info("config.toml accepted earlier by this containerd's loader; not checked again", "binary", ck.bin.Path, "config", digest)
		ck.accepted = digest
		return nil
	}
	verify := env.ContainerdVerify
	if verify == nil {
		verify = func(ctx context.Context, root string, config []byte) error {
			out, err := ck.version(ctx, env)
			if err != nil {
				return err
			}
			if v, err := containerd.ConfigVersionFor(out); err != nil || v != version {
				env.log().Info("installed containerd reads another config version; config.toml not checked with it", "configVersion", version)
				return errNotChecked
			}
			return containerd.VerifyConfig(ctx, root, config)
		}
	}
	err := verify(ctx, env.root(), config)
	var ce *containerd.ConfigError
	switch {
	case err == nil:
		if cacheable {
			ck.accepted = digest
		}
		return nil
	case errors.Is(err, errNotChecked):
		return nil
	case errors.As(err, &ce):
		what := "spec.host.containerd"
		if c.ConfigPatch != "" {
			what = containerd.PatchField
		}
		return errclass.Errorf(errclass.InvalidSpec, hintPatch, "%s: %w", what, err)
	case errors.Is(err, containerd.ErrNotInstalled):
		env.log().Debug("no containerd under the root; config.toml not checked with containerd's loader")
		return nil
	default:
		env.log().Warn("cannot check config.toml with containerd's loader", "err", err)
		return nil
	}
}

// errNotChecked: the installed containerd reads another config version,
// so config.toml was not checked with it.
var errNotChecked = errors.New("config.toml not checked")

func detectConfigVersion(ctx context.Context, env *Env, ck *containerdChecked) int {
	out, err := ck.version(ctx, env)
	if err != nil {
		if errors.Is(err, containerd.ErrNotInstalled) {
			env.log().Warn("containerd not found under the root; writing config version 2 (containerd 1.x); set spec.host.containerd.configVersion to choose", "root", env.root())
		} else {
			env.log().Warn("cannot tell the containerd version; writing config version 2", "err", err)
		}
		return 2
	}
	v, err := containerd.ConfigVersionFor(out)
	if err != nil {
		env.log().Warn("cannot parse `containerd --version`; writing config version 2", "err", err)
		return 2
	}
	env.log().Info("containerd config version chosen from the installed containerd", "configVersion", v)
	return v
}

// apply writes config.toml, the hosts.toml files and the proxy drop-in
// (removed when the spec has no proxy; 0600 and hidden from dry-run
// diffs when a proxy URL carries credentials), then restarts containerd when
// config.toml or the drop-in changed (hosts.toml is read by containerd
// on each pull and needs no restart), after a daemon-reload when the
// drop-in changed.
func (p *containerdPlan) apply(ctx context.Context, env *Env, rec *recorder) error {
	if !p.enabled {
		return nil
	}
	pendingPath, err := ownFilePath(env.root(), restartPending)
	if err != nil {
		return hostErr(hintWrite, "%s: %w", restartPending, err)
	}
	pending, err := files.ReadState(pendingPath)
	if err != nil {
		return hostErr(hintWrite, "reading %s: %w", restartPending, err)
	}
	// Decide before writing whether anything that needs a restart changes,
	// and leave a marker first, so a crash after the write still restarts.
	cfgDesired := files.Desired{Path: p.configFile, Content: p.config, Mode: 0o644}
	proxyDesired := files.Desired{Path: containerd.ProxyDropIn, Content: p.proxy, Mode: modeOf(p.proxyMode), Secret: p.proxySecret}
	if p.proxy == nil {
		proxyDesired = files.Desired{Path: containerd.ProxyDropIn, Remove: true}
	}
	cfgChange, err := planFile(env, cfgDesired)
	if err != nil {
		return hostErr(hintWrite, "spec.host.containerd.configFile: %w", err)
	}
	proxyChange, err := planFile(env, proxyDesired)
	if err != nil {
		return hostErr(hintWrite, "spec.host.containerd.proxy: %w", err)
	}
	needRestart := cfgChange.ContentChanged() || proxyChange.ContentChanged() || pending.Exists
	if needRestart && !env.DryRun && !env.Offline && !pending.Exists {
		if err := files.WriteAtomic(pendingPath, []byte("containerd configuration changed; restart pending\n"), 0o644, 0, 0); err != nil {
			return hostErr(hintWrite, "writing %s: %w", restartPending, err)
		}
	}
	if _, err := rec.file(cfgDesired, "spec.host.containerd.configFile"); err != nil {
		return err
	}
	for _, f := range p.hosts {
		d := files.Desired{Path: f.Path, Content: f.Content, Mode: modeOf(f.Mode), Secret: f.Secret}
		if _, err := rec.file(d, "spec.host.containerd.registries"); err != nil {
			return err
		}
	}
	if _, err := rec.file(proxyDesired, "spec.host.containerd.proxy"); err != nil {
		return err
	}
	if !env.DryRun && !env.Offline {
		// Offline (an image being built) the binary's identity changes when
		// the image is written out: a record would never match.
		p.checked.record(env)
	}
	if !needRestart {
		return nil
	}
	if env.Offline {
		rec.note("offline root: containerd is not restarted; it reads the new configuration when it starts")
		return nil
	}
	if env.Services == nil && !env.DryRun {
		return errclass.New(errclass.ContainerRuntimeUnavailable, hintServiceless, errors.New("containerd configuration changed and no service manager is available to restart "+containerd.Unit))
	}
	if proxyChange.ContentChanged() {
		if err := rec.live("reload systemd units (containerd proxy drop-in changed)", func() error { return env.Services.DaemonReload(ctx) }); err != nil {
			return errclass.New(errclass.ContainerRuntimeUnavailable, hintContainerd, err)
		}
	}
	if err := rec.live("restart "+containerd.Unit, func() error { return env.Services.Restart(ctx, containerd.Unit) }); err != nil {
		return errclass.New(errclass.ContainerRuntimeUnavailable, hintContainerd, fmt.Errorf("containerd configuration changed: %w", err))
	}
	if env.CRIReady != nil && !env.DryRun {
		if err := rec.live("wait for containerd's CRI to report RuntimeReady", func() error { return env.CRIReady(ctx) }); err != nil {
			return errclass.New(errclass.ContainerRuntimeUnavailable, hintContainerd, err)
		}
	}
	if !env.DryRun {
		if err := files.Apply(files.Plan(files.Desired{Path: restartPending, Remove: true}, pendingPath, files.State{Exists: true})); err != nil {
			return hostErr(hintWrite, "removing %s: %w", restartPending, err)
		}
	}
	return nil
}

// planFile computes a file's change against the host (or the dry-run
// view) without recording it.
func planFile(env *Env, d files.Desired) (files.Change, error) {
	hp, err := files.Resolve(env.root(), d.Path)
	if err != nil {
		return files.Change{}, err
	}
	cur, err := files.ReadState(hp)
	if err != nil {
		return files.Change{}, err
	}
	return files.Plan(d, hp, cur), nil
}

func modeOf(m uint32) fs.FileMode { return fs.FileMode(m) }
