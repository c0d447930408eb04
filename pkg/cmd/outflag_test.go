package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
)

// TestOutputFileFlagsRefuseWhatCannotBeWritten: render -o and seal -o
// naming a directory, or a file in a directory that does not exist, are
// usage errors naming the flag (exit code 2) found before any work; they
// failed with exit code 1 on the final rename, after render had said
// "rendered bootstrap data" (and seal had read every secret). Nothing is
// left in the directory.
func TestOutputFileFlagsRefuseWhatCannotBeWritten(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	specFile := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(specFile, []byte(testspec.MinimalWorker+"  node: {name: w1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sealed := sealedWorker(t, dir, rcpt)
	outDir := t.TempDir()
	agent := []string{"--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum}
	for _, c := range []struct {
		name, flag string
		args       []string
	}{
		{"render -o a directory", "--output", append([]string{"render", "-f", sealed, "--format", "cloud-config", "-o", outDir}, agent...)},
		{"render -o in a missing directory", "--output", append([]string{"render", "-f", sealed, "--format", "cloud-config", "-o", filepath.Join(outDir, "missing", "user-data")}, agent...)},
		{"seal -o a directory", "--out", []string{"seal", "-f", specFile, "--recipient", rcpt, "--root", dir, "-o", outDir}},
		{"seal -o in a missing directory", "--out", []string{"seal", "-f", specFile, "--recipient", rcpt, "--root", dir, "-o", filepath.Join(outDir, "missing", "sealed.yaml")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != 2 || !strings.Contains(errOut, c.flag) || strings.Contains(errOut, "rendered bootstrap data") || strings.Contains(errOut, "sealed 1 item") {
				t.Fatalf("exit %d, want 2 naming %s and nothing done\n%s\n%s", code, c.flag, out, errOut)
			}
			if left, _ := os.ReadDir(outDir); len(left) != 0 {
				t.Fatalf("left in the directory: %v", left)
			}
		})
	}
}

// TestOutputFileFlagsRefuseASymbolicLink: render -o and seal -o naming a
// symbolic link, even to a regular file (/dev/stdout with standard output
// redirected to a file), are usage errors naming the flag, and the link
// stays. The atomic write's rename replaced the link itself: `-o
// /dev/stdout > out` run as root made /dev/stdout a regular file for every
// process of the machine, and the output never reached out.
func TestOutputFileFlagsRefuseASymbolicLink(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	specFile := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(specFile, []byte(testspec.MinimalWorker+"  node: {name: w1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sealed := sealedWorker(t, dir, rcpt)
	outDir := t.TempDir()
	target := filepath.Join(outDir, "redirected")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(outDir, "stdout")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	agent := []string{"--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum}
	for _, c := range []struct {
		name, flag string
		args       []string
	}{
		{"render", "--output", append([]string{"render", "-f", sealed, "--format", "cloud-config", "-o", link}, agent...)},
		{"seal", "--out", []string{"seal", "-f", specFile, "--recipient", rcpt, "--root", dir, "-o", link}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != 2 || !strings.Contains(errOut, c.flag) || !strings.Contains(errOut, "symbolic link") {
				t.Errorf("exit %d, want 2 naming %s and the link\n%s\n%s", code, c.flag, out, errOut)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
				t.Fatalf("the link was replaced: %v", err)
			}
		})
	}
}
