// Package testcontainerd finds the real containerd binaries that the host
// preparation tests start or ask: Debian's containerd 1.x at
// /usr/bin/containerd (hack/install-deps.sh installs it) and the
// containerd 2.x that the e2e builds into its cache
// (hack/e2e/components.sh, bin/containerd2). It is for tests only.
package testcontainerd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Binary is one real containerd.
type Binary struct {
	// Name is the subtest name: "1.x" or "2.x".
	Name string
	// Path is the binary on this host.
	Path string
	// Version is its `containerd --version` output, trimmed.
	Version string
	// ConfigVersion is the config.toml schema it reads: 2 for 1.x, 3 for
	// 2.x.
	ConfigVersion int
}

// Debian is Debian's containerd.
const Debian = "/usr/bin/containerd"

// Env names the environment. RequireEnv set (to anything) makes a missing
// binary fail the test instead of being left out; .ci/run sets it and
// builds the 2.x binary (make e2e-prepare) before the tests. Containerd2Env
// names the 2.x binary; default CacheEnv's directory (default
// DefaultCache) joined with bin/containerd2.
const (
	RequireEnv     = "MACHINEADM_REQUIRE_CONTAINERD"
	Containerd2Env = "MACHINEADM_CONTAINERD2"
	CacheEnv       = "MACHINEADM_E2E_CACHE"
	DefaultCache   = "/var/cache/machineadm-e2e"
)

// Containerd2Path is where the 2.x binary is looked for (see
// Containerd2Env).
func Containerd2Path() string {
	if p := os.Getenv(Containerd2Env); p != "" {
		return p
	}
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		cache = DefaultCache
	}
	return filepath.Join(cache, "bin", "containerd2")
}

var versionRE = regexp.MustCompile(`\sv?(\d+)\.\d+\.\d+`)

// All returns Debian's 1.x and the e2e's 2.x, each checked to answer
// `--version` with its major version. A missing one fails the test when
// RequireEnv is set and is left out (logged) otherwise; with none the
// test is skipped.
func All(t testing.TB) []Binary {
	t.Helper()
	var out []Binary
	for _, c := range []struct {
		name, path, hint string
		major            int
	}{
		{"1.x", Debian, "apt-get install -y containerd", 1},
		{"2.x", Containerd2Path(), "make e2e-prepare builds it", 2},
	} {
		if _, err := os.Stat(c.path); err != nil {
			if os.Getenv(RequireEnv) != "" {
				t.Fatalf("containerd %s is required (%s) but %s is missing (%s)", c.name, RequireEnv, c.path, c.hint)
			}
			t.Logf("containerd %s not tested: %s is missing (%s)", c.name, c.path, c.hint)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		v, err := exec.CommandContext(ctx, c.path, "--version").Output()
		cancel()
		if err != nil {
			t.Fatalf("%s --version: %v", c.path, err)
		}
		m := versionRE.FindStringSubmatch(string(v))
		if m == nil || m[1] != strconv.Itoa(c.major) {
			t.Fatalf("%s --version says %q, want containerd %d.x", c.path, v, c.major)
		}
		out = append(out, Binary{Name: c.name, Path: c.path, Version: strings.TrimSpace(string(v)), ConfigVersion: c.major + 1})
	}
	if len(out) == 0 {
		t.Skip("no containerd installed")
	}
	return out
}
