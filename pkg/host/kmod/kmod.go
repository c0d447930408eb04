// Package kmod computes the modules-load.d file for the spec's kernel
// modules (spec.host.kernelModules, plus those the sysctl keys need) and
// loads missing modules with modprobe(8).
package kmod

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ConfPath is the persistent list, read by systemd-modules-load at boot
// (modules-load.d(5)).
const ConfPath = "/etc/modules-load.d/machineadm.conf"

// Header is the first line of ConfPath.
const Header = "# Written by machineadm from spec.host.kernelModules; do not edit, change the machine spec instead.\n"

// Render returns the content of ConfPath: the header and one module per
// line, in the given order.
func Render(modules []string) []byte {
	var b bytes.Buffer
	b.WriteString(Header)
	for _, m := range modules {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// markers are files that exist when a module's function is present, for
// modules that may be built into the kernel without a /sys/module entry
// (built-in modules appear there only when they have parameters). Paths
// are relative to /proc.
var markers = map[string]string{
	"br_netfilter": "sys/net/bridge/bridge-nf-call-iptables",
	"nf_conntrack": "sys/net/netfilter/nf_conntrack_max",
	"ip_vs":        "net/ip_vs",
}

// Present reports whether module name is loaded or built in, looking at
// sysDir/module/NAME (sysDir is usually "/sys"), a marker file under
// procDir (usually "/proc") for well-known modules, and for "overlay" the
// file systems in procDir/filesystems.
func Present(sysDir, procDir, name string) bool {
	canon := strings.ReplaceAll(name, "-", "_")
	if exists(filepath.Join(sysDir, "module", canon)) {
		return true
	}
	if m, ok := markers[canon]; ok && exists(filepath.Join(procDir, m)) {
		return true
	}
	if canon == "overlay" {
		data, err := os.ReadFile(filepath.Join(procDir, "filesystems"))
		return err == nil && bytes.Contains(data, []byte("\toverlay\n"))
	}
	return false
}

// ModulesSupported reports whether the running kernel can load modules at
// all (procDir/modules exists).
func ModulesSupported(procDir string) bool { return exists(filepath.Join(procDir, "modules")) }

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// Loader loads kernel modules into the running kernel.
type Loader interface {
	// Load loads module name and its dependencies.
	Load(ctx context.Context, name string) error
}

// Modprobe loads modules by running modprobe(8).
type Modprobe struct {
	// Path of the modprobe binary. Default: "modprobe" looked up in PATH,
	// then /usr/sbin/modprobe and /sbin/modprobe.
	Path string
	// Timeout bounds one modprobe run. Default 30s.
	Timeout time.Duration
}

// Binary returns the modprobe binary to run, or an error when there is
// none.
func (m Modprobe) Binary() (string, error) {
	if m.Path != "" {
		return exec.LookPath(m.Path)
	}
	if p, err := exec.LookPath("modprobe"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/modprobe", "/sbin/modprobe"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("modprobe not found (install kmod)")
}

// Load runs "modprobe -- name".
func (m Modprobe) Load(ctx context.Context, name string) error {
	bin, err := m.Binary()
	if err != nil {
		return err
	}
	timeout := m.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("modprobe %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
