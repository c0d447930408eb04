package cpunits

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// DefaultBackupDir is where Replace keeps, per unit, the files a
// replacement overwrote (machine path).
const DefaultBackupDir = "/var/lib/machineadm/backup/units"

// Backup states of a unit's record (backup.json).
const (
	// BackupPending: taken, the replacement has not been seen healthy.
	// A rerun keeps this backup: the host may hold a half-done change.
	BackupPending = "Pending"
	// BackupHealthy: the replacement was healthy; the backup holds the
	// state before it (a later Replace takes a fresh one).
	BackupHealthy = "Healthy"
	// BackupTaken: taken by Backup before anything changed (before the
	// files phase replaces a binary in place); Replace uses it instead of
	// taking its own, and a rerun of Backup keeps it.
	BackupTaken = "Taken"
)

// ErrRollbackUnhealthy is in the error of a Replace whose unit was not
// healthy after the change nor after the rollback to its backup.
var ErrRollbackUnhealthy = errors.New("not healthy after the rollback either")

// ReplaceOptions say how Replace reaches the host.
type ReplaceOptions struct {
	// Root is the host's root, "/" on a real node.
	Root string
	// BackupDir is the machine path of the backups. Default
	// DefaultBackupDir.
	BackupDir string
	// Manager reloads and restarts the unit. Required unless DryRun.
	Manager Manager
	// Healthy waits (bounded) until the replaced unit is healthy; nil
	// skips the check.
	Healthy func(ctx context.Context) error
	// BeforeStart, when set, runs before each restart: with rollback
	// false after the new files are written and before the replaced unit
	// starts; with rollback true after the backup is restored and before
	// the old unit starts again. It prepares host state that the starting
	// unit's account needs (the owner of etcd's data directory). Its
	// error counts as the unit not being healthy.
	BeforeStart func(ctx context.Context, rollback bool) error
	// DryRun prints the plan (unit diffs) to Out and changes nothing.
	DryRun bool
	// Out receives diffs in a dry run. Default: discard.
	Out io.Writer
}

// ReplaceResult is what Replace did with one unit.
type ReplaceResult struct {
	// Unit is the unit name, for example "kube-apiserver.service".
	Unit string
	// Changed says the unit's files or binary changed and it was
	// restarted (or, in a dry run, would be).
	Changed bool
	// RolledBack says the replacement was not healthy and the backup was
	// put back (and restarted).
	RolledBack bool
	// Changes are lines for a person, never file contents.
	Changes []string
}

// backupRecord is a unit's backup.json.
type backupRecord struct {
	Unit   string       `json:"unit"`
	Status string       `json:"status"`
	Files  []backupFile `json:"files"`
	// Binary is the sha256 of the binary the unit ran when it was last
	// seen healthy (BackupHealthy), "" before.
	Binary string `json:"binary,omitempty"`
}

// backupFile is one saved file.
type backupFile struct {
	// Path is the machine path.
	Path string `json:"path"`
	// Absent says the file did not exist: a rollback removes it.
	Absent bool `json:"absent,omitempty"`
	// Stored is the name in the backup directory.
	Stored string `json:"stored,omitempty"`
	// Mode is the permission bits.
	Mode fs.FileMode `json:"mode,omitempty"`
	// SHA256 is the content digest.
	SHA256 string `json:"sha256,omitempty"`
}

