// Package testpty checks that opening a terminal does not make it the
// controlling terminal of a process that leads its session without one
// (a systemd service): the terminal's hangup would then send it SIGHUP.
// Linux only (pseudo-terminals through /dev/ptmx, /proc/self/stat).
package testpty

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// childEnv, set, makes a test binary the child of NoControllingTerminal.
const childEnv = "MACHINEADM_TESTPTY_CHILD"

// Child is called first by the TestMain of a package that uses
// NoControllingTerminal: in the child it calls open with the terminal's
// path, prints the process's controlling terminal (/proc/self/stat's
// tty_nr) and exits; elsewhere it returns at once.
func Child(open func(path string)) {
	p := os.Getenv(childEnv)
	if p == "" {
		return
	}
	open(p)
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// Fields after the command's closing parenthesis: state, ppid, pgrp,
	// session, tty_nr.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	fmt.Println("tty_nr", f[4])
	os.Exit(0)
}

// NoControllingTerminal runs the test binary again as a session leader
// without a controlling terminal (setsid), whose Child opens a new
// pseudo-terminal's path, and fails t when that made it the child's
// controlling terminal. It skips t without pseudo-terminals.
func NoControllingTerminal(t *testing.T) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptmx.Close()
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("TIOCGPTN: %v", e)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("TIOCSPTLCK: %v", e)
	}
	pts := "/dev/pts/" + strconv.Itoa(int(n))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+pts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 || f[0] != "tty_nr" {
		t.Fatalf("child said %q", out)
	}
	if f[1] != "0" {
		t.Errorf("opening %s made it the controlling terminal (tty_nr %s)", pts, f[1])
	}
}
