package render

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testAgentScript is a stand-in for the machineadm binary: a script that
// records its arguments and copies the spec given with -f, so tests can see
// whether, how and with what the stub ran it.
const testAgentScript = `#!/bin/sh
printf '%s\n' "$@" >"$MACHINEADM_TEST_RECORD/args"
cp "$3" "$MACHINEADM_TEST_RECORD/spec"
exit 0
`

// agentServer serves files on 127.0.0.1 and counts requests per path. A
// path mapped to nil answers 500; an unknown path answers 404.
type agentServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
	// failFirst makes the first N requests of every path answer 503.
	failFirst int
}

func newAgentServer(t *testing.T, files map[string][]byte) *agentServer {
	t.Helper()
	s := &agentServer{files: files, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		n := s.hits[r.URL.Path]
		body, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		switch {
		case n <= s.failFirst:
			http.Error(w, "try again", http.StatusServiceUnavailable)
		case !ok:
			http.NotFound(w, r)
		case body == nil:
			http.Error(w, "broken", http.StatusInternalServerError)
		default:
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// set replaces what path serves.
func (s *agentServer) set(path string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = body
}

func (s *agentServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// stubRun is the outcome of running a stub.
type stubRun struct {
	root, record string
	exitCode     int
	stderr       string
	elapsed      time.Duration
}

// ran reports whether the test agent was executed.
func (r *stubRun) ran() bool {
	_, err := os.Stat(filepath.Join(r.record, "args"))
	return err == nil
}

// runStub writes script into a temporary root and runs it with /bin/sh,
// with the install paths under that root and quick retries. env adds or
// overrides environment variables.
func runStub(t *testing.T, script []byte, env ...string) *stubRun {
	t.Helper()
	root, record := t.TempDir(), t.TempDir()
	path := filepath.Join(root, "stub.sh")
	if err := os.WriteFile(path, script, 0o700); err != nil {
		t.Fatal(err)
	}
	return runScript(t, root, record, []string{"/bin/sh", path}, env...)
}

// runScript runs argv with the stub test environment rooted at root.
func runScript(t *testing.T, root, record string, argv []string, env ...string) *stubRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(),
		"MACHINEADM_PREFIX="+root,
		"MACHINEADM_TEST_RECORD="+record,
		"MACHINEADM_FETCH_ATTEMPTS=3",
		"MACHINEADM_FETCH_DELAY=0",
		"MACHINEADM_FETCH_TIMEOUT=30",
		"no_proxy=127.0.0.1,localhost", "NO_PROXY=127.0.0.1,localhost",
	)
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	r := &stubRun{root: root, record: record, stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("stub did not finish within 60 s; stderr:\n%s", r.stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.exitCode = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkBootstrapped asserts that the stub installed the agent, wrote the
// spec byte for byte and ran `machineadm bootstrap -f SPEC`.
func checkBootstrapped(t *testing.T, r *stubRun, agentPath string, spec []byte) {
	t.Helper()
	if r.exitCode != 0 {
		t.Fatalf("stub exit code %d; stderr:\n%s", r.exitCode, r.stderr)
	}
	specPath := filepath.Join(r.root, LinuxSpecPath)
	args, err := os.ReadFile(filepath.Join(r.record, "args"))
	if err != nil {
		t.Fatalf("the agent did not run: %v; stderr:\n%s", err, r.stderr)
	}
	if want := "bootstrap\n-f\n" + specPath + "\n"; string(args) != want {
		t.Errorf("agent arguments = %q, want %q", args, want)
	}
	for _, p := range []string{specPath, filepath.Join(r.record, "spec")} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, spec) {
			t.Errorf("%s is not byte-exact:\n got %q\nwant %q", p, got, spec)
		}
	}
	checkMode(t, specPath, 0o600)
	checkMode(t, agentPath, 0o755)
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

// noFile asserts that path does not exist.
func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists (or cannot be checked: %v); it should not", path, err)
	}
}

// noTemp asserts that no temporary file of a stub (the agent's download,
// its signature files, the spec before its rename: named after base with
// a suffix) is left beside base.
func noTemp(t *testing.T, base string) {
	t.Helper()
	left, err := filepath.Glob(base + ".*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		t.Errorf("%s left behind", p)
	}
}

func wantStderr(t *testing.T, r *stubRun, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("stderr lacks %q:\n%s", p, r.stderr)
		}
	}
}

// lookPath finds a tool on PATH.
func lookPath(name string) (string, error) { return exec.LookPath(name) }
