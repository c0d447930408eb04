package sealspec

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/redact"
)

// sealRoot is where seal reads the files a spec names: the machine's
// file system as seen from the sealing host (SealOptions.Root), for a
// spec of the given OS.
//
// A spec.os linux path is resolved inside dir as it is. A spec.os windows
// path is on a drive (machineadm.SplitWindowsPath; none means the system
// drive, C): dir holds one directory per drive letter, so that
// 'C:\ProgramData\machineadm\secrets\token' is read from
// dir/C/ProgramData/machineadm/secrets/token on any host, Linux included.
// When dir is itself the root of a drive of the sealing host ('C:\', what
// the default "/" becomes on Windows), the drives are the host's own:
// 'D:\x' is read from D:\x. (Joining dir with the whole drive path gave
// '\C:\ProgramData\…', which Windows refuses.)
type sealRoot struct {
	// dir is the sealing host's directory that stands for the machine's
	// root, absolute.
	dir string
	// os is the spec's OS (machineadm.OSOf).
	os machineadm.OS
	// mem, when not nil, holds the files instead of dir, by memKey
	// (SealOptions.Files).
	mem map[string][]byte
}

// memKey is the key of machine path p in sealRoot.mem: the cleaned
// absolute path, on a spec.os windows machine prefixed with its drive
// ("C:" when p names none). A path that is not absolute is an error
// wrapping files.ErrEscapesRoot, as resolve refuses it.
func memKey(os machineadm.OS, p string) (string, error) {
	drive, rest := "", filepath.ToSlash(p)
	if os == machineadm.OSWindows {
		if drive, rest = machineadm.SplitWindowsPath(p); drive == "" {
			drive = machineadm.SystemDrive
		}
		drive += ":"
	}
	if !strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("%q: %w (not absolute)", p, files.ErrEscapesRoot)
	}
	return drive + path.Clean(rest), nil
}

// memFiles keys in by memKey.
func memFiles(os machineadm.OS, in map[string][]byte) (map[string][]byte, error) {
	out := make(map[string][]byte, len(in))
	for p, v := range in {
		k, err := memKey(os, p)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// readMem reads machine path p from mem: a path mem does not hold does
// not exist (fs.ErrNotExist), and a file larger than a secret file may be
// on disk (redact.MaxSecretFileSize) is refused.
func (m sealRoot) readMem(p string) ([]byte, error) {
	k, err := memKey(m.os, p)
	if err != nil {
		return nil, err
	}
	v, ok := m.mem[k]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	if len(v) > redact.MaxSecretFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, redact.MaxSecretFileSize)
	}
	return v, nil
}

// resolve returns the sealing host's path of machine path p, resolved
// inside the root (files.Resolve), or an error wrapping
// files.ErrEscapesRoot for a path that is not absolute or leaves it.
func (m sealRoot) resolve(p string) (string, error) {
	if m.os != machineadm.OSWindows {
		return files.Resolve(m.dir, filepath.ToSlash(p))
	}
	drive, rest := machineadm.SplitWindowsPath(p)
	if drive == "" {
		drive = machineadm.SystemDrive
	}
	if !strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("%q: %w (not absolute)", p, files.ErrEscapesRoot)
	}
	return files.Resolve(m.driveDir(drive), rest)
}

// driveDir is the sealing host's directory of the machine's drive letter
// drive: the host's own drive when dir is a drive's root, dir/<drive>
// otherwise.
func (m sealRoot) driveDir(drive string) string {
	clean := filepath.Clean(m.dir)
	if vol := filepath.VolumeName(clean); vol != "" && clean == vol+string(filepath.Separator) {
		return drive + ":" + string(filepath.Separator)
	}
	return filepath.Join(clean, drive)
}

// MachinePath returns where the sealing (or validating) host finds the
// file at machine path p of a spec for os, below root: seal's mapping
// (sealRoot), drive paths of a spec.os windows spec included. The path is
// resolved inside root (files.Resolve); an error wraps
// files.ErrEscapesRoot for a path that is not absolute or leaves root.
func MachinePath(root string, os machineadm.OS, p string) (string, error) {
	return sealRoot{dir: root, os: os}.resolve(p)
}
