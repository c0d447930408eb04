package render

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Two stubs started at once on one machine (a bootstrapper that starts
// machineadm twice: the double start the run lock answers with exit 3)
// must not break each other before machineadm runs. Here the second stub's
// download is still being written when the first one has verified its own,
// renamed it into place and runs it: with one download file for both, the
// first one's exec met a file open for writing ("Text file busy", exit
// 126) and the second one's check found its download renamed away (exit
// 1), so neither reached machineadm and neither exited 3. Each stub now
// downloads into a file of its own, and both run the verified agent.
func TestShellStubsStartedTogether(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	root := t.TempDir()
	installed := filepath.Join(root, LinuxAgentPath)

	var mu sync.Mutex
	asked := 0
	firstAsked, secondAsked := make(chan struct{}), make(chan struct{})
	firstDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		n := asked
		mu.Unlock()
		switch n {
		case 1:
			close(firstAsked)
			// Answer the first stub once the second one's download file
			// exists (its curl holds it open for writing), at most 30 s.
			select {
			case <-secondAsked:
			case <-time.After(30 * time.Second):
			}
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if left, _ := filepath.Glob(installed + ".*"); len(left) > 0 {
					break
				}
			}
			_, _ = w.Write(agent)
		case 2:
			close(secondAsked)
			// Half of the agent now, the rest once the first stub has
			// ended (at most 30 s).
			_, _ = w.Write(agent[:len(agent)/2])
			w.(http.Flusher).Flush()
			select {
			case <-firstDone:
			case <-time.After(30 * time.Second):
			}
			_, _ = w.Write(agent[len(agent)/2:])
		default:
			http.Error(w, "a third download", http.StatusGone)
		}
	}))
	defer srv.Close()
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}})
	path := filepath.Join(root, "stub.sh")
	if err := os.WriteFile(path, script, 0o700); err != nil {
		t.Fatal(err)
	}

	type result struct {
		record string
		code   int
		stderr bytes.Buffer
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := func(r *result, done chan<- struct{}) {
		c := exec.CommandContext(ctx, "/bin/sh", path)
		c.Env = append(os.Environ(),
			"MACHINEADM_PREFIX="+root,
			"MACHINEADM_TEST_RECORD="+r.record,
			"MACHINEADM_FETCH_ATTEMPTS=1",
			"MACHINEADM_FETCH_TIMEOUT=60",
			"no_proxy=127.0.0.1,localhost", "NO_PROXY=127.0.0.1,localhost",
		)
		c.Stderr = &r.stderr
		r.code = -1
		if err := c.Start(); err != nil {
			r.stderr.WriteString(err.Error())
			close(done)
			return
		}
		go func() {
			err := c.Wait()
			r.code = c.ProcessState.ExitCode()
			if err != nil && r.code == 0 {
				r.code = -1
			}
			close(done)
		}()
	}
	first, second := &result{record: t.TempDir()}, &result{record: t.TempDir()}
	secondDone := make(chan struct{})
	start(first, firstDone)
	select {
	case <-firstAsked:
	case <-firstDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the first stub did not ask for the agent within 60 s")
	}
	start(second, secondDone)
	<-firstDone
	<-secondDone
	for i, r := range []*result{first, second} {
		if r.code != 0 {
			t.Errorf("stub %d: exit %d, want 0 (the test agent's); stderr:\n%s", i+1, r.code, r.stderr.String())
			continue
		}
		checkBootstrapped(t, &stubRun{root: root, record: r.record, stderr: r.stderr.String()}, installed, spec)
	}
	if got, _ := os.ReadFile(installed); string(got) != string(agent) {
		t.Error("the installed agent differs from the served one")
	}
	noTemp(t, installed)
	noTemp(t, filepath.Join(root, LinuxSpecPath))
}
