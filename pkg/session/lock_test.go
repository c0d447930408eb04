package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lock's own cycle, on every OS (flock on Unix, LockFileEx on
// Windows): a second acquisition while the first is held is a *BusyError
// naming the holder; after release it succeeds again.
func TestAcquireLockTwice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	me := LockInfo{PID: os.Getpid(), Command: "machineadm prepare"}
	first, err := acquireLock(dir, true, me)
	if err != nil {
		t.Fatal(err)
	}
	_, err = acquireLock(dir, true, LockInfo{PID: 1, Command: "machineadm bootstrap"})
	var be *BusyError
	if !errors.As(err, &be) || be.Holder != me || ExitCode(err) != ExitBusy {
		t.Fatalf("second acquisition: %v (holder %+v), want busy with %+v", err, be, me)
	}
	if !strings.Contains(err.Error(), "command machineadm prepare") || be.Path != filepath.Join(dir, LockFileName) {
		t.Errorf("message %q, path %q", err, be.Path)
	}
	first.release()
	again, err := acquireLock(dir, false, me)
	if err != nil || again == nil {
		t.Fatalf("after release: %v, %v", again, err)
	}
	again.release()
}

// What a lock file says is printed in another run's message: only
// printable characters of a bounded command, a positive PID.
func TestParseLockInfo(t *testing.T) {
	for _, c := range []struct {
		in   string
		want LockInfo
	}{
		{"pid: 42\ncommand: machineadm bootstrap\n", LockInfo{42, "machineadm bootstrap"}},
		{"pid: -1\ncommand: \x1b[31mred\x07\n", LockInfo{0, "[31mred"}},
		{"", LockInfo{}},
		{"pid: 7\ncommand: " + strings.Repeat("x", 500), LockInfo{7, strings.Repeat("x", 200)}},
	} {
		if got := parseLockInfo([]byte(c.in)); got != c.want {
			t.Errorf("parseLockInfo(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
	if got := (&BusyError{Path: "/x/lock"}).Error(); !strings.HasPrefix(got, "busy: another machineadm run holds the lock on this host (pid unknown, command unknown); nothing was done") {
		t.Errorf("unknown holder: %q", got)
	}
}
