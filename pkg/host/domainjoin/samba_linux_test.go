package domainjoin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testsambadc"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/report"
)

// The real Active Directory test: Debian's samba provisioned as an AD
// domain controller inside a network, mount and UTS namespace the test
// creates (`unshare --net --mount --uts`), and the real adcli joining it.
const (
	sambaNetnsEnv = "MACHINEADM_TEST_IN_SAMBA_NETNS"
	// MACHINEADM_REQUIRE_SAMBA=1 (set by CI) fails instead of skipping
	// when root, unshare, samba or adcli is missing.
	requireSambaEnv = "MACHINEADM_REQUIRE_SAMBA"

	dcIP        = "10.231.77.10"
	testDomain  = "corp.example.test"
	testRealm   = "CORP.EXAMPLE.TEST"
	sambaWait   = 90 * time.Second
	nodeName    = "node1"
	dcName      = "dc1"
	principalOK = "host/NODE1@" + testRealm
)

// The domain's administrator password and the wrong one are new in every
// test process: the /proc scanner looks for them in every process on the
// machine, and another run of this test beside this one (samba-tool
// provision takes the password on its command line) must not look like a
// leak of ours. The fixed prefixes meet AD's complexity rule (upper, lower,
// digit, symbol).
var (
	adminPass = "Adm1n-" + rand.Text()
	wrongPass = "Wr0ng-" + rand.Text()
)

