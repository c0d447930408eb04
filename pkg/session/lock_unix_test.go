//go:build unix

package session

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/report"
)

// holdLockEnv makes the test binary, re-executed, hold the run lock of the
// directory it names (see TestMain): it prints "held" once it holds it and
// keeps it until it is killed or its standard input ends.
const holdLockEnv = "MACHINEADM_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdLockEnv); dir != "" {
		l, err := acquireLock(dir, true, LockInfo{PID: os.Getpid(), Command: "machineadm bootstrap"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		l.release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder is a child process holding the run lock of a directory.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// holdLock starts a child process that takes the run lock of dir, and
// waits (at most 30 s) until it holds it.
func holdLock(t *testing.T, dir string) *holder {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), holdLockEnv+"="+dir)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: c, stdin: stdin}
	t.Cleanup(func() { h.kill(t) })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "held\n" {
			t.Fatalf("lock holder: %q, stderr %s", s, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the lock holder did not take the lock within 30 s")
	}
	return h
}

// kill ends the holder with SIGKILL (no handler, no cleanup of its own)
// and reaps it.
func (h *holder) kill(t *testing.T) {
	if h.cmd.ProcessState != nil {
		return
	}
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	_ = h.cmd.Wait()
	_ = h.stdin.Close()
}

// snapshot maps every path under root to its mode and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		m[strings.TrimPrefix(p, root)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameTree fails the test when root differs from before.
func sameTree(t *testing.T, what, root string, before map[string]string) {
	t.Helper()
	after := snapshot(t, root)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s: %s changed:\nbefore %q\nafter  %q", what, p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s written", what, p)
		}
	}
}

const lockTestToken = "abcdef.0123456789abcdef"

// lockSpec writes a worker spec (its token inline) whose host files are
// files, for prepare.
func lockSpec(t *testing.T, files string) string {
	t.Helper()
	return writeWorkerSpec(t, "{value: "+lockTestToken+"}", "  host:\n    files:\n"+files)
}

// bootstrapSpec writes a worker spec for the bootstrap cases whose token
// file is missing: should the lock ever fail to refuse it, the run stops
// in inputs-check, before any host phase and before any network traffic,
// instead of bootstrapping the test's host.
func bootstrapSpec(t *testing.T) string {
	t.Helper()
	return writeWorkerSpec(t, "{file: "+filepath.Join(t.TempDir(), "missing-token")+"}", "")
}

