package cmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"

	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/session"
)

const (
	renderAgentURL = "https://downloads.example.com/machineadm/v0.1.0/linux-amd64/machineadm"
	renderAgentSum = "b018c15435be5dc5145030408dd0eb9ed79b8a68390bd6699d4899f2fffdc784"
)

// renderCLI runs `machineadm render ARGS` with stdin.
func renderCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(append([]string{"render"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func exampleSpec(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "docs", "examples", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRenderCommand(t *testing.T) {
	worker := exampleSpec(t, "worker")
	agent := []string{"--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum}
	for _, format := range []string{"cloud-config", "ignition", "shell", "powershell", "unattend"} {
		code, out, errOut := renderCLI(t, "", append([]string{"-f", worker, "--format", format, "--max-size", "aws"}, agent...)...)
		if code != 0 || out == "" {
			t.Fatalf("%s: exit %d\n%s", format, code, errOut)
		}
		if !strings.Contains(errOut, "rendered bootstrap data") {
			t.Errorf("%s: no size log line: %s", format, errOut)
		}
	}

	// From standard input, to a file that only root can read.
	spec, err := os.ReadFile(worker)
	if err != nil {
		t.Fatal(err)
	}
	// An existing, world-readable file is restricted too.
	dst := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(dst, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := renderCLI(t, string(spec), append([]string{"-f", "-", "--format", "shell", "-o", dst}, agent...)...)
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("output file: %v %v", fi, err)
	}
}

// "-o -" is standard output, as for -f: no file named "-" appears.
func TestRenderCommandOutputDash(t *testing.T) {
	worker := exampleSpec(t, "worker")
	dir := t.TempDir()
	t.Chdir(dir)
	args := []string{"-f", worker, "--format", "shell", "--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum}
	_, want, _ := renderCLI(t, "", args...)
	code, out, errOut := renderCLI(t, "", append(args, "-o", "-")...)
	if code != 0 || out == "" || out != want {
		t.Fatalf("-o -: exit %d, %d bytes on stdout (want %d)\n%s", code, len(out), len(want), errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); !os.IsNotExist(err) {
		t.Errorf("-o - created a file named \"-\" (%v)", err)
	}
}

func TestRenderCommandPayload(t *testing.T) {
	worker := exampleSpec(t, "worker")
	spec, err := os.ReadFile(worker)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spec)
	digest := hex.EncodeToString(sum[:])
	base := []string{"-f", worker, "--format", "shell", "--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum, "--payload-url", "https://specs.example.com/w1.yaml"}

	// The digest is computed from -f when not given, and must match it when given.
	for _, extra := range [][]string{nil, {"--payload-sha256", digest}, {"--payload-sha256", "sha256:" + strings.ToUpper(digest)}} {
		code, out, errOut := renderCLI(t, "", append(base, extra...)...)
		if code != 0 || !strings.Contains(out, digest) || strings.Contains(out, "MACHINEADM_SPEC") {
			t.Fatalf("%v: exit %d\n%s", extra, code, errOut)
		}
	}
	code, _, errOut := renderCLI(t, "", append(base, "--payload-sha256", renderAgentSum)...)
	if code != session.ExitBadInput || !strings.Contains(errOut, "does not match the spec given with -f") {
		t.Errorf("mismatched payload digest: exit %d\n%s", code, errOut)
	}
}

func TestRenderCommandBadInput(t *testing.T) {
	worker := exampleSpec(t, "worker")
	inline := filepath.Join(t.TempDir(), "inline.yaml")
	spec, err := os.ReadFile(worker)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(spec), "token: {file: /etc/machineadm/secrets/bootstrap-token}", "token: {value: abcdef.0123456789abcdef}", 1)
	if err := os.WriteFile(inline, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := []string{"--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum}
	cases := map[string]struct {
		args []string
		want string
	}{
		"no format":                  {append([]string{"-f", worker}, agent...), "--format is required"},
		"no spec":                    {append([]string{"--format", "shell"}, agent...), "-f SPEC"},
		"bad format":                 {append([]string{"-f", worker, "--format", "butane"}, agent...), "unknown format"},
		"no digest":                  {[]string{"-f", worker, "--format", "shell", "--agent-url", renderAgentURL}, "--agent-sha256: required"},
		"inline secrets":             {append([]string{"-f", inline, "--format", "cloud-config"}, agent...), "spec.join.token.value"},
		"too big":                    {append([]string{"-f", worker, "--format", "cloud-config", "--max-size", "1000"}, agent...), "over the limit 1000 bytes"},
		"bad max-size":               {append([]string{"-f", worker, "--format", "shell", "--max-size", "gcp"}, agent...), "--max-size"},
		"max-size 0":                 {append([]string{"-f", worker, "--format", "shell", "--max-size", "0"}, agent...), "must be > 0 or a preset"},
		"missing key":                {append([]string{"-f", worker, "--format", "shell", "--agent-signature-url", renderAgentURL + ".sig", "--agent-public-key", "/nonexistent.pem"}, agent...), "--agent-public-key"},
		"payload digest without url": {append([]string{"-f", worker, "--format", "shell", "--payload-sha256", renderAgentSum}, agent...), "needs --payload-url"},
		// Credentials in a URL render writes into user data, and control
		// characters in a path that reaches a script (exit 2, the flag
		// named, the credential never shown).
		"agent url with user information": {[]string{"-f", worker, "--format", "shell", "--agent-url", "https://robot:0123456789abcdef@downloads.example/m", "--agent-sha256", renderAgentSum}, "--agent-url: the URL carries credentials"},
		"presigned payload url":           {append([]string{"-f", worker, "--format", "shell", "--payload-url", "https://specs.example/w.yaml?X-Amz-Signature=0123456789abcdef"}, agent...), "--payload-url: the URL carries a credential"},
		"line feed in agent path":         {[]string{"-f", worker, "--format", "cloud-config", "--agent-url", "file:///opt/bin/m%0Aadm"}, "--agent-url: file URL path"},
		"NUL in windows agent path":       {[]string{"-f", worker, "--format", "powershell", "--agent-url", "file:///C:/m%00.exe"}, "--agent-url: file URL path"},
		// --agent-ca takes PEM certificates, for a download on Linux.
		"agent CA not PEM": {append([]string{"-f", worker, "--format", "shell", "--agent-ca", worker}, agent...), "--agent-ca: not a PEM bundle"},
		// A registry source must be a digest-pinned reference.
		"oci reference with a tag":   {[]string{"-f", worker, "--format", "ignition", "--agent-url", "oci://ghcr.io/machineadm/agent:v1"}, "--agent-url: \"oci://ghcr.io/machineadm/agent:v1\" is not pinned by a digest"},
		"oci digest and flag differ": {[]string{"-f", worker, "--format", "shell", "--agent-url", "oci://ghcr.io/machineadm/agent@sha256:" + strings.Repeat("0", 64), "--agent-sha256", renderAgentSum}, "--agent-sha256: " + renderAgentSum + " differs from the digest"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := renderCLI(t, "", c.args...)
			if code != session.ExitBadInput || out != "" || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stdout %d bytes, stderr:\n%s\nwant exit 2 and %q", code, len(out), errOut, c.want)
			}
			if strings.Contains(errOut, "0123456789abcdef") {
				t.Errorf("stderr shows the token:\n%s", errOut)
			}
		})
	}
	// --insecure-inline-secrets renders it anyway.
	if code, _, errOut := renderCLI(t, "", append([]string{"-f", inline, "--format", "cloud-config", "--insecure-inline-secrets"}, agent...)...); code != 0 {
		t.Errorf("--insecure-inline-secrets: exit %d\n%s", code, errOut)
	}
}

// TestRenderPublicKeyFileIsReadBounded: --agent-public-key naming a FIFO
// or a file far larger than any public key is refused at once (exit 2,
// nothing written) instead of blocking render or reading it whole.
func TestRenderPublicKeyFileIsReadBounded(t *testing.T) {
	dir := t.TempDir()
	fifo, large := filepath.Join(dir, "fifo.pem"), filepath.Join(dir, "large.pem")
	testfifo.Make(t, fifo)
	if err := os.WriteFile(large, make([]byte, render.MaxPublicKeyFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "not a regular file (a FIFO)", large: "more than the 65536 allowed"} {
		dst := filepath.Join(dir, "user-data")
		done := make(chan struct{})
		var code int
		var errOut string
		go func() {
			defer close(done)
			code, _, errOut = renderCLI(t, "", "-f", exampleSpec(t, "worker"), "--format", "shell", "-o", dst,
				"--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum,
				"--agent-signature-url", renderAgentURL+".sig", "--agent-public-key", path)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("render blocked on --agent-public-key %s", path)
		}
		if _, err := os.Stat(dst); code != session.ExitBadInput || !strings.Contains(errOut, "--agent-public-key: ") || !strings.Contains(errOut, want) || err == nil {
			t.Errorf("--agent-public-key %s: exit %d, output written %v: %s", path, code, err == nil, errOut)
		}
	}
}

// TestRenderOutputIntoMissingDirectory: -o in a directory that does not
// exist is bad input (exit 2), found before rendering, with an error that
// names the flag and the output path once.
func TestRenderOutputIntoMissingDirectory(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "missing", "user-data")
	code, out, errOut := renderCLI(t, "", "-f", exampleSpec(t, "worker"), "--format", "shell", "-o", dst,
		"--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum)
	if code != session.ExitBadInput || out != "" || strings.Count(errOut, dst) != 1 || !strings.Contains(errOut, "--output "+dst+": ") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming --output %s once", code, out, errOut, dst)
	}
}

// TestRenderInsecureURLCredentialsWarn: --insecure-inline-secrets renders a
// flag URL with a credential, as documented, but not silently: a warning
// names each such flag (never the credential), as the spec's own
// credential fields draw one.
func TestRenderInsecureURLCredentialsWarn(t *testing.T) {
	worker := exampleSpec(t, "worker")
	code, out, errOut := renderCLI(t, "", "-f", worker, "--format", "shell", "--insecure-inline-secrets",
		"--agent-url", "https://robot:SECRETpw0123@downloads.example/m", "--agent-sha256", renderAgentSum,
		"--payload-url", "https://specs.example/w.yaml?X-Amz-Signature=SECRETsig0123")
	if code != 0 || !strings.Contains(out, "SECRETpw0123") {
		t.Fatalf("exit %d; want the override to render the URL; stderr:\n%s", code, errOut)
	}
	for _, flag := range []string{"--agent-url", "--payload-url"} {
		if !strings.Contains(errOut, flag+": ") || !strings.Contains(errOut, "--insecure-inline-secrets") {
			t.Errorf("no warning naming %s:\n%s", flag, errOut)
		}
	}
	if strings.Contains(errOut, "SECRET") {
		t.Errorf("the warning shows the credential:\n%s", errOut)
	}
	if _, _, errOut := renderCLI(t, "", "-f", worker, "--format", "shell", "--insecure-inline-secrets", "--agent-url", renderAgentURL, "--agent-sha256", renderAgentSum); strings.Contains(errOut, "URL credential") {
		t.Errorf("a warning without a credential in any URL:\n%s", errOut)
	}
}
