package windows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/machineadm/machineadm/internal/testcontainerd"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
)

// TestContainerdConfigVersionRealProbe runs the default probe,
// DetectContainerdVersion, on real containerd binaries (Debian's 1.6 and
// the e2e's 2.x, internal/testcontainerd) placed where the Windows image
// has containerd.exe under the test root: `containerd --version` answers
// as containerd.exe does, and the step writes the schema that binary
// reads.
func TestContainerdConfigVersionRealProbe(t *testing.T) {
	for _, b := range testcontainerd.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			env := &host.Env{Root: t.TempDir()}
			exe := hostPath(env, ContainerdExe)
			if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(b.Path, exe); err != nil {
				t.Fatal(err)
			}
			cd := &machineadm.Containerd{ConfigFile: "C:/Program Files/containerd/config.toml"}
			if got := writtenConfigVersion(t, cd, Options{}, env); got != b.ConfigVersion {
				t.Errorf("%s: config.toml version %d, want %d", b.Version, got, b.ConfigVersion)
			}
		})
	}
}
