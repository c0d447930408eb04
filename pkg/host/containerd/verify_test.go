package containerd

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestVerifyConfigRealContainerd runs the installed containerd (Debian's
// 1.x, config version 2) on rendered files: the generated config and a
// harmless patch pass; keys of the wrong type deep in the CRI plugin and at
// the top level, which the generated tree does not hold and so
// checkPatch cannot know, are refused with containerd's own message.
func TestVerifyConfigRealContainerd(t *testing.T) {
	if _, err := os.Stat("/usr/bin/containerd"); err != nil {
		if os.Getenv("MACHINEADM_REQUIRE_CONTAINERD") != "" {
			t.Fatal("containerd is required (MACHINEADM_REQUIRE_CONTAINERD) but /usr/bin/containerd is missing")
		}
		t.Skip("no containerd installed")
	}
	render := func(patch string) []byte {
		t.Helper()
		out, err := Render(&machineadm.Containerd{CgroupDriver: "systemd", ConfigPatch: patch}, 2)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, ok := range []string{"", "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nsnapshotter = \"overlayfs\"\n"} {
		if err := VerifyConfig(t.Context(), "/", render(ok)); err != nil {
			t.Errorf("patch %q: %v", ok, err)
		}
	}
	for patch, want := range map[string]string{
		"[plugins.\"io.containerd.grpc.v1.cri\"]\ncni = \"x\"\n":                            "Can't convert",
		"[plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path2 = 1\nmirrors = 5\n": "Can't convert",
		"grpc = \"x\"\n": "GRPCConfig",
	} {
		err := VerifyConfig(t.Context(), "/", render(patch))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, want) || ce.Binary != "/usr/bin/containerd" {
			t.Errorf("patch %q: %v, want containerd's refusal saying %q", patch, err, want)
		}
	}
	if err := VerifyConfig(t.Context(), t.TempDir(), nil); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("empty root: %v", err)
	}
}
