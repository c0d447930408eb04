package windows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/containerd"
)

// ContainerdExe is where the Windows image provides containerd
// (containerd's Windows release unpacked into C:\Program Files\containerd,
// registered with `containerd.exe --register-service`).
const ContainerdExe = `C:\Program Files\containerd\containerd.exe`

// fallbackConfigVersion is the schema written when the installed
// containerd's version cannot be learnt: 3, containerd 2.x's, the line
// still supported (containerd 1.7 reached its end of life in March 2026).
const fallbackConfigVersion = 3

// versionProbeTimeout bounds one `containerd.exe --version`.
const versionProbeTimeout = 10 * time.Second

// DetectContainerdVersion runs `containerd.exe --version` (ContainerdExe,
// under root when root is neither "" nor "/") and returns its output, for
// example "containerd github.com/containerd/containerd/v2 v2.1.4 …". It
// returns an error wrapping containerd.ErrNotInstalled when there is no
// such file. It is the default of host.Env.ContainerdVersion for the
// Windows containerd step.
func DetectContainerdVersion(ctx context.Context, root string) (string, error) {
	exe := hostPath(&host.Env{Root: root}, ContainerdExe)
	if fi, err := os.Stat(exe); err != nil || fi.IsDir() {
		return "", fmt.Errorf("%s: %w", ContainerdExe, containerd.ErrNotInstalled)
	}
	ctx, cancel := context.WithTimeout(ctx, versionProbeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", ContainerdExe, err)
	}
	return string(out), nil
}

// versionChoice is the config.toml schema version of one containerd step,
// decided once (by its Check, or by Apply when Check did not run) and
// kept, so that the check and the write agree and containerd.exe runs once.
type versionChoice struct {
	once    sync.Once
	version int
}

// get returns the schema version: Options.ContainerdConfigVersion, else
// spec.host.containerd.configVersion, else the installed containerd's
// (env.ContainerdVersion, default DetectContainerdVersion, read by
// containerd.ConfigVersionFor: 3 for 2.x, 2 for 1.x). When the probe
// fails (no containerd.exe, no version in its output) it logs a warning
// naming configVersion and returns 3.
func (v *versionChoice) get(ctx context.Context, env *host.Env, cd *machineadm.Containerd, o Options) int {
	v.once.Do(func() {
		switch {
		case o.ContainerdConfigVersion != 0:
			v.version = o.ContainerdConfigVersion
		case cd.ConfigVersion != 0:
			v.version = cd.ConfigVersion
		default:
			v.version = probeConfigVersion(ctx, env)
		}
	})
	return v.version
}

func probeConfigVersion(ctx context.Context, env *host.Env) int {
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	probe := env.ContainerdVersion
	if probe == nil {
		probe = DetectContainerdVersion
	}
	out, err := probe(ctx, env.Root)
	if err == nil {
		var v int
		if v, err = containerd.ConfigVersionFor(out); err == nil {
			log.Info("containerd config version chosen from the installed containerd", "configVersion", v)
			return v
		}
	}
	if errors.Is(err, containerd.ErrNotInstalled) {
		log.Warn("containerd.exe not found; writing config version 3 (containerd 2.x); set spec.host.containerd.configVersion to choose", "path", ContainerdExe)
	} else {
		log.Warn("cannot tell the containerd version; writing config version 3 (containerd 2.x); set spec.host.containerd.configVersion to choose", "err", err)
	}
	return fallbackConfigVersion
}
