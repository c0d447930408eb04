package cpunits

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// recordName is the backup directory's record.
const recordName = "backup.json"

// readRecord reads dir's record; nil when there is none.
func readRecord(dir string) (*backupRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec backupRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("reading the backup record %s: %w", filepath.Join(dir, recordName), err)
	}
	return &rec, nil
}

// writeRecord replaces dir's record atomically (0600: it names paths and
// digests only).
func writeRecord(dir string, rec *backupRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, recordName), append(b, '\n'), 0o600)
}

// takeBackup saves, into dir (0700), the installed unit file of c, its
// environment file and the binary the installed unit runs, and records
// them as Pending. The binary is hard-linked when it can be (the files
// phase replaces a binary by rename, so the link keeps the old content at
// no cost), copied otherwise. The record is written last, so a backup
// interrupted half way is taken again.
func takeBackup(root, dir string, c Component) (*backupRecord, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	rec := &backupRecord{Unit: c.Unit(), Status: BackupPending}
	unitHost, err := files.Resolve(root, c.UnitPath())
	if err != nil {
		return nil, err
	}
	// Opened as saveFile opens it: a FIFO there would block the read.
	var unit []byte
	if f, _, err := files.OpenRegular(unitHost, c.UnitPath(), true); err == nil {
		unit, err = io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	saved := []struct{ path, stored string }{{c.UnitPath(), "unit"}, {c.EnvPath(), "env"}}
	if bin := ExecBinary(unit); bin != "" {
		saved = append(saved, struct{ path, stored string }{bin, "binary"})
	}
	for _, s := range saved {
		f, err := saveFile(root, dir, s.path, s.stored)
		if err != nil {
			return nil, err
		}
		rec.Files = append(rec.Files, f)
	}
	return rec, writeRecord(dir, rec)
}

// saveFile stores the file at machine path p as dir/stored; anything but
// a regular file there is an error. The file is opened once
// (files.OpenRegular: a FIFO or device is never opened for reading) and what
// is stored is that file: hard-linked when the link made is of it (not
// of a symlink or another file swapped in at the name since: link(2)
// does not follow a symlink, which would store the link and restore its
// target's content with the mode examined), else copied from the open
// file, the size examined and no more.
func saveFile(root, dir, p, stored string) (backupFile, error) {
	hp, err := files.Resolve(root, p)
	if err != nil {
		return backupFile{}, err
	}
	in, fi, err := files.OpenRegular(hp, p, true)
	if errors.Is(err, fs.ErrNotExist) {
		return backupFile{Path: p, Absent: true}, nil
	}
	if err != nil {
		return backupFile{}, err
	}
	defer in.Close()
	dst := filepath.Join(dir, stored)
	if !linkedSame(hp, dst, fi) {
		if err := copyFile(in, fi.Size(), dst, fi.Mode().Perm()); err != nil {
			return backupFile{}, fmt.Errorf("copying %s: %w", p, err)
		}
	}
	sum, err := fileSum("/", dst)
	if err != nil {
		return backupFile{}, err
	}
	return backupFile{Path: p, Stored: stored, Mode: fi.Mode().Perm(), SHA256: sum}, nil
}

// linkedSame hard-links hp as dst and says whether dst is then the file
// fi describes; a link of anything else is removed.
func linkedSame(hp, dst string, fi fs.FileInfo) bool {
	if os.Link(hp, dst) != nil {
		return false
	}
	if li, err := os.Lstat(dst); err == nil && os.SameFile(li, fi) {
		return true
	}
	os.Remove(dst)
	return false
}

// restoreBackup puts rec's files back: each saved file (checked against
// its digest) by atomic rename of a copy made new beside it
// (restoreFile), each absent one removed.
func restoreBackup(root, dir string, rec *backupRecord) error {
	for _, f := range rec.Files {
		hp, err := files.Resolve(root, f.Path)
		if err != nil {
			return err
		}
		if f.Absent {
			if err := os.Remove(hp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		src := filepath.Join(dir, f.Stored)
		sum, err := fileSum("/", src)
		if err != nil {
			return err
		}
		if sum != f.SHA256 {
			return fmt.Errorf("the backup of %s (%s) does not match its recorded sha256", f.Path, src)
		}
		if cur, err := fileSum("/", hp); err == nil && cur == f.SHA256 {
			continue
		}
		if err := restoreFile(src, hp, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// restoreFile puts the content of src at hp with mode: a new file of a
// random name beside hp, created exclusively (never an existing name, nor
// through a symlink planted there: hp may lie in a directory another user
// writes), synced and renamed over hp (atomicfile).
// What an earlier rollback killed before its rename left beside hp is
// removed first (removeLeftovers), so that reruns do not pile up copies
// of a binary.
func restoreFile(src, hp string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	removeLeftovers(hp)
	return atomicfile.WriteFromOwned(hp, in, mode, -1, -1)
}

// removeLeftovers removes, beside hp, the temporary files atomicfile
// makes for it (".NAME.tmp-DIGITS") that a run killed before its rename
// left: regular files with one name owned by this process's user, never
// anything else (the directory may be another user's to write). Errors
// are ignored: a leftover costs space only.
func removeLeftovers(hp string) {
	dir, prefix := filepath.Dir(hp), "."+filepath.Base(hp)+".tmp-"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		digits, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || files.Links(fi) != 1 {
			continue
		}
		if u, _ := files.Owner(fi); u != os.Geteuid() {
			continue
		}
		os.Remove(p)
	}
}

// copyFile copies size bytes of in to dst, a name that must not exist
// (created exclusively, so a symlink there is not followed), with mode,
// synced; fewer bytes (the file was cut since it was examined) are an
// error.
func copyFile(in io.Reader, size int64, dst string, mode fs.FileMode) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if n, err := io.Copy(out, io.LimitReader(in, size)); err != nil || n != size {
		out.Close()
		os.Remove(dst)
		if err == nil {
			err = fmt.Errorf("read %d bytes of %d: the file changed while it was copied", n, size)
		}
		return err
	}
	// Through the descriptor (the umask took bits from mode).
	if err := out.Chmod(mode); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Backup takes the backup Replace would take of c's installed unit, its
// environment file and the binary it runs, unless a Pending one (from an
// interrupted replacement) or a Taken one (from an earlier Backup of
// this upgrade) is there. Call it before anything replaces the
// binary in place (the files phase of an upgrade): the hard link then
// keeps the old binary, which a rollback puts back. It returns whether it
// took one.
func Backup(root, backupDir string, c Component) (bool, error) {
	if backupDir == "" {
		backupDir = DefaultBackupDir
	}
	dir, err := files.Resolve(root, filepath.Join(backupDir, c.Name))
	if err != nil {
		return false, err
	}
	rec, err := readRecord(dir)
	if err != nil || rec != nil && rec.Status != BackupHealthy {
		return false, err
	}
	if rec, err = takeBackup(root, dir, c); err != nil {
		return false, fmt.Errorf("backing up %s: %w", c.Unit(), err)
	}
	rec.Status = BackupTaken
	return true, writeRecord(dir, rec)
}
