//go:build !windows

package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testcontainerd"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestContainerdPatchRefusedBeforeWrite: a configPatch that contradicts a
// structured field, or that the installed containerd's own loader refuses
// (the real containerd, Debian's 1.6 or the e2e's 2.x, linked into the
// test root), fails the check as InvalidSpec, naming configPatch, before
// anything is written.
func TestContainerdPatchRefusedBeforeWrite(t *testing.T) {
	withPatch := func(patch string) func(string) string {
		return func(d string) string {
			return strings.Replace(d, "      restrictOOMScoreAdj: true\n",
				"      restrictOOMScoreAdj: true\n      configPatch: |\n        "+strings.ReplaceAll(patch, "\n", "\n        ")+"\n", 1)
		}
	}
	cases := []struct {
		name, patch string
		realBinary  string // the containerd linked into the root: "", "1.x" or "2.x"
		want        []string
	}{
		{"contradicts cgroupDriver", "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\nSystemdCgroup = false",
			"", []string{"spec.host.containerd.configPatch", "spec.host.containerd.cgroupDriver"}},
		{"moves config_path", "[plugins.\"io.containerd.cri.v1.images\".registry]\nconfig_path = \"/etc/docker/certs.d\"",
			"", []string{"spec.host.containerd.configPatch", "spec.host.containerd.registries"}},
		{"table replaced", "[plugins.\"io.containerd.cri.v1.runtime\"]\ncontainerd = \"x\"",
			"", []string{"spec.host.containerd.configPatch", "replaces a table"}},
		{"containerd refuses", "[plugins.\"io.containerd.grpc.v1.cri\"]\ncni = \"x\"",
			"1.x", []string{"spec.host.containerd.configPatch", "Can't convert x(string) to config.CniConfig"}},
		{"containerd 2 refuses", "[plugins.\"io.containerd.cri.v1.runtime\"]\ncni = \"x\"",
			"2.x", []string{"spec.host.containerd.configPatch", "/usr/bin/containerd", "config.CniConfig"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newTestHost(t)
			env := h.env(nil)
			if c.realBinary != "" {
				bin := ""
				for _, b := range testcontainerd.All(t) {
					if b.Name == c.realBinary {
						bin = b.Path
					}
				}
				if bin == "" {
					t.Skipf("no containerd %s", c.realBinary)
				}
				if err := os.MkdirAll(filepath.Join(h.root, "usr/bin"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(bin, filepath.Join(h.root, "usr/bin/containerd")); err != nil {
					t.Fatal(err)
				}
				env.ContainerdVersion = nil // the linked binary's own version: 1.x reads config version 2, 2.x version 3
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
