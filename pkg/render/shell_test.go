package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shellFor renders the shell stub for spec with the agent at srv/agent.
func shellFor(t *testing.T, spec []byte, o Options) []byte {
	t.Helper()
	o.Format = FormatShell
	_, cfg := loadExample(t, "worker")
	return mustRender(t, spec, cfg, o)
}

func TestShellStubRunsVerifiedAgent(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}})

	r := runStub(t, script)
	installed := filepath.Join(r.root, LinuxAgentPath)
	checkBootstrapped(t, r, installed, spec)
	if got, _ := os.ReadFile(installed); string(got) != string(agent) {
		t.Error("the installed agent differs from the served one")
	}
	noTemp(t, installed)
	// The stub runs under umask 077, yet the directories it creates for
	// the agent must let everyone reach it (a kubelet plugin, an operator
	// without root running "machineadm version").
	for _, d := range []string{"usr", "usr/local", "usr/local/bin"} {
		checkMode(t, filepath.Join(r.root, d), 0o755)
	}

	// A second run finds the verified agent in place and downloads nothing.
	srv.set("/agent", nil)
	r2 := runScript(t, r.root, r.record, []string{"/bin/sh", filepath.Join(r.root, "stub.sh")})
	checkBootstrapped(t, r2, installed, spec)
	if n := srv.count("/agent"); n != 1 {
		t.Errorf("agent downloaded %d times over two runs, want 1", n)
	}
	wantStderr(t, r2, "running ")
}

func TestShellStubWrongDigestRunsNothing(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	srv := newAgentServer(t, map[string][]byte{"/agent": []byte(testAgentScript)})
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex([]byte("another build"))}})

	r := runStub(t, script)
	if r.exitCode == 0 {
		t.Fatalf("stub succeeded with a wrong digest; stderr:\n%s", r.stderr)
	}
	if r.ran() {
		t.Error("the agent ran although its digest did not match")
	}
	noFile(t, filepath.Join(r.root, LinuxAgentPath))
	noTemp(t, filepath.Join(r.root, LinuxAgentPath))
	noFile(t, filepath.Join(r.root, LinuxSpecPath))
	wantStderr(t, r, "agent: SHA-256 digest is "+sha256Hex([]byte(testAgentScript)), "expected "+sha256Hex([]byte("another build")))
}

func TestShellStubServerDown(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	srv := newAgentServer(t, nil)
	url := srv.URL + "/agent?X-Amz-Signature=secret"
	srv.Close() // nothing listens there any more
	// A URL with a credential needs the override; the stub still never
	// shows the credential.
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: url, SHA256: sha256Hex([]byte(testAgentScript))}, AllowInlineSecrets: true})

	r := runStub(t, script)
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v; want a failure and no run", r.exitCode, r.ran())
	}
	wantStderr(t, r, "attempt 1 failed: curl: (7) ", "attempt 2 failed: ", "attempt 3 of 3", "download failed 3 times")
	if strings.Contains(r.stderr, "secret") {
		t.Errorf("stderr shows the URL's query string (a presigned URL is a credential):\n%s", r.stderr)
	}
	noFile(t, filepath.Join(r.root, LinuxSpecPath))
}

// TestShellStubPrintsEachAttempt: every download attempt is announced
// before it starts, and a failed one says why (curl's error), with the
// URL shown without its query string or user information; with curl and
// with wget.
func TestShellStubPrintsEachAttempt(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	srv.failFirst = 2
	url := strings.Replace(srv.URL, "http://", "http://stub-user:stub-password@", 1) + "/agent?X-Amz-Signature=secret"
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: url, SHA256: sha256Hex(agent)}, AllowInlineSecrets: true})
	r := runStub(t, script)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	shown := srv.URL + "/agent"
	shown = strings.TrimPrefix(shown, "http://") // with user information, the URL is shown from its host on
	wantStderr(t, r,
		shown+": attempt 1 of 3\n",
		"attempt 1 failed: curl: (22) The requested URL returned error: 503\n",
		shown+": attempt 2 of 3\n",
		"attempt 2 failed: ",
		shown+": attempt 3 of 3\n")
	for _, s := range []string{"secret", "stub-user", "stub-password", "X-Amz"} {
		if strings.Contains(r.stderr, s) {
			t.Errorf("stderr shows %q of the URL:\n%s", s, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "attempt 3 failed") {
		t.Errorf("the third attempt succeeded; stderr:\n%s", r.stderr)
	}

	// The last failure's error ends the stub's message too.
	srv.set("/agent", nil)
	srv.failFirst = 0
	r = runStub(t, script)
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
	}
	wantStderr(t, r, "attempt 3 failed: curl: (22) The requested URL returned error: 500\n", "error: "+shown+": download failed 3 times")
}

func TestShellStubRetriesThenSucceeds(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	srv.failFirst = 2
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}})

	r := runStub(t, script)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	if n := srv.count("/agent"); n != 3 {
		t.Errorf("agent requested %d times, want 3 (two 503s, then success)", n)
	}
}