// Replace moves one running unit to c: when c's unit or environment
// file differ from the host (the unit carries its credentials' stamp,
// StampCredentials, so a rewritten credential file counts), or the binary c runs (Command[0]) changed
// since the unit was last seen healthy, it backs up the unit file, the
// environment file and the binary the installed unit runs (once per
// change: a backup that is still Pending, from a run that was
// interrupted, is kept, as it holds the last healthy state), writes c's
// files, reloads systemd, restarts the unit and waits for opts.Healthy.
// When the unit does not become healthy it restores the backup, reloads,
// restarts and waits again, and returns an error that says it rolled
// back. An unchanged unit is only started (a no-op when it runs), so a
// second Replace changes nothing.
func Replace(ctx context.Context, c Component, opts ReplaceOptions) (ReplaceResult, error) {
	res := ReplaceResult{Unit: c.Unit()}
	c, err := StampCredentials(opts.Root, c)
	if err != nil {
		return res, err
	}
	rendered, err := Render(c)
	if err != nil {
		return res, err
	}
	var changes []files.Change
	for _, f := range rendered {
		ch, err := planFile(opts.Root, f)
		if err != nil {
			return res, err
		}
		if ch.Changed() {
			changes = append(changes, ch)
		}
	}
	dir, err := files.Resolve(opts.Root, path.Join(opts.backupDir(), c.Name))
	if err != nil {
		return res, err
	}
	rec, err := readRecord(dir)
	if err != nil {
		return res, err
	}
	binChanged, binSum, err := binaryChanged(opts.Root, c, rec)
	if err != nil {
		return res, err
	}
	if len(changes) == 0 && !binChanged && (rec == nil || rec.Status != BackupPending) {
		if opts.DryRun || opts.Manager == nil {
			return res, nil
		}
		if err := opts.Manager.Start(ctx, c.Unit()); err != nil {
			return res, err
		}
		if rec != nil && rec.Status == BackupTaken {
			// Nothing to replace: the backup Backup took is current.
			rec.Status, rec.Binary = BackupHealthy, binSum
			return res, writeRecord(dir, rec)
		}
		return res, nil
	}
	res.Changed = true
	for _, ch := range changes {
		res.Changes = append(res.Changes, ch.Summary())
	}
	if binChanged {
		res.Changes = append(res.Changes, "binary "+c.Command[0]+" changed")
	}
	if opts.DryRun {
		for _, ch := range changes {
			if opts.Out != nil {
				fmt.Fprint(opts.Out, files.Diff(ch))
			}
		}
		res.Changes = append(res.Changes, "would back up and restart "+c.Unit()+", then wait until it is healthy")
		return res, nil
	}
	if opts.Manager == nil {
		return res, errors.New("replacing a unit needs a service manager")
	}
	switch {
	case rec == nil || rec.Status == BackupHealthy:
		if rec, err = takeBackup(opts.Root, dir, c); err != nil {
			return res, fmt.Errorf("backing up %s: %w", c.Unit(), err)
		}
		res.Changes = append(res.Changes, "backed up "+c.Unit()+" to "+path.Join(opts.backupDir(), c.Name))
	case rec.Status == BackupPending:
		res.Changes = append(res.Changes, "kept the backup of an interrupted replacement of "+c.Unit())
	default:
		res.Changes = append(res.Changes, "using the backup of "+c.Unit()+" taken before the upgrade")
	}
	// Pending before the first write: a run killed from here on leaves a
	// backup the rerun keeps and a unit it restarts.
	rec.Status = BackupPending
	if err := writeRecord(dir, rec); err != nil {
		return res, err
	}
	for _, ch := range changes {
		if err := os.MkdirAll(filepath.Dir(ch.HostPath), 0o755); err != nil {
			return res, err
		}
		if err := files.Apply(ch); err != nil {
			return res, fmt.Errorf("writing %s: %w", ch.Desired.Path, err)
		}
	}
	herr := restartHealthy(ctx, c.Unit(), opts, false)
	if herr == nil {
		rec.Status, rec.Binary = BackupHealthy, binSum
		if err := writeRecord(dir, rec); err != nil {
			return res, err
		}
		res.Changes = append(res.Changes, "restarted "+c.Unit()+" and it is healthy")
		return res, nil
	}
	res.Changes = append(res.Changes, "restarted "+c.Unit()+": not healthy: "+herr.Error())
	if err := restoreBackup(opts.Root, dir, rec); err != nil {
		return res, fmt.Errorf("%s is not healthy (%w), and restoring its backup failed: %v", c.Unit(), herr, err)
	}
	res.RolledBack = true
	rerr := restartHealthy(ctx, c.Unit(), opts, true)
	if rerr != nil {
		res.Changes = append(res.Changes, "rolled back "+c.Unit()+", and it is still not healthy: "+rerr.Error())
		return res, fmt.Errorf("%s is not healthy after the change (%w) and %w: %v", c.Unit(), herr, ErrRollbackUnhealthy, rerr)
	}
	rec.Status = BackupHealthy
	rec.Binary, err = fileSum(opts.Root, installedBinary(rec))
	if err != nil {
		return res, err
	}
	if err := writeRecord(dir, rec); err != nil {
		return res, err
	}
	res.Changes = append(res.Changes, "rolled back "+c.Unit()+" to its backup; it is healthy")
	return res, fmt.Errorf("%s was not healthy after the change and was rolled back to its backup: %w", c.Unit(), herr)
}

