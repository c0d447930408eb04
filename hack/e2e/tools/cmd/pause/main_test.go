package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary runs main when PAUSE_TEST_MAIN is set: the tests start
// it as the pause process.
func TestMain(m *testing.M) {
	if os.Getenv("PAUSE_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func pause(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "PAUSE_TEST_MAIN=1")
	return c
}

func TestVersionFlagPrintsAndExits(t *testing.T) {
	out, err := pause("-v").Output()
	if err != nil {
		t.Fatalf("pause -v: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		t.Fatalf("pause -v printed %q, want %q", got, version)
	}
}

func TestRunsUntilTerminated(t *testing.T) {
	// The Go runtime catches SIGTERM from its start, before main's
	// signal.Notify: a SIGTERM in between ends the process by the signal.
	// That start is not observable from here, so such an end is tried
	// again (a few times); any other end fails.
	for attempt := 1; ; attempt++ {
		err := runAndTerminate(t)
		var exit *exec.ExitError
		if err != nil && errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM && attempt < 5 {
			continue
		}
		if err != nil {
			t.Fatalf("pause after SIGTERM: %v, want exit 0", err)
		}
		return
	}
}

// runAndTerminate starts pause without arguments (it must not end before
// it catches SIGTERM), sends it SIGTERM and returns how it ended.
func runAndTerminate(t *testing.T) error {
	c := pause()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	for deadline := time.Now().Add(time.Minute); !catches(t, c.Process.Pid, syscall.SIGTERM); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("pause without -v exited on its own: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			t.Fatal("pause did not catch SIGTERM within a minute")
		}
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		_ = c.Process.Kill()
		t.Fatal("pause did not exit within a minute of SIGTERM")
		return nil
	}
}

// catches says whether process pid has a handler for sig (the SigCgt mask
// of /proc/PID/status).
func catches(t *testing.T, pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigCgt:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return m&(1<<(uint(sig)-1)) != 0
		}
	}
	t.Fatal("no SigCgt in /proc/PID/status")
	return false
}
