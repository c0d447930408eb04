package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// The run lock. Two real runs on one host (cloud-init's runcmd and
// machineadm.service, or an operator retrying while the first boot's run
// still waits for the control plane) would run kubeadm's phases against
// the same /etc/kubernetes, append to the same state journal and rotate
// each other's outcome report. A real run therefore holds an exclusive
// lock on LockFileName in its work directory from before it records
// anything until it exits; a second run finds it held and ends at once,
// with exit code 3 (*BusyError) and nothing done or written.
//
// The lock is the kernel's (flock(2) on Unix, LockFileEx on Windows), not
// the file's existence: it goes with the process, SIGKILL and the OOM
// killer included, so a crashed run never leaves a stale lock. The file's
// content only says who holds it, for the message: the lines "pid: N"
// and "command: C" (LockInfo), no secrets.

// LockFileName is the run lock's file in the work directory
// (/var/lib/machineadm/lock by default; under --root for prepare).
const LockFileName = "lock"

// lockFileMode is the lock file's mode.
const lockFileMode = 0o600

// maxLockInfo bounds what is read of a held lock's file, in bytes.
const maxLockInfo = 4 << 10

// Reading a held lock's content: its holder writes it right after taking
// the lock, so an empty file is read again, a few times, briefly.
const (
	lockInfoTries = 10
	lockInfoWait  = 50 * time.Millisecond
)

// errNotOwnLock marks what is at the lock's path and is not a lock file
// machineadm would have made: a symbolic link, a directory, a FIFO, a
// file with more than one link. errLockLink is the symbolic link (or a
// Windows reparse point).
var (
	errNotOwnLock = errors.New("not machineadm's lock file")
	errLockLink   = fmt.Errorf("%w: a symbolic link, not followed", errNotOwnLock)
)

// LockInfo is what a run lock's file says about its holder.
type LockInfo struct {
	// PID is the holder's process ID; 0 when unknown.
	PID int
	// Command is the holder's command line as machineadm names it
	// ("machineadm bootstrap", "machineadm bootstrap phase certs",
	// "machineadm prepare"), without its flags; "" when unknown.
	Command string
}

// text is the file content of i.
func (i LockInfo) text() []byte {
	return fmt.Appendf(nil, "pid: %d\ncommand: %s\n", i.PID, i.Command)
}

// parseLockInfo reads the "key: value" lines of a lock file. Unknown
// lines are ignored; the command is kept printable and short, since it is
// printed.
func parseLockInfo(b []byte) LockInfo {
	var i LockInfo
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := strings.Cut(string(line), ": ")
		if !ok {
			continue
		}
		switch k {
		case "pid":
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				i.PID = n
			}
		case "command":
			i.Command = printable(v, 200)
		}
	}
	return i
}

// printable keeps the printable ASCII of s, at most n bytes of it.
func printable(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= n {
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}

// BusyError is a run refused because another machineadm run holds the run
// lock of the same work directory: nothing was done and nothing written
// (no report, no log line, no state). It maps to exit code 3 (ExitBusy).
type BusyError struct {
	// Path is the lock file's host path.
	Path string
	// Holder is what the lock file says about the run holding it.
	Holder LockInfo
}

func (e *BusyError) Error() string {
	pid, command := "unknown", "unknown"
	if e.Holder.PID > 0 {
		pid = strconv.Itoa(e.Holder.PID)
	}
	if e.Holder.Command != "" {
		command = e.Holder.Command
	}
	return fmt.Sprintf("busy: another machineadm run holds the lock on this host (pid %s, command %s); nothing was done\nhint: wait for it to end ('machineadm report' shows its outcome), then run again; the lock is %s and goes away with its process", pid, command, e.Path)
}

// runLock is a held run lock; release ends it.
type runLock struct {
	f *os.File
}

// release empties the lock file (so that it names no run once none holds
// it) and closes it, which ends the lock. A nil lock does nothing.
func (l *runLock) release() {
	if l == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = l.f.Close()
}

// lockDir is the host directory of the run lock of o in workDir: the work
// directory itself on a host, and, for prepare --root IMAGE, the work
// directory inside the image, resolved like the rest of prepare's writes
// (files.Resolve: links followed without leaving the root).
func lockDir(o Options, workDir string) (string, error) {
	if o.Root == "/" || o.Root == "" {
		return workDir, nil
	}
	return files.Resolve(o.Root, filepath.ToSlash(workDir))
}

// acquireLock takes the run lock in dir for the run described by info,
// without waiting. With create, missing parts are created: dir with mode
// 0700 and the file with mode 0600. Without create (a run with bad input,
// which must change nothing), a missing file means that no run holds the
// lock (a holder creates it first): the result is nil, nil.
//
// A lock held by another process is a *BusyError; anything that is not a
// regular file of one link at the path (a symbolic link, which is never
// followed, a directory, a FIFO, a hard link to another file) is refused
// with an error naming the path, and so is an error of the file system.
func acquireLock(dir string, create bool, info LockInfo) (*runLock, error) {
	path := filepath.Join(dir, LockFileName)
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("run lock: %w", err)
		}
	}
	f, err := openLockFile(path, create)
	if err != nil {
		if !create && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if errors.Is(err, errNotOwnLock) {
			return nil, fmt.Errorf("run lock %s: %w; remove it and run again", path, err)
		}
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	if !held {
		holder := readLockInfo(f)
		_ = f.Close()
		return nil, &BusyError{Path: path, Holder: holder}
	}
	if err := writeLockInfo(f, info); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	return &runLock{f: f}, nil
}

// writeLockInfo replaces the lock file's content with info and makes its
// mode 0600 (a file left by hand may have another).
func writeLockInfo(f *os.File, info LockInfo) error {
	if err := f.Chmod(lockFileMode); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(info.text(), 0)
	return err
}

// readLockInfo reads the holder's content of a held lock file; an empty
// one (its holder has just taken the lock) is read again a few times.
func readLockInfo(f *os.File) LockInfo {
	for try := 0; ; try++ {
		b, _ := io.ReadAll(io.NewSectionReader(f, 0, maxLockInfo))
		if i := parseLockInfo(b); i.PID != 0 || try+1 >= lockInfoTries {
			return i
		}
		time.Sleep(lockInfoWait)
	}
}

// lockCommand is how the lock names the run of o.
func lockCommand(o Options) string {
	c := "machineadm " + string(o.Command)
	if o.Only != "" {
		c += " phase " + o.Only
	}
	return c
}