func (o ReplaceOptions) backupDir() string {
	if o.BackupDir == "" {
		return DefaultBackupDir
	}
	return o.BackupDir
}

// restartHealthy runs BeforeStart, reloads systemd, restarts unit and
// waits for health.
func restartHealthy(ctx context.Context, unit string, opts ReplaceOptions, rollback bool) error {
	if opts.BeforeStart != nil {
		if err := opts.BeforeStart(ctx, rollback); err != nil {
			return err
		}
	}
	if err := opts.Manager.DaemonReload(ctx); err != nil {
		return err
	}
	if err := opts.Manager.Restart(ctx, unit); err != nil {
		return err
	}
	if opts.Healthy == nil {
		return nil
	}
	return opts.Healthy(ctx)
}

// binaryChanged says whether c's binary differs from the one the unit
// ran when last seen healthy: by digest when a record has it; without a
// record (the first change after bootstrap), when the binary is newer
// than the installed unit file (the files phase replaced it in place
// after the unit was written). A binary at a new path changes the unit
// file itself.
func binaryChanged(root string, c Component, rec *backupRecord) (bool, string, error) {
	sum, err := fileSum(root, c.Command[0])
	if err != nil {
		return false, "", err
	}
	if rec != nil && rec.Binary != "" {
		return sum != "" && sum != rec.Binary, sum, nil
	}
	if rec != nil {
		// A backup taken before the change: the binary it saved.
		for _, f := range rec.Files {
			if f.Stored == "binary" && f.Path == c.Command[0] {
				return sum != "" && sum != f.SHA256, sum, nil
			}
		}
	}
	bin, err := files.Resolve(root, c.Command[0])
	if err != nil {
		return false, "", err
	}
	unit, err := files.Resolve(root, c.UnitPath())
	if err != nil {
		return false, "", err
	}
	bi, berr := os.Stat(bin)
	ui, uerr := os.Stat(unit)
	if berr != nil || uerr != nil {
		return false, sum, nil
	}
	return bi.ModTime().After(ui.ModTime()), sum, nil
}

// fileSum is the hex sha256 of the file at machine path p, "" when it
// does not exist. Anything but a regular file (a FIFO, which would block
// the read for ever, a device, a directory) is an error, found without
// opening it for reading (files.OpenRegular).
func fileSum(root, p string) (string, error) {
	if p == "" {
		return "", nil
	}
	hp, err := files.Resolve(root, p)
	if err != nil {
		return "", err
	}
	f, _, err := files.OpenRegular(hp, p, true)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ExecBinary is the binary path of the first ExecStart= of a unit file
// (as Render writes it: the path, unquoted unless it has blanks), "" when
// there is none.
func ExecBinary(unit []byte) string {
	for _, l := range strings.Split(string(unit), "\n") {
		rest, ok := strings.CutPrefix(l, "ExecStart=")
		if !ok {
			continue
		}
		rest = strings.TrimSuffix(strings.TrimSpace(rest), `\`)
		if strings.HasPrefix(rest, `"`) {
			if end := strings.Index(rest[1:], `"`); end >= 0 {
				return strings.ReplaceAll(rest[1:end+1], "%%", "%")
			}
			return ""
		}
		word, _, _ := strings.Cut(rest, " ")
		return strings.ReplaceAll(word, "%%", "%")
	}
	return ""
}

// installedBinary is the binary path of the backed-up unit file's record.
func installedBinary(rec *backupRecord) string {
	for _, f := range rec.Files {
		if f.Stored == "binary" {
			return f.Path
		}
	}
	return ""
}