func TestJoinRealSambaDC(t *testing.T) {
	if os.Getenv(sambaNetnsEnv) == "1" {
		sambaInNetns(t)
		return
	}
	skip := func(why string) {
		if os.Getenv(requireSambaEnv) == "1" {
			t.Fatalf("%s (%s=1)", why, requireSambaEnv)
		}
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		skip("needs root for unshare --net --mount --uts")
	}
	for _, bin := range append([]string{"adcli", "klist", "ip"}, testsambadc.Binaries...) {
		if _, err := exec.LookPath(bin); err != nil {
			skip(bin + " not installed (hack/install-deps.sh)")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "--mount", "--uts", "--propagation", "private",
		os.Args[0], "-test.run", "^TestJoinRealSambaDC$", "-test.v")
	cmd.Env = append(os.Environ(), sambaNetnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("inside the namespaces:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestJoinRealSambaDC") {
		t.Fatal("child did not pass")
	}
}

func sambaInNetns(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// A veth pair carries the DC's address (there is no dummy module).
	run("ip", "link", "set", "lo", "up")
	run("ip", "link", "add", "dcv0", "type", "veth", "peer", "name", "dcv1")
	run("ip", "addr", "add", dcIP+"/24", "dev", "dcv0")
	run("ip", "link", "set", "dcv0", "up")
	run("ip", "link", "set", "dcv1", "up")
	// The DC's internal DNS answers for the domain; the bind mount lives
	// in this private mount namespace only.
	resolv := filepath.Join(dir, "resolv.conf")
	writeFile(t, resolv, "nameserver "+dcIP+"\n", 0o644)
	if err := syscall.Mount(resolv, "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting resolv.conf: %v", err)
	}
	if err := syscall.Sethostname([]byte(nodeName)); err != nil {
		t.Fatal(err)
	}
	dc := startDC(t, filepath.Join(dir, "dc"))
	defer dc.Stop()

	root := filepath.Join(dir, "root")
	secretFile := "/etc/machineadm/secrets/ad-password"
	writeFile(t, filepath.Join(root, secretFile), adminPass+"\n", 0o600)
	dj := &machineadm.DomainJoin{
		Domain:           testDomain,
		DomainController: dcIP,
		Credentials:      &machineadm.DomainCredentials{Username: "Administrator", Password: machineadm.SecretSource{File: secretFile}},
		Linux:            &machineadm.LinuxDomainJoin{Keytab: "/etc/krb5.keytab", WriteKrb5Conf: true, WriteSSSDConf: true},
	}

	// adcli runs through a wrapper that records its own command line and
	// environment from /proc (the same as adcli's: it execs adcli with
	// its arguments), so the check never depends on catching a short-lived
	// process; the scanner below also watches every other process.
	seenFile := filepath.Join(dir, "adcli-seen")
	wrapper := filepath.Join(dir, "adcli-wrapper")
	writeFile(t, wrapper, "#!/bin/sh\n{ tr '\\0' ' ' </proc/$$/cmdline; echo; tr '\\0' '\\n' </proc/$$/environ; } >>\"$ADCLI_SEEN\"\nexec adcli \"$@\"\n", 0o755)
	t.Setenv("ADCLI_SEEN", seenFile)
	joiner := func(root string) Joiner { return &Adcli{Path: wrapper, Root: root} }

	// Run 1 joins, while a scanner watches every process's command line
	// and environment for the password.
	var logs bytes.Buffer
	rec := report.NewRecorder(report.Meta{Command: "bootstrap"}, nil, nil, nil)
	stop := scanProcs(t, adminPass)
	res, err := runRecorded(t, rec, &logs, root, dj, joiner(root))
	hits := stop()
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if len(hits) > 0 {
		t.Errorf("the password appeared in /proc: %v", hits)
	}
	if !res.Changed || len(res.Changes) == 0 || !strings.Contains(res.Changes[0], "validated join to domain "+testDomain) {
		t.Errorf("run 1 result %+v: want Changed and adcli testjoin's message first", res)
	}
	t.Logf("run 1: %q", res.Changes)
	kt := filepath.Join(root, "etc/krb5.keytab")
	fi, err := os.Stat(kt)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("keytab mode %v, want 0600", fi.Mode().Perm())
	}
	if kl := run("klist", "-k", kt); !strings.Contains(kl, principalOK) {
		t.Errorf("klist -k lacks %s:\n%s", principalOK, kl)
	}
	if fi, err := os.Stat(filepath.Join(root, SSSDConfPath)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sssd.conf: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, Krb5ConfPath)); !strings.Contains(string(data), "default_realm = "+testRealm) {
		t.Errorf("krb5.conf:\n%s", data)
	}

	// The DC's own database has the computer account.
	if names, err := dc.Computers(context.Background()); err != nil || !slices.Contains(names, "NODE1$") {
		t.Errorf("computer accounts %q (%v): want NODE1$", names, err)
	}

	// Run 2 (a new run) finds the join and changes nothing.
	res, err = runRecorded(t, rec, &logs, root, dj, joiner(root))
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if res.Changed || !strings.Contains(res.Changes[0], "already joined") || !strings.Contains(res.Changes[0], "validated join") {
		t.Errorf("run 2 result %+v: want unchanged with adcli testjoin's message", res)
	}

	// A wrong password on a fresh host: DomainJoinFailed with a hint.
	root2 := filepath.Join(dir, "root2")
	writeFile(t, filepath.Join(root2, secretFile), wrongPass, 0o600)
	stop = scanProcs(t, wrongPass)
	_, err = runRecorded(t, rec, &logs, root2, dj, joiner(root2))
	hits = stop()
	if len(hits) > 0 {
		t.Errorf("the wrong password appeared in /proc: %v", hits)
	}
	class, hint := errclass.Of(err)
	if class != errclass.DomainJoinFailed || !strings.Contains(hint, "credentials") {
		t.Errorf("wrong password: class %s hint %q (err %v)", class, hint, err)
	}
	if err != nil && strings.Contains(err.Error(), wrongPass) {
		t.Error("the error shows the password")
	}
	t.Logf("wrong password: %v; hint: %s", err, hint)

	seen, err := os.ReadFile(seenFile)
	if err != nil || !bytes.Contains(seen, []byte("--stdin-password")) || !bytes.Contains(seen, []byte("testjoin")) {
		t.Errorf("the wrapper did not record adcli's join and testjoin (%v):\n%s", err, seen)
	}
	for _, secret := range []string{adminPass, wrongPass} {
		if bytes.Contains(seen, []byte(secret)) {
			t.Errorf("a password is in adcli's command line or environment:\n%s", seen)
		}
	}

	// Neither password is in the log or the report (recorded without a
	// redactor that knows them: nothing relies on redaction here).
	if err := rec.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, _ := rec.Report()
	repJSON, _ := json.Marshal(rep)
	for _, secret := range []string{adminPass, wrongPass} {
		if bytes.Contains(logs.Bytes(), []byte(secret)) {
			t.Errorf("the log holds a password:\n%s", logs.String())
		}
		if bytes.Contains(repJSON, []byte(secret)) {
			t.Errorf("the report holds a password:\n%s", repJSON)
		}
	}
	if rep.ErrorClass != errclass.DomainJoinFailed || !strings.Contains(string(repJSON), "validated join") {
		t.Errorf("report: class %s\n%s", rep.ErrorClass, repJSON)
	}
}

