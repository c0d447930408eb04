package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBlocks(t *testing.T) {
	md := "# Title\n\n## Quick start\n\n```sh\necho one\n```\n\n" +
		"<!-- doc-test: skip (needs a cluster) -->\n```sh\nkubectl get nodes\n```\n\n" +
		"```text\noutput\n```\n\n## Other\n\n1. item\n\n   ```bash\n   echo indented\n   ```\n"
	blocks, err := ParseBlocks("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 {
		t.Fatalf("got %d blocks, want 4: %+v", len(blocks), blocks)
	}
	want := []struct {
		info, section, skip, body string
		line                      int
	}{
		{"sh", "Quick start", "", "echo one", 5},
		{"sh", "Quick start", "needs a cluster", "kubectl get nodes", 10},
		{"text", "Quick start", "", "output", 14},
		{"bash", "Other", "", "echo indented", 22},
	}
	for i, w := range want {
		b := blocks[i]
		if b.Info != w.info || b.Section != w.section || b.Skip != w.skip || strings.Join(b.Lines, "\n") != w.body || b.Line != w.line {
			t.Errorf("block %d = %+v, want %+v", i, b, w)
		}
	}
	if got := len(Select(blocks, Block.IsShell)); got != 3 {
		t.Errorf("shell blocks: %d, want 3", got)
	}
}

func TestParseBlocksRefusesStrayMarkers(t *testing.T) {
	for name, md := range map[string]string{
		"before prose":    "<!-- doc-test: skip (x) -->\nsome text\n```sh\necho\n```\n",
		"before yaml":     "<!-- doc-test: skip (x) -->\n```yaml\na: 1\n```\n",
		"at the end":      "```sh\necho\n```\n<!-- doc-test: skip (x) -->\n",
		"unknown verb":    "<!-- doc-test: run -->\n```sh\necho\n```\n",
		"no reason":       "<!-- doc-test: skip -->\n```sh\necho\n```\n",
		"empty reason":    "<!-- doc-test: skip ( ) -->\n```sh\necho\n```\n",
		"two markers":     "<!-- doc-test: skip (a) -->\n<!-- doc-test: skip (b) -->\n```sh\necho\n```\n",
		"unclosed fence":  "```sh\necho\n",
		"before a header": "<!-- doc-test: skip (x) -->\n## H\n```sh\necho\n```\n",
	} {
		if _, err := ParseBlocks("x.md", md); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestScript runs generated scripts with the real sh: a failing command
// stops the session, `# expect: exit N` lines must exit N, and state
// (working directory, variables, here-documents) carries over between
// blocks.
func TestScript(t *testing.T) {
	run := func(t *testing.T, md string) (string, error) {
		t.Helper()
		blocks, err := ParseBlocks("t.md", md)
		if err != nil {
			t.Fatal(err)
		}
		script, err := Script(Select(blocks, Block.IsShell))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Run("session", func(t *testing.T) {
		out, err := run(t, "```sh\nmkdir d && cd d\nX=1\ncat >f <<EOF\nv=$X # expect: exit 3\nEOF\n```\n\n```sh\ncat f\nsh -c 'exit 3'   # expect: exit 3\necho done \\\n  $X\n```\n")
		if err != nil || !strings.Contains(out, "v=1 # expect: exit 3") || !strings.Contains(out, "done 1") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
	})
	t.Run("failure stops", func(t *testing.T) {
		out, err := run(t, "```sh\nfalse\necho reached\n```\n")
		if err == nil || strings.Contains(out, "reached") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
	})
	t.Run("failure in a later block stops", func(t *testing.T) {
		out, err := run(t, "```sh\ntrue\n```\n\n```sh\nfalse\n```\n\n```sh\necho reached\n```\n")
		if err == nil || strings.Contains(out, "reached") || !strings.Contains(out, "doc-test: t.md:5") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
	})
	t.Run("wrong expected status", func(t *testing.T) {
		out, err := run(t, "```sh\nsh -c 'exit 1' # expect: exit 2\necho reached\n```\n")
		if err == nil || strings.Contains(out, "reached") || !strings.Contains(out, "t.md:2: want exit 2, got 1") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
	})
	t.Run("expected failure that succeeds", func(t *testing.T) {
		out, err := run(t, "```sh\ntrue # expect: exit 2\n```\n")
		if err == nil || !strings.Contains(out, "want exit 2, got 0") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
	})
	t.Run("expect on a continued command is refused", func(t *testing.T) {
		blocks, err := ParseBlocks("t.md", "```sh\necho a \\\n  b # expect: exit 2\n```\n")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Script(blocks); err == nil {
			t.Fatal("accepted")
		}
	})
}

// TestRepositoryMarkdown parses the README and every docs/*.md: markers are
// well formed and attached, the quick start is there and skips nothing.
func TestRepositoryMarkdown(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	for _, f := range files {
		blocks, err := ReadBlocks(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := Script(Select(blocks, Block.IsShell)); err != nil {
			t.Error(err)
		}
	}
	qs, err := QuickStart(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 5 {
		t.Errorf("the README's quick start has %d shell blocks; expected the build, the inputs, the specs, the checks and the dry runs", len(qs))
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}
