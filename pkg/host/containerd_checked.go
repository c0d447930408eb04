package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// containerdCheckedPath is where the containerd step records what it
// learnt about the installed containerd (machine path; no secrets: a
// version line and a digest).
const containerdCheckedPath = "/var/lib/machineadm/containerd-checked.json"

// maxCheckedRecordSize bounds reading the record (64 KiB; it holds a few
// hundred bytes).
const maxCheckedRecordSize = 64 << 10

// ownFilePath is the host path of p, one of machineadm's own files
// (containerdCheckedPath, restartPending), under root: its directory
// resolved as the machine sees it (files.Resolve), its last component
// not. A symbolic link in the file's place is thus the file itself, never
// the file it names: the record loader ignores it and a new record
// replaces it; the restart marker's reader refuses it (files.ReadState).
// Following it would write a record into, or remove as a marker, a file
// such as /etc/passwd.
func ownFilePath(root, p string) (string, error) {
	dir, err := files.Resolve(root, filepath.Dir(p))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(p)), nil
}

// containerdChecked is what the containerd step knows about the installed
// containerd binary: its `containerd --version` output and the digest of
// the last config.toml its own loader (`containerd config dump`) accepted,
// kept between runs in containerdCheckedPath (checkedRecord). A record
// holds only for the binary it names, by Installed.ID: another or a
// replaced binary (an upgrade) is asked afresh. So a run whose rendered
// config.toml is byte-identical to one that binary accepted skips both
// commands, and any change of the config or of containerd is checked
// again with containerd's own configuration types. The record is a cache:
// losing it only repeats the check; it is written by the step's apply
// after the files (never in a dry run or for an offline root, never by a
// check alone, which changes nothing).
type containerdChecked struct {
	rec checkedRecord
	// loaded is the record as read, to write only a changed one.
	loaded checkedRecord
	// bin is the binary installed now (ID "" when there is none).
	bin containerd.Installed
	// accepted is the digest of the config.toml accepted in this run
	// (checked now, or earlier by the same binary).
	accepted string
}

// checkedRecord is containerdCheckedPath's content.
type checkedRecord struct {
	// Binary and ID are the binary's machine path and Installed.ID.
	Binary string `json:"binary"`
	ID     string `json:"id"`
	// Version is its `containerd --version` output.
	Version string `json:"version,omitempty"`
	// Verified is "sha256:<hex>" of the last config.toml its loader
	// accepted.
	Verified string `json:"verified,omitempty"`
}

// loadChecked reads the record for the containerd installed under env's
// root; a record of another binary, a missing or unreadable one, one that
// is not a regular file (a symbolic link, a FIFO) or is larger than
// maxCheckedRecordSize, is empty.
func loadChecked(env *Env) *containerdChecked {
	ck := &containerdChecked{}
	bin, err := containerd.FindInstalled(env.root())
	if err != nil {
		return ck
	}
	ck.bin = bin
	hp, err := ownFilePath(env.root(), containerdCheckedPath)
	if err != nil {
		return ck
	}
	if fi, err := os.Lstat(hp); err != nil || !fi.Mode().IsRegular() {
		return ck
	}
	data, err := readlimit.File(hp, maxCheckedRecordSize)
	if err != nil {
		return ck
	}
	var rec checkedRecord
	if json.Unmarshal(data, &rec) != nil || rec.Binary != bin.Path || rec.ID != bin.ID {
		return ck
	}
	ck.rec, ck.loaded = rec, rec
	return ck
}

// verified says whether the installed binary accepted config earlier.
func (c *containerdChecked) verified(digest string) bool {
	return c.bin.ID != "" && c.rec.Verified == digest
}

// version is the installed containerd's `containerd --version` output:
// recorded for this binary, else asked (env.ContainerdVersion, default
// containerd.DetectVersion) and kept.
func (c *containerdChecked) version(ctx context.Context, env *Env) (string, error) {
	if c.rec.Version != "" && c.bin.ID != "" {
		return c.rec.Version, nil
	}
	detect := env.ContainerdVersion
	if detect == nil {
		detect = containerd.DetectVersion
	}
	out, err := detect(ctx, env.root())
	if err == nil {
		c.rec.Version = out
	}
	return out, err
}

// record writes the record when this run learnt something new about the
// installed binary; a failure is only logged (the next run checks again).
func (c *containerdChecked) record(env *Env) {
	if c == nil || c.bin.ID == "" {
		return
	}
	c.rec.Binary, c.rec.ID = c.bin.Path, c.bin.ID
	if c.accepted != "" {
		c.rec.Verified = c.accepted
	}
	if c.rec == c.loaded {
		return
	}
	hp, err := ownFilePath(env.root(), containerdCheckedPath)
	if err == nil {
		var data []byte
		if data, err = json.MarshalIndent(c.rec, "", "  "); err == nil {
			if err = os.MkdirAll(filepath.Dir(hp), 0o700); err == nil {
				err = atomicfile.WriteFileUnsynced(hp, append(data, '\n'), 0o600)
			}
		}
	}
	if err != nil {
		env.log().Debug("could not record the containerd check", "path", containerdCheckedPath, "err", err)
		return
	}
	c.loaded = c.rec
}

// configDigest is "sha256:<hex>" of a rendered config.toml.
func configDigest(config []byte) string {
	sum := sha256.Sum256(config)
	return "sha256:" + hex.EncodeToString(sum[:])
}
