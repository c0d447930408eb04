//go:build doctest

package doctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// sessionTimeout bounds one shell session (the quick start links the
// binary with `make build` first).
const sessionTimeout = 15 * time.Minute

// hostPaths are what machineadm writes on a host (docs/os-contract.md):
// a dry run must leave every one as it was.
var hostPaths = []string{
	"/etc/machineadm", "/var/lib/machineadm", "/etc/kubernetes", "/var/lib/kubelet",
	"/var/lib/etcd", "/run/cluster-api", "/etc/sysctl.d", "/etc/modules-load.d",
	"/etc/containerd", "/etc/systemd/system", "/usr/local/bin/machineadm",
}

// TestDocsRun runs the README's quick start as one session in a copy of
// the repository, then every shell block of README.md and docs/*.md that
// is not marked `<!-- doc-test: skip (…) -->`, each alone, all in network
// namespaces of their own.
func TestDocsRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("doc test: needs root (unshare --net; the quick start's dry runs read the host as root would); run `make doc-test` as root")
	}
	for _, tool := range []string{"unshare", "ip", "sh", "make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("doc test: %s not found: %v", tool, err)
		}
	}
	root := repoRoot(t)
	readme := filepath.Join(root, "README.md")
	qs, err := QuickStart(readme)
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		qs[i].File = rel(root, qs[i].File)
	}
	before := snapshot(t, hostPaths)
	defer func() {
		if after := snapshot(t, hostPaths); !equalSnapshots(t, before, after) {
			t.Error("the doc test changed the host outside its temporary directory")
		}
	}()

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	repo := filepath.Join(tmp, "repo")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	copyRepo(t, root, repo)
	env := sessionEnv(t, home, "")

	start := time.Now()
	out, err := runSession(t, qs, repo, env)
	t.Logf("TIMING doc-test quick start %.1fs", time.Since(start).Seconds())
	if err != nil {
		t.Fatalf("README quick start: %v\n%s", err, out)
	}
	checkQuickStart(t, readme, filepath.Join(repo, "quickstart"), out)

	bin := filepath.Join(repo, "bin")
	if _, err := os.Stat(filepath.Join(bin, "machineadm")); err != nil {
		t.Fatalf("the quick start built no bin/machineadm: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{readme}, files...)
	ran, skipped := 0, 0
	docsStart := time.Now()
	for _, f := range files {
		blocks, err := ReadBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range Select(blocks, Block.IsShell) {
			if f == readme && b.Section == QuickStartSection {
				continue
			}
			name := fmt.Sprintf("%s:%d", rel(root, b.File), b.Line)
			if b.Skip != "" {
				skipped++
				t.Logf("%s: skipped: %s", name, b.Skip)
				continue
			}
			ran++
			b.File = rel(root, b.File)
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				out, err := runSession(t, []Block{b}, dir, sessionEnv(t, home, bin))
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})
		}
	}
	t.Logf("docs: %d shell blocks run, %d skipped by their markers", ran, skipped)
	t.Logf("TIMING doc-test docs %.1fs", time.Since(docsStart).Seconds())
}

// netnsWrapper runs inside `unshare --net`: it brings loopback up, checks
// that the namespace has nothing else (no other link, no route beyond
// loopback's), records the namespace it runs in, then runs the script.
const netnsWrapper = `set -e
ip link set lo up
if ip -o link show | grep -v ': lo:' | grep -q .; then echo "doc-test: a link other than lo in the namespace" >&2; exit 97; fi
if ip route show | grep -q .; then echo "doc-test: a route in the namespace" >&2; exit 97; fi
readlink /proc/self/ns/net >"$2"
exec sh "$1"`

// runSession writes blocks as one script and runs it with sh in dir, in a
// new network namespace; it returns the combined output.
func runSession(t *testing.T, blocks []Block, dir string, env []string) (string, error) {
	t.Helper()
	script, err := Script(blocks)
	if err != nil {
		t.Fatal(err)
	}
	sdir := t.TempDir()
	path := filepath.Join(sdir, "session.sh")
	nsFile := filepath.Join(sdir, "netns")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "--", "sh", "-c", netnsWrapper, "doctest", path, nsFile)
	cmd.Dir = dir
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := cmd.Run()
	ns, err := os.ReadFile(nsFile)
	if err != nil {
		t.Fatalf("the session did not record its network namespace: %v\n%s", err, buf.String())
	}
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(ns)) == own {
		t.Fatalf("the session ran in the test's own network namespace %s", own)
	}
	return buf.String(), runErr
}

