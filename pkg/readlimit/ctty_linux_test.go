package readlimit

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

// cttyChildEnv, set, makes the test binary the child of
// TestFileTakesNoControllingTerminal: it reads the terminal named there
// with File, then prints its controlling terminal (/proc/self/stat's
// tty_nr).
const cttyChildEnv = "READLIMIT_TEST_CTTY_CHILD"

func TestMain(m *testing.M) {
	if p := os.Getenv(cttyChildEnv); p != "" {
		_, err := File(p, 16)
		stat, serr := os.ReadFile("/proc/self/stat")
		if serr != nil {
			fmt.Println("error", serr)
			os.Exit(1)
		}
		// Fields after the command's closing parenthesis: state, ppid,
		// pgrp, session, tty_nr.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		fmt.Println("tty_nr", f[4], "err", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFileTakesNoControllingTerminal: a terminal at a path File reads (a
// spec's report path or secret file naming /dev/ttyS0) is opened without
// becoming the controlling terminal of a process that has none and leads
// its session, as a systemd service does: opened so, the terminal's
// hangup would send it SIGHUP, ending the run.
func TestFileTakesNoControllingTerminal(t *testing.T) {
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
	cmd.Env = append(os.Environ(), cttyChildEnv+"="+pts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != "tty_nr" {
		t.Fatalf("child said %q", out)
	}
	if fields[1] != "0" {
		t.Errorf("reading %s made it the controlling terminal (tty_nr %s): %s", pts, fields[1], out)
	}
}
