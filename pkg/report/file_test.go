package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"
)

func TestFileWriterAtomicAndPrevious(t *testing.T) {
	root := t.TempDir()
	w := &FileWriter{Root: root, Path: "/var/lib/machineadm/report.json"}
	first, second := fixtureFailed(), fixtureSucceeded()
	if err := w.Write(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "var/lib/machineadm/report.json")
	prev := filepath.Join(root, "var/lib/machineadm/report.previous.json")
	if _, err := os.Stat(prev); !os.IsNotExist(err) {
		t.Fatal("no previous report must exist after the first write")
	}
	for _, dir := range []string{"var", "var/lib", "var/lib/machineadm"} {
		st, err := os.Stat(filepath.Join(root, dir))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("created directory %s: mode %v, want 0700 (%v)", dir, st.Mode().Perm(), err)
		}
	}
	if err := w.Write(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]Result{path: ResultSucceeded, prev: ResultFailed} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if r.Result != want {
			t.Errorf("%s holds %s, want %s", file, r.Result, want)
		}
		st, _ := os.Stat(file)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", file, st.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestFileWriterKeepsModeOfReplacedWorldReadable(t *testing.T) {
	// A report left world-readable by some earlier tool becomes 0600.
	root := t.TempDir()
	path := filepath.Join(root, "r.json")
	os.WriteFile(path, mustMarshal(t, fixtureSucceeded()), 0o644)
	if err := (&FileWriter{Root: root, Path: "/r.json"}).Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(root, "r.previous.json")} {
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, st.Mode().Perm())
		}
	}
}

func TestFileWriterFailures(t *testing.T) {
	root := t.TempDir()
	// The report directory's place is taken by a file.
	os.WriteFile(filepath.Join(root, "blocked"), nil, 0o600)
	err := (&FileWriter{Root: root, Path: "/blocked/report.json"}).Write(t.Context(), fixtureFailed())
	if err == nil || !strings.Contains(err.Error(), "creating report directory") {
		t.Errorf("want a directory error, got %v", err)
	}
	// The report path is a directory: the old report cannot be read.
	os.MkdirAll(filepath.Join(root, "d/report.json"), 0o700)
	if err := (&FileWriter{Root: root, Path: "/d/report.json"}).Write(t.Context(), fixtureFailed()); err == nil {
		t.Error("want an error when the report path is a directory")
	}
}

func TestPreviousPath(t *testing.T) {
	for in, want := range map[string]string{"/var/lib/machineadm/report.json": "/var/lib/machineadm/report.previous.json", "/r": "/r.previous", "/a.b/r.txt": "/a.b/r.previous.txt"} {
		if got := PreviousPath(in); got != want {
			t.Errorf("PreviousPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := fixtureFailed().Marshal()
	if _, err := Decode(good); err != nil {
		t.Fatalf("valid report rejected: %v", err)
	}
	mutate := func(f func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(good, &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for name, data := range map[string][]byte{
		"not json":      []byte("nope"),
		"two documents": append(append([]byte{}, good...), good...),
		"apiVersion":    mutate(func(m map[string]any) { m["apiVersion"] = "v2" }),
		"kind":          mutate(func(m map[string]any) { m["kind"] = "Other" }),
		"unknown field": mutate(func(m map[string]any) { m["extra"] = 1 }),
		"result":        mutate(func(m map[string]any) { m["result"] = "Maybe" }),
		"class":         mutate(func(m map[string]any) { m["errorClass"] = "Weird" }),
		"no start":      mutate(func(m map[string]any) { delete(m, "startTime") }),
		"phase status":  mutate(func(m map[string]any) { m["phases"].([]any)[0].(map[string]any)["status"] = "Running" }),
	} {
		if _, err := Decode(data); err == nil {
			t.Errorf("%s: invalid report accepted", name)
		}
	}
}

// TestFileWriterOverFIFO: a FIFO at the report path (no writer, no
// reader) neither blocks the writer nor is replaced or kept as the
// previous report: the write fails, naming it.
func TestFileWriterOverFIFO(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, DefaultPath)
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		t.Fatal(err)
	}
	testfifo.Make(t, full)
	r := &BootstrapReport{APIVersion: APIVersion, Kind: Kind, Result: ResultSucceeded, StartTime: time.Unix(1, 0).UTC()}
	if err := (&FileWriter{Root: root}).Write(t.Context(), r); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("%v, want an error naming the FIFO", err)
	}
	if fi, err := os.Lstat(full); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, PreviousPath(DefaultPath))); err == nil {
		t.Error("the FIFO was kept as the previous report")
	}
}