// runRecorded runs the step once as a fresh run and records it as a phase.
func runRecorded(t *testing.T, rec *report.Recorder, logs *bytes.Buffer, root string, dj *machineadm.DomainJoin, j Joiner) (host.Result, error) {
	t.Helper()
	env := &host.Env{Root: root, Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	start := time.Now()
	defer func() { t.Logf("step run in %s took %s", root, time.Since(start).Round(time.Millisecond)) }()
	s := Step(dj, Options{Joiner: j})
	rec.PhaseStarted(s.Name)
	err := s.Check(context.Background(), env)
	var res host.Result
	if err == nil {
		res, err = s.Apply(context.Background(), env)
	}
	switch {
	case err != nil:
		rec.Fail(s.Name, err)
	case res.Changed:
		rec.PhaseFinished(s.Name, report.PhaseSucceeded, res.Changes[0])
	default:
		rec.PhaseFinished(s.Name, report.PhaseUnchanged, res.Changes[0])
	}
	return res, err
}

// startDC provisions a samba AD DC in dir and serves it until the
// DC's Stop is called.
func startDC(t *testing.T, dir string) *testsambadc.DC {
	t.Helper()
	// The DC has a host name of its own (a UTS namespace inside this one),
	// so that the joining host "node1" gets a computer account of its own.
	dc, err := testsambadc.Start(context.Background(), testsambadc.Options{
		Dir: dir, Realm: testRealm, Domain: "CORP", HostName: dcName, IP: dcIP, Interface: "dcv0",
		AdminPassword: adminPass, Wait: sambaWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("provisioned %s in %s; samba serves LDAP and Kerberos after %s", testRealm,
		dc.Provisioned.Round(time.Second), dc.Serving.Round(time.Second))
	return dc
}

// scanProcs watches /proc/*/cmdline and /proc/*/environ for secret
// until the returned function is called, which reports every hit.
func scanProcs(t *testing.T, secret string) func() []string {
	var mu sync.Mutex
	var hits []string
	seen := 0
	done := make(chan struct{})
	finished := make(chan struct{})
	self := fmt.Sprint(os.Getpid())
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			procs, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range procs {
				if filepath.Base(p) == self {
					continue // this test holds the password in memory, not in its command line
				}
				for _, f := range []string{"cmdline", "environ"} {
					data, err := os.ReadFile(filepath.Join(p, f))
					if err != nil {
						continue
					}
					if f == "cmdline" && bytes.Contains(data, []byte("adcli")) {
						mu.Lock()
						seen++
						mu.Unlock()
					}
					if bytes.Contains(data, []byte(secret)) {
						mu.Lock()
						hits = append(hits, p+"/"+f)
						mu.Unlock()
					}
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() []string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		t.Logf("the /proc scanner saw adcli's command line %d times", seen)
		return hits
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
