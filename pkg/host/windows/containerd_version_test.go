package windows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/containerd"
)

// writtenConfigVersion runs the Windows containerd step (check, then
// apply) on a new root with env's version probe and returns the schema
// version of the config.toml it wrote.
func writtenConfigVersion(t *testing.T, cd *machineadm.Containerd, o Options, env *host.Env) int {
	t.Helper()
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.Host.Containerd = cd
	o.Runner, o.Services = &fakeRunner{containers: "Enabled", rules: map[string]bool{}}, &fakeServices{services: map[string]ServiceState{}}
	for _, s := range Steps(cfg, o) {
		if s.Name != StepContainerd {
			continue
		}
		ctx := context.Background()
		if err := s.Check(ctx, env); err != nil {
			t.Fatalf("check: %v", err)
		}
		if _, err := s.Apply(ctx, env); err != nil {
			t.Fatalf("apply: %v", err)
		}
		data, err := os.ReadFile(filepath.Join(env.Root, "Program Files/containerd/config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			var v int
			if _, err := fmt.Sscanf(l, "version = %d", &v); err == nil {
				return v
			}
		}
		t.Fatalf("config.toml has no version:\n%s", data)
	}
	t.Fatal("no containerd step")
	return 0
}

// TestContainerdConfigVersionFollowsInstalled: without a configVersion in
// the spec, the Windows config.toml takes the schema of the installed
// containerd, as its `containerd.exe --version` says (the probe is
// host.Env.ContainerdVersion here): 2 for containerd 1.7, 3 for 2.x. The
// probe runs once for the check and the write; the spec's configVersion
// and Options.ContainerdConfigVersion win over it; without containerd.exe
// (or a version in its output) the step writes 3.
func TestContainerdConfigVersionFollowsInstalled(t *testing.T) {
	cd := func(version int) *machineadm.Containerd {
		return &machineadm.Containerd{ConfigFile: "C:/Program Files/containerd/config.toml", SandboxImage: "registry.k8s.io/pause:3.10", ConfigVersion: version}
	}
	const (
		v17 = "containerd github.com/containerd/containerd v1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n"
		v21 = "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n"
	)
	notInstalled := fmt.Errorf("%s: %w", ContainerdExe, containerd.ErrNotInstalled)
	for _, c := range []struct {
		name    string
		spec    int // spec.host.containerd.configVersion
		option  int // Options.ContainerdConfigVersion
		out     string
		err     error
		want    int
		probing bool
	}{
		{name: "containerd 1.7", out: v17, want: 2, probing: true},
		{name: "containerd 2.1", out: v21, want: 3, probing: true},
		{name: "not installed", err: notInstalled, want: 3, probing: true},
		{name: "no version in the output", out: "containerd\n", want: 3, probing: true},
		{name: "spec says 3 on 1.7", spec: 3, out: v17, want: 3},
		{name: "spec says 2 on 2.1", spec: 2, out: v21, want: 2},
		{name: "option says 2", option: 2, spec: 3, out: v21, want: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			env := &host.Env{Root: t.TempDir(), ContainerdVersion: func(_ context.Context, root string) (string, error) {
				calls++
				return c.out, c.err
			}}
			if got := writtenConfigVersion(t, cd(c.spec), Options{ContainerdConfigVersion: c.option}, env); got != c.want {
				t.Errorf("config.toml version %d, want %d", got, c.want)
			}
			if want := map[bool]int{true: 1, false: 0}[c.probing]; calls != want {
				t.Errorf("containerd --version asked %d times, want %d", calls, want)
			}
		})
	}
}

// TestDetectContainerdVersionMissing: no containerd.exe under the root is
// containerd.ErrNotInstalled, and nothing is run.
func TestDetectContainerdVersionMissing(t *testing.T) {
	if _, err := DetectContainerdVersion(context.Background(), t.TempDir()); !errors.Is(err, containerd.ErrNotInstalled) {
		t.Errorf("empty root: %v, want ErrNotInstalled", err)
	}
}
