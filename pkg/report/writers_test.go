package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

func TestSentinelWriter(t *testing.T) {
	root := t.TempDir()
	w := &SentinelWriter{Root: root}
	path := filepath.Join(root, DefaultSentinel)
	if err := w.Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("a failure must not create the sentinel")
	}
	if err := w.Write(t.Context(), fixtureSucceeded()); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "success\n" {
		t.Fatalf("sentinel: %q %v", data, err)
	}
	if err := w.Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a failure must remove a stale sentinel")
	}
	off := &SentinelWriter{Root: root, Path: SentinelDisabled}
	if err := off.Write(t.Context(), fixtureSucceeded()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "-")); !os.IsNotExist(err) {
		t.Error(`"-" must disable the sentinel`)
	}
	// Failure path: the sentinel's directory is a file.
	os.WriteFile(filepath.Join(root, "run-file"), nil, 0o600)
	if err := (&SentinelWriter{Root: root, Path: "/run-file/x.complete"}).Write(t.Context(), fixtureSucceeded()); err == nil {
		t.Error("want an error when the sentinel directory cannot be created")
	}
}

func TestSummaryWriter(t *testing.T) {
	var buf bytes.Buffer
	if err := (&SummaryWriter{Out: &buf}).Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatal(err)
	}
	if buf.String() != Summary(fixtureFailed(), OneScreen("")) {
		t.Error("stdout summary differs from the one-screen summary")
	}
	if err := (&SummaryWriter{Out: &failingWriter{}}).Write(t.Context(), fixtureFailed()); err == nil {
		t.Error("want the output's error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestConsoleWriter(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	tty := filepath.Join(root, "dev/ttyS0")
	os.WriteFile(tty, nil, 0o600)
	w := &ConsoleWriter{Root: root, Devices: []string{"/dev/console", "/dev/ttyS0"}, Timeout: time.Second}
	if err := w.Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(tty)
	want := strings.ReplaceAll(Summary(fixtureFailed(), OneScreen("")), "\n", "\r\n")
	if string(got) != want {
		t.Errorf("console got:\n%q\nwant:\n%q", got, want)
	}
	// No console at all is not an error.
	if err := (&ConsoleWriter{Root: root, Devices: []string{"/dev/none"}}).Write(t.Context(), fixtureFailed()); err != nil {
		t.Errorf("missing console: %v", err)
	}
	// A console that cannot be opened is an error.
	os.Chmod(tty, 0o400)
	os.MkdirAll(filepath.Join(root, "dev/dir"), 0o755)
	if err := (&ConsoleWriter{Root: root, Devices: []string{"/dev/dir"}}).Write(t.Context(), fixtureFailed()); err == nil {
		t.Error("want an error for a console that cannot be written")
	}
}

func TestHTTPWriter(t *testing.T) {
	var calls atomic.Int32
	var gotBody []byte
	var gotHeader http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		gotBody, _ = io.ReadAll(r.Body)
		gotHeader = r.Header
		if r.Method != http.MethodPost {
			t.Errorf("method %s", r.Method)
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	w := &HTTPWriter{URL: srv.URL + "/reports?key=secretquery", Retry: RetryPolicy{Attempts: 3, Backoff: 10 * time.Millisecond}}
	if err := w.Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("want a retry after 503, got %d calls", calls.Load())
	}
	if gotHeader.Get("Content-Type") != "application/json" || gotHeader.Get("User-Agent") != "machineadm" {
		t.Errorf("headers: %v", gotHeader)
	}
	r, err := Decode(gotBody)
	if err != nil || r.ErrorClass != errclass.DiscoveryFailed {
		t.Errorf("posted body: %v", err)
	}
}

func TestHTTPWriterFailures(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if strings.HasSuffix(r.URL.Path, "/bad") {
			http.Error(w, "no such tenant", http.StatusNotFound)
			return
		}
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()

	err := (&HTTPWriter{URL: srv.URL + "/bad?token=abc", Retry: RetryPolicy{Attempts: 5, Backoff: time.Millisecond}}).Write(t.Context(), fixtureFailed())
	if err == nil || calls.Load() != 1 || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 must not be retried: %v after %d calls", err, calls.Load())
	}
	if strings.Contains(err.Error(), "token=abc") {
		t.Errorf("error leaks the URL query: %v", err)
	}

	calls.Store(0)
	err = (&HTTPWriter{URL: srv.URL, Retry: RetryPolicy{Attempts: 3, Backoff: time.Millisecond}}).Write(t.Context(), fixtureFailed())
	if err == nil || calls.Load() != 3 || !strings.Contains(err.Error(), "3 attempt") {
		t.Errorf("500s: want 3 attempts, got %d: %v", calls.Load(), err)
	}

	// Nothing listens: bounded by Total, not by the attempts.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	err = (&HTTPWriter{URL: "http://" + addr + "/", Retry: RetryPolicy{Attempts: 1000, Total: 300 * time.Millisecond, Backoff: 20 * time.Millisecond}}).Write(t.Context(), fixtureFailed())
	if err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("unreachable server: %v after %v", err, time.Since(start))
	}

	// A server that never answers: bounded per attempt.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	start = time.Now()
	err = (&HTTPWriter{URL: hang.URL, Retry: RetryPolicy{Attempts: 2, PerAttempt: 100 * time.Millisecond, Backoff: time.Millisecond}}).Write(t.Context(), fixtureFailed())
	if err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("hanging server: %v after %v", err, time.Since(start))
	}

	if err := (&HTTPWriter{URL: "::bad"}).Write(t.Context(), fixtureFailed()); err == nil {
		t.Error("a bad URL must fail")
	}
}

