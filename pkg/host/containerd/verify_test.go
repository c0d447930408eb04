package containerd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testcontainerd"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestVerifyConfigRealContainerd runs each real containerd
// (internal/testcontainerd: Debian's 1.6 on config version 2, the e2e's
// 2.x on version 3), linked into a root where VerifyConfig looks, on files
// rendered for its version: the generated config and a harmless patch
// pass; keys of the wrong type deep in the CRI plugin and at the top
// level, which the generated tree does not hold and so checkPatch cannot
// know, are refused with containerd's own message.
func TestVerifyConfigRealContainerd(t *testing.T) {
	for _, b := range testcontainerd.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(b.Path, filepath.Join(root, "usr/bin/containerd")); err != nil {
				t.Fatal(err)
			}
			render := func(patch string) []byte {
				t.Helper()
				out, err := Render(&machineadm.Containerd{CgroupDriver: "systemd", SandboxImage: "registry.k8s.io/pause:3.10",
					Registries: []machineadm.Registry{{Host: "docker.io", Mirrors: []machineadm.Mirror{{URL: "https://mirror.example"}}}}, ConfigPatch: patch}, b.ConfigVersion)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			// Each version's tables and containerd's words for a key of the
			// wrong type.
			runtime, images, wrongType := schemas[2].runtime, schemas[2].images, "Can't convert"
			if b.ConfigVersion == 3 {
				runtime, images, wrongType = schemas[3].runtime, schemas[3].images, "cannot decode TOML"
			}
			for _, ok := range []string{"", fmt.Sprintf("[plugins.%q.containerd]\nsnapshotter = \"overlayfs\"\n", runtime)} {
				if err := VerifyConfig(t.Context(), root, render(ok)); err != nil {
					t.Errorf("patch %q: %v", ok, err)
				}
			}
			for patch, want := range map[string]string{
				fmt.Sprintf("[plugins.%q]\ncni = \"x\"\n", runtime):                           wrongType,
				fmt.Sprintf("[plugins.%q.registry]\nconfig_path2 = 1\nmirrors = 5\n", images): wrongType,
				"grpc = \"x\"\n": "GRPCConfig",
			} {
				err := VerifyConfig(t.Context(), root, render(patch))
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.Contains(ce.Msg, want) || ce.Binary != "/usr/bin/containerd" {
					t.Errorf("patch %q: %v, want containerd's refusal saying %q", patch, err, want)
				}
			}
		})
	}
	if err := VerifyConfig(t.Context(), t.TempDir(), nil); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("empty root: %v", err)
	}
}