func TestShellStubTotalTimeBounded(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	srv := newAgentServer(t, map[string][]byte{"/agent": nil})
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex([]byte(testAgentScript))}})

	// With a 2 s pause between attempts and 1 s in total, the second
	// attempt never starts: after the first one at most 1 s is left, less
	// than the pause, however loaded the machine is.
	r := runStub(t, script, "MACHINEADM_FETCH_ATTEMPTS=100", "MACHINEADM_FETCH_DELAY=2", "MACHINEADM_FETCH_TIMEOUT=1")
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
	}
	wantStderr(t, r, "no download within 1 s")
	if n := srv.count("/agent"); n != 1 {
		t.Errorf("%d attempts within the time bound, want 1", n)
	}
	// The bound is on the script's own clock; this only catches a stub
	// that retries on and on (100 attempts would take minutes).
	if r.elapsed > 45*time.Second {
		t.Errorf("stub took %v with a 1 s bound", r.elapsed)
	}
}

// TestShellStubFirstAttemptAlways: a total time that has already passed
// when the first download starts (0 s here; on a loaded machine any short
// bound) never stops the first attempt. It succeeds, and a failing one is
// not retried.
func TestShellStubFirstAttemptAlways(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}})
	r := runStub(t, script, "MACHINEADM_FETCH_TIMEOUT=0", "MACHINEADM_FETCH_DELAY=1")
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	if n := srv.count("/agent"); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}

	srv.set("/agent", nil)
	r = runStub(t, script, "MACHINEADM_FETCH_TIMEOUT=0", "MACHINEADM_FETCH_DELAY=1", "MACHINEADM_FETCH_ATTEMPTS=100")
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
	}
	wantStderr(t, r, "no download within 0 s")
	if n := srv.count("/agent"); n != 2 {
		t.Errorf("%d downloads in all, want 2 (one per run)", n)
	}
}

func TestShellStubPayload(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent, "/spec.yaml": spec})
	o := Options{
		Agent:   AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)},
		Payload: &PayloadSource{URL: srv.URL + "/spec.yaml", SHA256: sha256Hex(spec)},
	}
	script := shellFor(t, spec, o)
	if strings.Contains(string(script), "MACHINEADM_SPEC") {
		t.Error("a payload stub still carries the spec inline")
	}
	r := runStub(t, script)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)

	// A payload that does not match its digest is never handed to the agent.
	srv.set("/spec.yaml", append([]byte("# tampered\n"), spec...))
	r = runStub(t, script)
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v with a tampered payload", r.exitCode, r.ran())
	}
	wantStderr(t, r, "machine spec: SHA-256 digest is")
	noFile(t, filepath.Join(r.root, LinuxSpecPath))
	noTemp(t, filepath.Join(r.root, LinuxSpecPath))
}

func TestShellStubAgentInImage(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	dir := t.TempDir()
	agent := filepath.Join(dir, "machineadm")
	if err := os.WriteFile(agent, []byte(testAgentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, sum := range map[string]string{"with digest": sha256Hex([]byte(testAgentScript)), "without digest": ""} {
		t.Run(name, func(t *testing.T) {
			script := shellFor(t, spec, Options{Agent: AgentSource{URL: "file://" + agent, SHA256: sum}})
			if strings.Contains(string(script), "curl") {
				t.Error("an in-image stub still downloads")
			}
			r := runStub(t, script)
			checkBootstrapped(t, r, agent, spec)
			noFile(t, filepath.Join(r.root, LinuxAgentPath))
		})
	}
	t.Run("wrong digest", func(t *testing.T) {
		script := shellFor(t, spec, Options{Agent: AgentSource{URL: "file://" + agent, SHA256: sha256Hex(nil)}})
		r := runStub(t, script)
		if r.exitCode == 0 || r.ran() {
			t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
		}
		wantStderr(t, r, "SHA-256 digest is")
		if _, err := os.Stat(agent); err != nil {
			t.Errorf("the image's agent was removed: %v", err)
		}
	})
}

// TestShellStubWithWget runs the stub where curl is missing and wget
// downloads.
func TestShellStubWithWget(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"sh", "date", "sha256sum", "cut", "mkdir", "mv", "chmod", "rm", "base64", "gzip", "wget", "sleep", "cp", "printf", "cat"} {
		p, err := lookPath(tool)
		if err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}})
	r := runStub(t, script, "PATH="+bin)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	if srv.count("/agent") != 1 {
		t.Errorf("agent requested %d times", srv.count("/agent"))
	}
	wantStderr(t, r, srv.URL+"/agent: attempt 1 of 3")

	// wget -q says nothing on failure: the attempt line gives its exit
	// status instead.
	srv.set("/agent", nil)
	r = runStub(t, script, "PATH="+bin)
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
	}
	wantStderr(t, r, srv.URL+"/agent: attempt 1 of 3", "attempt 1 failed: exit 8", "download failed 3 times")
}
