//go:build !windows

package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestContainerdPatchRefusedBeforeWrite: a configPatch that contradicts a
// structured field, or that the installed containerd's own loader refuses
// (the real Debian containerd, linked into the test root), fails the
// check as InvalidSpec, naming configPatch, before anything is written.
func TestContainerdPatchRefusedBeforeWrite(t *testing.T) {
	withPatch := func(patch string) func(string) string {
		return func(d string) string {
			return strings.Replace(d, "      restrictOOMScoreAdj: true\n",
				"      restrictOOMScoreAdj: true\n      configPatch: |\n        "+strings.ReplaceAll(patch, "\n", "\n        ")+"\n", 1)
		}
	}
	cases := []struct {
		name, patch string
		realBinary  bool
		want        []string
	}{
		{"contradicts cgroupDriver", "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\nSystemdCgroup = false",
			false, []string{"spec.host.containerd.configPatch", "spec.host.containerd.cgroupDriver"}},
		{"moves config_path", "[plugins.\"io.containerd.cri.v1.images\".registry]\nconfig_path = \"/etc/docker/certs.d\"",
			false, []string{"spec.host.containerd.configPatch", "spec.host.containerd.registries"}},
		{"table replaced", "[plugins.\"io.containerd.cri.v1.runtime\"]\ncontainerd = \"x\"",
			false, []string{"spec.host.containerd.configPatch", "replaces a table"}},
		{"containerd refuses", "[plugins.\"io.containerd.grpc.v1.cri\"]\ncni = \"x\"",
			true, []string{"spec.host.containerd.configPatch", "Can't convert x(string) to config.CniConfig"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newTestHost(t)
			env := h.env(nil)
			if c.realBinary {
				if _, err := os.Stat("/usr/bin/containerd"); err != nil {
					if os.Getenv("MACHINEADM_REQUIRE_CONTAINERD") != "" {
						t.Fatal("containerd required but missing")
					}
					t.Skip("no containerd installed")
				}
				if err := os.MkdirAll(filepath.Join(h.root, "usr/bin"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/usr/bin/containerd", filepath.Join(h.root, "usr/bin/containerd")); err != nil {
					t.Fatal(err)
				}
				env.ContainerdVersion = nil // the linked binary's own version: 1.x, config version 2
			}
			before := snapshot(t, h.root)
			err := Check(context.Background(), env, Steps(h.fullSpec(t, withPatch(c.patch))))
			if err == nil {
				t.Fatal("check passed")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			if class, _ := errclass.Of(err); class != errclass.InvalidSpec {
				t.Errorf("class %s, want InvalidSpec", class)
			}
			if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
				t.Errorf("check changed the host: %v", d)
			}
		})
	}
}
