package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// ErrNotInstalled is returned by DetectVersion when no containerd binary
// is found under the root.
var ErrNotInstalled = errors.New("containerd is not installed")

// binaries are where containerd is looked for, as machine paths.
var binaries = []string{"/usr/bin/containerd", "/usr/local/bin/containerd", "/usr/sbin/containerd", "/opt/bin/containerd"}

// versionRE finds the release in `containerd --version` output, for
// example "containerd github.com/containerd/containerd/v2 v2.1.4 …" or
// Debian's "containerd github.com/containerd/containerd 1.6.20~ds1 …".
var versionRE = regexp.MustCompile(`\sv?(\d+)\.(\d+)\.\d+\S*`)

// DetectVersion runs `containerd --version` from the first binary found
// under root and returns its output. It returns ErrNotInstalled when
// there is none. The binary is the machine's own: at image-build time
// (--root DIR) it is the image's, which must be runnable on the build
// host.
func DetectVersion(ctx context.Context, root string) (string, error) {
	for _, b := range binaries {
		hp := filepath.Join(root, b)
		if fi, err := os.Stat(hp); err != nil || fi.IsDir() {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, hp, "--version").Output()
		if err != nil {
			return "", fmt.Errorf("%s --version: %w", b, err)
		}
		return string(out), nil
	}
	return "", ErrNotInstalled
}

// ConfigVersionFor maps `containerd --version` output to the config schema
// version: 3 for containerd 2.x and later, 2 for 1.x.
func ConfigVersionFor(versionOutput string) (int, error) {
	m := versionRE.FindStringSubmatch(versionOutput)
	if m == nil {
		return 0, fmt.Errorf("no version in %q", versionOutput)
	}
	major, _ := strconv.Atoi(m[1])
	if major >= 2 {
		return 3, nil
	}
	return 2, nil
}
