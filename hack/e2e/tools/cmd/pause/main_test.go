package main

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary runs main when PAUSE_TEST_MAIN is set: the tests start
// it as the pause process. A SIGTERM that arrives before main's
// signal.Notify ends a Go process by the signal (the runtime's default),
// and when main has called it is not observable from outside (the
// runtime has a handler for SIGTERM from its start). So the test process
// takes SIGTERM on a channel it never reads first: an early one is dropped
// and the test repeats SIGTERM until main's own handler takes one.
func TestMain(m *testing.M) {
	if os.Getenv("PAUSE_TEST_MAIN") == "1" {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM)
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

// TestRunsUntilTerminated: without arguments pause runs until SIGTERM,
// then exits 0.
func TestRunsUntilTerminated(t *testing.T) {
	c := pause()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("pause without -v exited on its own: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("pause after SIGTERM: %v, want exit 0", err)
			}
			return
		case <-tick.C:
			_ = c.Process.Signal(syscall.SIGTERM) // an error: it has exited
		case <-deadline:
			_ = c.Process.Kill()
			t.Fatal("pause did not exit within a minute of SIGTERM")
		}
	}
}
