// Package sysctl computes the persistent sysctl.d file for the spec's
// kernel parameters (spec.host.sysctl) and applies the values live through
// /proc/sys, reading each back.
package sysctl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ConfPath is the persistent file, read by systemd-sysctl (sysctl.d(5)) at
// boot. "90" orders it after distribution defaults and before the
// administrator's 99-sysctl.conf.
const ConfPath = "/etc/sysctl.d/90-machineadm.conf"

// Header is the first line of every file machineadm writes for sysctl.
const Header = "# Written by machineadm from spec.host.sysctl; do not edit, change the machine spec instead.\n"

// Render returns the content of ConfPath for params: the header, then
// "key = value" lines sorted by key. Values are written as given.
func Render(params map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString(Header)
	for _, k := range SortedKeys(params) {
		fmt.Fprintf(&b, "%s = %s\n", k, params[k])
	}
	return b.Bytes()
}

// SortedKeys returns the keys of params in order.
func SortedKeys(params map[string]string) []string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ProcPath returns the path of a key relative to /proc/sys, following
// sysctl.d(5): when the key contains a "/" the separators are "/" (and dots
// are part of names, as in "net/ipv4/conf/eth0.100/rp_filter"); otherwise
// dots separate.
func ProcPath(key string) string {
	if strings.Contains(key, "/") {
		return strings.Trim(key, "/")
	}
	return strings.ReplaceAll(key, ".", "/")
}

// moduleFor maps key prefixes to the kernel module that creates them:
// the keys exist in /proc/sys only once the module is loaded.
var moduleFor = []struct{ prefix, module string }{
	{"net/bridge/", "br_netfilter"},
	{"net/netfilter/nf_conntrack", "nf_conntrack"},
	{"net/ipv4/vs/", "ip_vs"},
}

// RequiredModules returns the kernel modules that provide some of the
// keys (for example br_netfilter for net.bridge.bridge-nf-call-iptables),
// each once, in first-use order of the sorted keys.
func RequiredModules(params map[string]string) []string {
	var out []string
	for _, k := range SortedKeys(params) {
		if m := ModuleFor(k); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// ModuleFor returns the module that provides key, or "".
func ModuleFor(key string) string {
	p := ProcPath(key)
	for _, m := range moduleFor {
		if strings.HasPrefix(p, m.prefix) {
			return m.module
		}
	}
	return ""
}

// Normalize makes a value comparable with what the kernel reads back:
// fields separated by white space are joined with one space (the kernel
// prints "32768\t60999" for "32768 60999").
func Normalize(v string) string { return strings.Join(strings.Fields(v), " ") }

// ErrUnknownKey marks a key with no file under /proc/sys.
var ErrUnknownKey = errors.New("unknown kernel parameter")

// Exists checks that key has a file under procSys (for example
// "/proc/sys"); an absent one wraps ErrUnknownKey.
func Exists(procSys, key string) error {
	p := filepath.Join(procSys, ProcPath(key))
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no %s", ErrUnknownKey, p)
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%w: %s is a directory, not a parameter", ErrUnknownKey, p)
	}
	return nil
}

// Read returns the current, normalized value of key under procSys.
func Read(procSys, key string) (string, error) {
	data, err := os.ReadFile(filepath.Join(procSys, ProcPath(key)))
	if err != nil {
		return "", err
	}
	return Normalize(string(data)), nil
}

// Set writes value to key under procSys and reads it back. It returns an
// error when the write fails or the kernel keeps another value. Keys the
// kernel does not let anyone read (write-only, such as
// net.ipv4.route.flush) are written without a read-back.
func Set(procSys, key, value string) error {
	p := filepath.Join(procSys, ProcPath(key))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o444 == 0 {
		return nil
	}
	got, err := Read(procSys, key)
	if err != nil {
		return fmt.Errorf("reading back %s: %w", p, err)
	}
	if got != Normalize(value) {
		return fmt.Errorf("%s: wrote %q, kernel reads back %q", key, Normalize(value), got)
	}
	return nil
}
