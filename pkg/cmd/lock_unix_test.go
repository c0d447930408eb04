//go:build unix

package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/session"
)

// flockHeld takes flock(2) LOCK_EX on path as another run would (here
// with the system call itself, not machineadm's code) and writes the
// holder's lines; the lock ends when the returned file is closed.
func flockHeld(t *testing.T, path string) *os.File {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "pid: %d\ncommand: machineadm bootstrap\n", os.Getpid())
	return f
}

// readAll maps each name in dir to its content ("" when missing).
func readAll(dir string, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		m[n] = string(b)
	}
	return m
}

// TestBusyExit3ChangesNothing: while another run holds the lock,
// bootstrap, `bootstrap phase NAME` and prepare exit 3 with the message
// on standard error, nothing on standard output, and the last report, its
// previous copy and the state journal byte for byte as they were, no log
// file; usage errors and a missing -f still exit 2. Once the lock is
// released the next run proceeds and rotates the report as usual.
func TestBusyExit3ChangesNothing(t *testing.T) {
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	rr := filepath.Join(tmp, "reports")
	reports := filepath.Join(rr, "var/lib/machineadm")
	for dir, files := range map[string]map[string]string{
		reports: {"report.json": `{"kind":"BootstrapReport","last":"run"}`, "report.previous.json": `{"kind":"BootstrapReport","run":"before"}`},
		work:    {"state.jsonl": `{"specDigest":"sha256:` + strings.Repeat("ef", 32) + `"}` + "\n"},
	} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A missing token file: should the lock not refuse the run, it stops
	// in inputs-check, before any host phase.
	doc := strings.Replace(cliWorker, "/etc/machineadm/secrets/bootstrap-token", filepath.Join(tmp, "missing-token"), 1)
	if !strings.Contains(doc, "missing-token") {
		t.Fatal("the spec's token file was not replaced")
	}
	spec := writeSpec(t, doc)
	lock := flockHeld(t, filepath.Join(work, session.LockFileName))
	root := t.TempDir()
	rootLock := flockHeld(t, filepath.Join(root, "var/lib/machineadm", session.LockFileName))
	defer rootLock.Close()
	before := readAll(reports, "report.json", "report.previous.json", session.LogFileName)
	stateBefore := readAll(work, "state.jsonl", session.LogFileName)
	msg := fmt.Sprintf("Error: busy: another machineadm run holds the lock on this host (pid %d, command machineadm bootstrap); nothing was done\n", os.Getpid())

	for _, args := range [][]string{
		{"bootstrap", "-f", spec, "--report-root", rr, "--work-dir", work},
		{"bootstrap", "phase", "kubeadm-config", "-f", spec, "--report-root", rr, "--work-dir", work},
		{"prepare", "-f", spec, "--root", root},
	} {
		code, out, errOut := run(t, "", args...)
		if code != session.ExitBusy || !strings.HasPrefix(errOut, msg) {
			t.Errorf("%q: exit %d, want %d; stderr:\n%s\nwant it to start with:\n%s", args, code, session.ExitBusy, errOut, msg)
		}
		if out != "" {
			t.Errorf("%q: standard output from a refused run:\n%s", args, out)
		}
	}
	if got := readAll(reports, "report.json", "report.previous.json", session.LogFileName); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("reports changed:\nbefore %v\nafter  %v", before, got)
	}
	if got := readAll(work, "state.jsonl", session.LogFileName); fmt.Sprint(got) != fmt.Sprint(stateBefore) {
		t.Errorf("state changed:\nbefore %v\nafter  %v", stateBefore, got)
	}
	if got := listFiles(t, root); len(got) != 1 || got[0] != "/var/lib/machineadm/"+session.LockFileName {
		t.Errorf("prepare --root wrote %v", got)
	}

	// Usage errors come first, lock or not.
	for _, args := range [][]string{
		{"bootstrap", "--report-root", rr, "--work-dir", work},
		{"bootstrap", "-f", spec, "--report-root", rr, "--work-dir", work, "--dry-run-dir", filepath.Join(tmp, "dr")},
		{"prepare", "-f", spec, "--root", filepath.Join(root, "missing")},
	} {
		if code, _, errOut := run(t, "", args...); code != session.ExitBadInput {
			t.Errorf("%q: exit %d, want 2; %s", args, code, errOut)
		}
	}

	// Released: the next run proceeds (and fails in kubeadm-config on the
	// missing token file, exit 1), recording as any run does.
	lock.Close()
	code, _, errOut := run(t, "", "bootstrap", "phase", "kubeadm-config", "-f", spec, "--report-root", rr, "--work-dir", work)
	if code != session.ExitFailed || !strings.Contains(errOut, "PayloadUnavailable") {
		t.Fatalf("after the lock was released: exit %d:\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(reports, "report.previous.json")); string(b) != `{"kind":"BootstrapReport","last":"run"}` {
		t.Errorf("report.previous.json %q, want the last run's report", b)
	}
	data, err := os.ReadFile(filepath.Join(reports, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := report.Decode(data); err != nil || rep.ErrorClass != errclass.PayloadUnavailable {
		t.Errorf("report after the lock was released: %v %+v", err, rep)
	}
}