// sessionEnv is the test's environment with HOME in the temporary
// directory, Go's caches and settings kept where they are (so the quick
// start's `make build` works offline from the module cache), and pathDir,
// if set, first on PATH.
func sessionEnv(t *testing.T, home, pathDir string) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goenv map[string]string
	if err := json.Unmarshal(out, &goenv); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "PATH", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "PWD", "OLDPWD",
			"MAKEFLAGS", "MAKELEVEL", "MFLAGS": // a fresh terminal, not a sub-make of `make doc-test`
			continue
		}
		env = append(env, kv)
	}
	path := filepath.Join(goenv["GOROOT"], "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	if pathDir != "" {
		path = pathDir + string(os.PathListSeparator) + path
	}
	env = append(env, "HOME="+home, "PATH="+path)
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"} {
		env = append(env, k+"="+goenv[k])
	}
	return env
}

// copyRepo copies the repository's files as they are in the work tree
// (tracked and untracked, not ignored) from src to dst, with their modes
// and symbolic links; .git stays behind.
func copyRepo(t *testing.T, src, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from, to := filepath.Join(src, name), filepath.Join(dst, name)
		fi, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, to); err != nil {
				t.Fatal(err)
			}
		case fi.Mode().IsRegular():
			copyFile(t, from, to, fi.Mode().Perm())
		}
	}
}

func copyFile(t *testing.T, from, to string, mode fs.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	outf, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(outf, in); err != nil {
		t.Fatal(err)
	}
	if err := outf.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkQuickStart checks what the quick start promises beyond exit codes:
// both dry runs' reports say Succeeded, and the output has the lines of
// the README's sample output (```text block of the section), in order,
// with durations and elided paths ("...") matching anything.
func checkQuickStart(t *testing.T, readme, qsDir, out string) {
	t.Helper()
	for _, plan := range []string{"plan", "plan-w1"} {
		data, err := os.ReadFile(filepath.Join(qsDir, plan, "var/lib/machineadm/report.json"))
		if err != nil {
			t.Errorf("dry run %s: %v", plan, err)
			continue
		}
		var doc struct{ Result string }
		if err := json.Unmarshal(data, &doc); err != nil || doc.Result != "Succeeded" {
			t.Errorf("dry run %s: report result %q (%v), want Succeeded", plan, doc.Result, err)
		}
	}
	blocks, err := ReadBlocks(readme)
	if err != nil {
		t.Fatal(err)
	}
	samples := Select(blocks, func(b Block) bool { return b.Section == QuickStartSection && b.Info == "text" })
	if len(samples) == 0 {
		t.Fatal("the quick start shows no sample output (```text)")
	}
	outLines := strings.Split(out, "\n")
	for _, s := range samples {
		i := 0
		for j, l := range s.Lines {
			if strings.TrimSpace(l) == "..." || strings.TrimSpace(l) == "" {
				continue
			}
			re := sampleLine(l)
			for i < len(outLines) && !re.MatchString(outLines[i]) {
				i++
			}
			if i == len(outLines) {
				t.Errorf("%s:%d: sample output line %q not in the quick start's output (in order)", rel(filepath.Dir(readme), s.File), s.Line+1+j, l)
				i = 0
				continue
			}
			i++
		}
	}
}

var durationRe = regexp.MustCompile(`\\\([0-9]+ms\\\)`)

// sampleLine makes a README sample output line into a pattern: a duration
// "(18ms)" matches any duration, "..." any text.
func sampleLine(l string) *regexp.Regexp {
	q := regexp.QuoteMeta(l)
	q = durationRe.ReplaceAllString(q, `\([0-9.]+(ns|µs|ms|s|m[0-9.]+s)\)`)
	q = strings.ReplaceAll(q, `\.\.\.`, `.*`)
	return regexp.MustCompile("^" + q + "$")
}

// entry is one path's state in a snapshot.
type entry struct {
	mode  fs.FileMode
	size  int64
	mtime int64 // nanoseconds since the epoch
}

// snapshot records every file and directory below paths (mode, size,
// modification time); a missing path is recorded as missing.
func snapshot(t *testing.T, paths []string) map[string]entry {
	t.Helper()
	snap := map[string]entry{}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) && path == p {
					snap[path] = entry{mode: fs.ModeIrregular}
					return nil
				}
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			snap[path] = entry{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
			return nil
		})
		if err != nil {
			t.Fatalf("snapshot of %s: %v", p, err)
		}
	}
	return snap
}

func equalSnapshots(t *testing.T, a, b map[string]entry) bool {
	t.Helper()
	var diff []string
	for p, e := range a {
		if f, ok := b[p]; !ok {
			diff = append(diff, "removed "+p)
		} else if e != f {
			diff = append(diff, "changed "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			diff = append(diff, "created "+p)
		}
	}
	sort.Strings(diff)
	for _, d := range diff {
		t.Log(d)
	}
	return len(diff) == 0
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