func TestWritersForSpec(t *testing.T) {
	f := false
	names := func(ws []Writer) string {
		var n []string
		for _, w := range ws {
			n = append(n, w.Name())
		}
		return strings.Join(n, ",")
	}
	all := WritersFor(machineadm.Report{Path: "/r.json", Sentinel: "/s", URL: "https://127.0.0.1/x"}, Options{Root: "/tmp/x", Stdout: io.Discard, Extra: []Writer{&memWriter{name: "node"}}})
	if got := names(all); got != "file,stdout,console,sentinel,http,node" {
		t.Errorf("writers: %s", got)
	}
	if fw := all[0].(*FileWriter); fw.Root != "/tmp/x" || fw.Path != "/r.json" {
		t.Errorf("file writer: %+v", fw)
	}
	min := WritersFor(machineadm.Report{Console: &f}, Options{})
	if got := names(min); got != "file,sentinel" {
		t.Errorf("writers: %s", got)
	}
	if min[0].(*FileWriter).Path != DefaultPath {
		t.Error("default path")
	}
}

func TestMetaFor(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Metadata: machineadm.ObjectMeta{Name: "m1"}, Spec: machineadm.MachineBootstrapSpec{
		Role: machineadm.RoleWorker, Action: machineadm.ActionJoin, Kubernetes: machineadm.Kubernetes{Version: "v1.37.2"}, Node: machineadm.Node{Name: "n1"}}}
	m := MetaFor(cfg, "bootstrap")
	if m.Command != "bootstrap" || m.Machine.SpecName != "m1" || m.Machine.NodeName != "n1" || m.Machine.Role != "Worker" || m.Machine.Action != "Join" || m.Machine.KubernetesVersion != "v1.37.2" || m.Machine.Hostname == "" || m.Machine.MachineadmVersion == "" {
		t.Errorf("meta: %+v", m)
	}
	if MetaFor(cfg, "prepare").Machine.NodeName != "" {
		t.Error("prepare has no node")
	}
	cfg.Spec.Node.Name = ""
	host, _ := os.Hostname()
	if got := MetaFor(cfg, "bootstrap").Machine.NodeName; got != strings.ToLower(host) {
		t.Errorf("default node name %q", got)
	}
	if m := MetaFor(nil, "bootstrap"); m.Machine.Role != "" || m.Machine.KubernetesVersion == "" {
		t.Errorf("meta without spec: %+v", m)
	}
	b, _ := json.Marshal(m.Machine)
	if !bytes.Contains(b, []byte(`"hostname"`)) {
		t.Error("machine JSON")
	}
}