// TestFileWriterLeavesAFileThatIsNoReport: a spec.report.path naming a
// file that is not a report (/etc/passwd, a binary) leaves it as it is:
// the writer fails, naming the path. It was replaced (an oversized one
// without being kept), by a refused upgrade too, whose report is the one
// change its run makes. An empty file, a report, and what a torn report
// may hold (a JSON object's start, NULs) are replaced as before.
func TestFileWriterLeavesAFileThatIsNoReport(t *testing.T) {
	for name, content := range map[string][]byte{
		"passwd": []byte("root:x:0:0:root:/root:/bin/sh\n"),
		"yaml":   []byte("apiVersion: v1\nkind: Config\n"),
		"array":  []byte("[1, 2]"),
		"big":    append([]byte("{"), make([]byte, MaxReportSize)...),
		// JSON objects that are no report: Docker's daemon.json, the
		// applied-spec record beside the report (upgrade.RecordFile).
		"daemon.json": []byte(`{"log-driver": "json-file", "exec-opts": ["native.cgroupdriver=systemd"]}` + "\n"),
		"record":      []byte(`{"kind":"AppliedSpec","version":1,"specDigest":"sha256:00","spec":{"kind":"MachineSpec"}}`),
		"null":        []byte("null\n"),
		// A sparse binary: NULs, then data (/var/log/lastlog).
		"lastlog": append(make([]byte, 292), "\x01\x02pts/0"...),
	} {
		root := t.TempDir()
		full := filepath.Join(root, "etc/f")
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, content, 0o644); err != nil {
			t.Fatal(err)
		}
		err := (&FileWriter{Root: root, Path: "/etc/f"}).Write(t.Context(), fixtureFailed())
		if err == nil || !strings.Contains(err.Error(), "/etc/f") || !strings.Contains(err.Error(), "not replaced") {
			t.Errorf("%s: %v, want an error naming the path", name, err)
		}
		if got, _ := os.ReadFile(full); string(got) != string(content) {
			t.Errorf("%s: the file was changed", name)
		}
		if _, err := os.Lstat(filepath.Join(root, "etc/f.previous")); err == nil {
			t.Errorf("%s: a previous copy was written", name)
		}
	}
	for name, content := range map[string][]byte{
		"empty":  nil,
		"report": mustMarshal(t, fixtureSucceeded()),
		"torn":   []byte("\n{\"apiVersion\": \"machineadm.io/v1al"),
		"nuls":   make([]byte, 512),
	} {
		root := t.TempDir()
		full := filepath.Join(root, "r.json")
		if err := os.WriteFile(full, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := (&FileWriter{Root: root, Path: "/r.json"}).Write(t.Context(), fixtureFailed()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := ReadFile(full); err != nil {
			t.Errorf("%s: the new report: %v", name, err)
		}
	}
}

func mustMarshal(t *testing.T, r *BootstrapReport) []byte {
	t.Helper()
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFileWriterFinalLeavesAFileThatIsNoReport: what replaced the
// provisional report during the run and is no report (the applied-spec
// record a bootstrap's last phase writes, where spec.report.path names
// it) is not replaced by the final report or a provisional update: the
// check was made only where the report was kept as the previous one, so
// the final report replaced the record the run had just written.
func TestFileWriterFinalLeavesAFileThatIsNoReport(t *testing.T) {
	root := t.TempDir()
	w := &FileWriter{Root: root, Path: "/var/lib/machineadm/applied-spec.json"}
	if err := w.WriteProgress(fixtureFailed(), true); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteProgress(fixtureFailed(), false); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "var/lib/machineadm/applied-spec.json")
	record := []byte(`{"kind":"AppliedSpec","version":1,"spec":{}}` + "\n")
	if err := os.WriteFile(full, record, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteProgress(fixtureFailed(), false); err == nil || !strings.Contains(err.Error(), "not replaced") {
		t.Errorf("update: %v, want an error naming the path", err)
	}
	if err := w.Write(t.Context(), fixtureSucceeded()); err == nil || !strings.Contains(err.Error(), "not replaced") {
		t.Errorf("final: %v, want an error naming the path", err)
	}
	if got, _ := os.ReadFile(full); string(got) != string(record) {
		t.Errorf("the record became %q", got)
	}
}
