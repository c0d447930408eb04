package sysctl

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/readlimit"
)

// Value is one key's desired and effective value after all writes.
type Value struct {
	// Key is the spec's key, "net.ipv4.ip_forward".
	Key string
	// Desired is the spec's value, normalized (Normalize).
	Desired string
	// Effective is what the kernel reads back now through /proc/sys;
	// empty when it cannot be read (Err).
	Effective string
	// Err says why the key could not be read back (a write-only key).
	Err error
	// Boot is the sysctl.d setting that wins at the next boot when it is
	// not the spec's value (a later file such as 99-sysctl.conf); nil
	// otherwise.
	Boot *Setting
}

// Differs reports whether the effective value, now or at the next boot,
// is not the desired one.
func (v Value) Differs() bool {
	return v.Err == nil && v.Effective != v.Desired || v.Boot != nil
}

// Setting is one "key = value" assignment of a sysctl.d file.
type Setting struct {
	// File is the machine path of the file, "/etc/sysctl.d/99-sysctl.conf".
	File string
	// Value is the assigned value, normalized.
	Value string
}

// Effective re-reads every key of params under procSys (after all of them
// were written, so that a key one write changed as a side effect of
// another is seen) and looks up, in the sysctl.d files under root, which
// setting of each key wins at boot (BootSettings). Keys come sorted.
func Effective(root, procSys string, params map[string]string) ([]Value, error) {
	keys := SortedKeys(params)
	boot, err := BootSettings(root)
	out := make([]Value, 0, len(keys))
	for _, k := range keys {
		v := Value{Key: k, Desired: Normalize(params[k])}
		v.Effective, v.Err = Read(procSys, k)
		if s, ok := boot[ProcPath(k)]; ok && s.File != ConfPath && s.Value != v.Desired {
			v.Boot = &s
		}
		out = append(out, v)
	}
	return out, err
}

// Directories of sysctl.d(5), highest precedence first: a file name in an
// earlier directory masks the same name in later ones.
var confDirs = []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}

// legacyConf is read after every sysctl.d file, as procps' `sysctl
// --system` does (on Debian systemd reads it through the
// /etc/sysctl.d/99-sysctl.conf link).
const legacyConf = "/etc/sysctl.conf"

// BootSettings returns, for each key (as a /proc/sys relative path, see
// ProcPath), the assignment that is applied last at boot: the *.conf files
// of the sysctl.d(5) directories under root, masked by name and applied in
// lexical order of their names, then /etc/sysctl.conf. Glob keys ("*") are
// skipped; a leading "-" (ignore errors) is dropped. Unreadable files give
// an error after the readable ones were used.
func BootSettings(root string) (map[string]Setting, error) {
	byName := map[string]string{} // file name -> machine path
	for _, d := range confDirs {
		entries, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".conf") || e.IsDir() {
				continue
			}
			if _, masked := byName[e.Name()]; !masked {
				byName[e.Name()] = path.Join(d, e.Name())
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	files := make([]string, 0, len(names)+1)
	for _, n := range names {
		files = append(files, byName[n])
	}
	files = append(files, legacyConf)
	out := map[string]Setting{}
	var errs []error
	for _, f := range files {
		data, err := readConf(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			k = strings.TrimPrefix(strings.TrimSpace(k), "-")
			if k == "" || strings.Contains(k, "*") {
				continue
			}
			out[ProcPath(k)] = Setting{File: f, Value: Normalize(v)}
		}
	}
	return out, errors.Join(errs...)
}

// maxConfSize bounds one sysctl.d file read.
const maxConfSize = 1 << 20

// readConf reads a sysctl.d file of at most maxConfSize bytes through the
// one bounded reader. A file that is not a regular one (systemd masks a
// file with a link to /dev/null) counts as empty.
func readConf(p string) ([]byte, error) {
	data, err := readlimit.File(p, maxConfSize)
	var nr *readlimit.NotRegularError
	if errors.As(err, &nr) {
		return nil, nil
	}
	return data, err
}