// The one-screen summary names the report file where it really is: under
// Options.Root when that is not "/" (dry runs, prepare --root).
func TestWritersForNamesTheReportUnderRoot(t *testing.T) {
	for _, tc := range []struct{ root, path, want string }{
		{"", "", DefaultPath},
		{"/", "/r/report.json", "/r/report.json"},
		{"ROOT", "", filepath.Join("ROOT", DefaultPath)},
		{"ROOT", "/r/report.json", filepath.Join("ROOT", "/r/report.json")},
	} {
		root := t.TempDir()
		if tc.root == "ROOT" {
			tc.want = strings.Replace(tc.want, "ROOT", root, 1)
		} else {
			root = tc.root
		}
		var out bytes.Buffer
		ws := WritersFor(machineadm.Report{Path: tc.path}, Options{Root: root, Stdout: &out, ConsoleDevices: []string{}})
		for _, w := range ws {
			if w.Name() != "stdout" && w.Name() != "console" {
				continue
			}
			if w.Name() == "console" {
				dev := filepath.Join(t.TempDir(), "console")
				os.WriteFile(dev, nil, 0o600)
				cw := *w.(*ConsoleWriter)
				cw.Root, cw.Devices, cw.Timeout = "", []string{dev}, time.Second
				if err := cw.Write(t.Context(), fixtureFailed()); err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(dev)
				if !strings.Contains(string(got), "full report: "+tc.want+"\r\n") && !strings.Contains(string(got), "full report: "+tc.want+"  (") {
					t.Errorf("root %q path %q: console summary does not name %s:\n%s", tc.root, tc.path, tc.want, got)
				}
				continue
			}
			if err := w.Write(t.Context(), fixtureFailed()); err != nil {
				t.Fatal(err)
			}
		}
		if got := out.String(); !strings.Contains(got, "full report: "+tc.want+"\n") && !strings.Contains(got, "full report: "+tc.want+"  (machineadm report "+tc.want+")\n") {
			t.Errorf("root %q path %q: summary does not name %s:\n%s", tc.root, tc.path, tc.want, got)
		}
	}
}

// TestSentinelWriterLeavesAFileThatIsNoSentinel: a spec.report.sentinel
// naming a file that is no sentinel (/etc/passwd by mistake) is neither
// removed by a failed run (an invalid spec's, exit code 2, too) nor
// replaced by a successful one: the writer fails, naming the path. A
// failed bootstrap removed it. An empty file or a sentinel ("success",
// as Cluster API writes it) is removed and replaced as before.
func TestSentinelWriterLeavesAFileThatIsNoSentinel(t *testing.T) {
	for _, r := range []*BootstrapReport{fixtureFailed(), fixtureSucceeded()} {
		root := t.TempDir()
		full := filepath.Join(root, "etc/passwd")
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		const passwd = "root:x:0:0:root:/root:/bin/sh\n"
		if err := os.WriteFile(full, []byte(passwd), 0o644); err != nil {
			t.Fatal(err)
		}
		w := &SentinelWriter{Root: root, Path: "/etc/passwd"}
		if err := w.WriteProgress(r, true); err == nil || !strings.Contains(err.Error(), "/etc/passwd") {
			t.Errorf("%s, progress: %v, want an error naming the path", r.Result, err)
		}
		if err := w.Write(t.Context(), r); err == nil || !strings.Contains(err.Error(), "/etc/passwd") || !strings.Contains(err.Error(), "left as it is") {
			t.Errorf("%s: %v, want an error naming the path", r.Result, err)
		}
		if got, err := os.ReadFile(full); err != nil || string(got) != passwd {
			t.Errorf("%s: the file became %q, %v", r.Result, got, err)
		}
	}
	for _, content := range []string{"", "success", "success\n"} {
		root := t.TempDir()
		w := &SentinelWriter{Root: root}
		full := filepath.Join(root, DefaultSentinel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(t.Context(), fixtureFailed()); err != nil {
			t.Errorf("%q: %v", content, err)
		}
		if _, err := os.Lstat(full); !os.IsNotExist(err) {
			t.Errorf("%q: a failure left the sentinel", content)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(t.Context(), fixtureSucceeded()); err != nil {
			t.Errorf("%q: %v", content, err)
		}
		if got, _ := os.ReadFile(full); string(got) != "success\n" {
			t.Errorf("%q: the sentinel holds %q", content, got)
		}
	}
}