// writeWorkerSpec writes a worker join spec with token (a secret source
// in flow style) and the spec lines rest after spec.join, and returns its
// path.
func writeWorkerSpec(t *testing.T, token, rest string) string {
	t.Helper()
	doc := `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.example.internal:6443
    token: ` + token + `
    caCertHashes: ["sha256:` + strings.Repeat("ab", 32) + `"]
` + rest
	p := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// seedEvidence writes an earlier run's report, its previous report and a
// state journal under root's work directory, and returns that directory.
func seedEvidence(t *testing.T, root string) string {
	t.Helper()
	work := filepath.Join(root, "var/lib/machineadm")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"report.json":          `{"kind":"BootstrapReport","the":"last run's report"}`,
		"report.previous.json": `{"kind":"BootstrapReport","the":"run before"}`,
		"state.jsonl":          `{"specDigest":"sha256:` + strings.Repeat("cd", 32) + `"}` + "\n" + `{"completed":"preflight"}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// runSession runs o with its console and log captured.
func runSession(o Options) (string, error) {
	var b bytes.Buffer
	o.Out = &b
	o.LogFile = true
	err := Run(context.Background(), o)
	return b.String(), err
}

// A run while another process holds the lock ends with exit code 3, a
// message naming the holder, and nothing done or written: no report (the
// last one and its previous copy stay byte for byte), no log file, no
// state. That holds for prepare, bootstrap, `bootstrap phase NAME` and a
// run with an invalid spec. A dry run ignores the lock. Once the holder is
// killed with SIGKILL, the next run proceeds.
func TestHeldLockChangesNothingUntilItsHolderDies(t *testing.T) {
	root := t.TempDir()
	work := seedEvidence(t, root)
	h := holdLock(t, work)
	spec := lockSpec(t, "    - {path: /etc/motd, content: hello}\n")
	bs := bootstrapSpec(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec: {role: Nope}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	wantMsg := fmt.Sprintf("busy: another machineadm run holds the lock on this host (pid %d, command machineadm bootstrap); nothing was done", h.cmd.Process.Pid)

	for _, c := range []struct {
		name string
		o    Options
	}{
		{"prepare", Options{Command: Prepare, SpecFile: spec, Root: root}},
		{"bootstrap", Options{Command: Bootstrap, SpecFile: bs, ReportRoot: root, WorkDir: work}},
		{"bootstrap phase", Options{Command: Bootstrap, SpecFile: bs, ReportRoot: root, WorkDir: work, Only: "kubeadm-config"}},
		{"bootstrap with --skip-phases", Options{Command: Bootstrap, SpecFile: bs, ReportRoot: root, WorkDir: work, Skip: []string{"static-pods"}}},
		{"bootstrap with an unknown phase", Options{Command: Bootstrap, SpecFile: bs, ReportRoot: root, WorkDir: work, Only: "nope"}},
		{"invalid spec", Options{Command: Bootstrap, SpecFile: bad, ReportRoot: root, WorkDir: work}},
	} {
		out, err := runSession(c.o)
		var be *BusyError
		if ExitCode(err) != ExitBusy || !errors.As(err, &be) {
			t.Errorf("%s: exit %d (%v), want %d", c.name, ExitCode(err), err, ExitBusy)
			continue
		}
		if !strings.HasPrefix(err.Error(), wantMsg) || !strings.Contains(err.Error(), filepath.Join(work, LockFileName)) {
			t.Errorf("%s: message\n%s\nwant it to start with\n%s\nand name the lock file", c.name, err, wantMsg)
		}
		if out != "" {
			t.Errorf("%s: console output from a refused run:\n%s", c.name, out)
		}
		sameTree(t, c.name, root, before)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/motd")); err == nil {
		t.Error("a refused prepare wrote its file")
	}

	// A dry run writes only its own directory, and takes no lock.
	dr := t.TempDir()
	if out, err := runSession(Options{Command: Prepare, SpecFile: spec, Root: root, DryRun: true, DryRunDir: dr}); err != nil {
		t.Errorf("dry run while the lock is held: %v\n%s", err, out)
	}
	sameTree(t, "dry run", root, before)

	// SIGKILL: the holder runs no code of its own, the kernel drops its lock.
	h.kill(t)
	if out, err := runSession(Options{Command: Prepare, SpecFile: spec, Root: root}); err != nil {
		t.Fatalf("prepare after the holder was killed: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/motd")); err != nil || string(b) != "hello" {
		t.Errorf("prepare after the kill: /etc/motd %q, %v", b, err)
	}
	// The report rotated as for any run: the last one is now the previous.
	if b, _ := os.ReadFile(filepath.Join(work, "report.previous.json")); string(b) != `{"kind":"BootstrapReport","the":"last run's report"}` {
		t.Errorf("report.previous.json after the next run: %q", b)
	}
	if data, err := os.ReadFile(filepath.Join(work, "report.json")); err != nil {
		t.Error(err)
	} else if rep, err := report.Decode(data); err != nil || rep.Result != report.ResultSucceeded {
		t.Errorf("report after the kill: %v %+v", err, rep)
	}
	// Released: the file stays, empty, naming no holder.
	if b, err := os.ReadFile(filepath.Join(work, LockFileName)); err != nil || len(b) != 0 {
		t.Errorf("lock file after the run: %q, %v", b, err)
	}
}

// While a run holds the lock, its file is mode 0600 and says only its
// process ID and command, nothing of the spec's secrets; a second run in
// the same process is refused too (flock is per open file, not per
// process). The run holds it from its start to its end: here while
// host-check fetches a file from a loopback server that answers only when
// the test has looked.
func TestLockFileWhileARunHoldsIt(t *testing.T) {
	root := t.TempDir()
	content := "payload " + lockTestToken + "\n"
	sum := sha256.Sum256([]byte(content))
	looked := make(chan struct{})
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-looked:
		case <-time.After(60 * time.Second):
		}
		_, _ = io.WriteString(w, content)
	}))
	defer srv.Close()
	spec := lockSpec(t, "    - {path: /etc/payload, mode: \"0600\", source: {url: \""+srv.URL+"/payload\", sha256: "+hex.EncodeToString(sum[:])+"}}\n")
	done := make(chan error, 1)
	go func() {
		_, err := runSession(Options{Command: Prepare, SpecFile: spec, Root: root})
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("prepare ended before it fetched: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("prepare did not fetch within 60 s")
	}
	lockPath := filepath.Join(root, "var/lib/machineadm", LockFileName)
	fi, err := os.Lstat(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("lock file mode %v, want -rw-------", fi.Mode())
	}
	if di, err := os.Stat(filepath.Dir(lockPath)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("work directory created with %v (%v), want 0700", di.Mode(), err)
	}
	b, _ := os.ReadFile(lockPath)
	if want := fmt.Sprintf("pid: %d\ncommand: machineadm prepare\n", os.Getpid()); string(b) != want {
		t.Errorf("lock file holds %q, want %q", b, want)
	}
	if strings.Contains(string(b), lockTestToken) || strings.Contains(string(b), "0123456789abcdef") {
		t.Errorf("lock file holds the token: %q", b)
	}
	_, err = runSession(Options{Command: Prepare, SpecFile: spec, Root: root})
	if ExitCode(err) != ExitBusy || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("(pid %d, command machineadm prepare)", os.Getpid())) {
		t.Errorf("second run in the same process: exit %d: %v", ExitCode(err), err)
	}
	close(looked)
	if err := <-done; err != nil {
		t.Fatalf("the holding run: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/payload")); err != nil || string(b) != content {
		t.Errorf("/etc/payload %q, %v", b, err)
	}
}

// refusedLockPath runs prepare on root and bootstrap (its report under
// root, its work directory work) and checks that each exits 1 with every
// one of want in its error, prints nothing, and leaves root as it was.
func refusedLockPath(t *testing.T, root, work string, want ...string) {
	t.Helper()
	before := snapshot(t, root)
	spec := lockSpec(t, "    - {path: /etc/motd, content: hello}\n")
	for _, o := range []Options{
		{Command: Prepare, SpecFile: spec, Root: root},
		{Command: Bootstrap, SpecFile: bootstrapSpec(t), ReportRoot: root, WorkDir: work},
	} {
		out, err := runSession(o)
		ok := ExitCode(err) == ExitFailed
		for _, w := range want {
			ok = ok && strings.Contains(fmt.Sprint(err), w)
		}
		if !ok {
			t.Errorf("%s: exit %d: %v\nwant exit 1 saying %q", o.Command, ExitCode(err), err, want)
		}
		if out != "" {
			t.Errorf("%s: console output:\n%s", o.Command, out)
		}
		sameTree(t, string(o.Command), root, before)
	}
}

// A symbolic link at the lock's path is refused, never followed: the file
// it names keeps its content, the run writes nothing and says why; a hard
// link to another file is refused the same way.
func TestLockRefusesLinks(t *testing.T) {
	for _, kind := range []string{"symlink", "hardlink"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			work := seedEvidence(t, root)
			target := filepath.Join(t.TempDir(), "precious")
			if err := os.WriteFile(target, []byte("do not truncate\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := os.Symlink
			if kind == "hardlink" {
				link = os.Link
			}
			if err := link(target, filepath.Join(work, LockFileName)); err != nil {
				t.Fatal(err)
			}
			want := "a symbolic link, not followed"
			if kind == "hardlink" {
				want = "hard links"
			}
			refusedLockPath(t, root, work, want, "remove it and run again", filepath.Join(work, LockFileName))
			if b, _ := os.ReadFile(target); string(b) != "do not truncate\n" {
				t.Errorf("the link's target was written: %q", b)
			}
		})
	}
}

// A run with bad input creates no lock file (it changes nothing but its
// report); a real run creates the work directory 0700 and the file 0600.
func TestBadInputCreatesNoLock(t *testing.T) {
	root := t.TempDir()
	bad := lockSpec(t, "    - {path: etc/relative, content: x}\n")
	_, err := runSession(Options{Command: Prepare, SpecFile: bad, Root: root})
	if ExitCode(err) != ExitBadInput {
		t.Fatalf("invalid spec: exit %d: %v", ExitCode(err), err)
	}
	if _, err := os.Lstat(filepath.Join(root, "var/lib/machineadm", LockFileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an invalid spec created the lock file (%v)", err)
	}
	_, err = runSession(Options{Command: Prepare, SpecFile: lockSpec(t, "    - {path: /etc/motd, content: hello}\n"), Root: root, Skip: []string{"nope"}})
	if ExitCode(err) != ExitBadInput {
		t.Fatalf("unknown phase: exit %d: %v", ExitCode(err), err)
	}
	if _, err := os.Lstat(filepath.Join(root, "var/lib/machineadm", LockFileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an unknown phase name created the lock file (%v)", err)
	}
}

// A lock file owned by another user (here nobody's, mode 0000) is refused,
// exit 1, and left as it is: that user could hold the flock on it for as
// long as it likes, so that every run ends busy, and write the holder's
// lines the busy message prints; before, a run took it and made it 0600,
// its owner's to read and write. Root's file is taken (root can do all
// that anyway), and so is the run's own user's.
func TestLockRefusesAnotherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	root := t.TempDir()
	work := seedEvidence(t, root)
	path := filepath.Join(work, LockFileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	refusedLockPath(t, root, work, "owned by another user (uid 65534)", path)
	if err := os.Chown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	spec := lockSpec(t, "    - {path: /etc/motd, content: hello}\n")
	if _, err := runSession(Options{Command: Prepare, SpecFile: spec, Root: root}); err != nil {
		t.Fatalf("prepare with root's lock file: %v", err)
	}
}
