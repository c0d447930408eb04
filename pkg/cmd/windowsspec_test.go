package cmd

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
)

// docsWindowsSpec returns the spec.os windows spec of docs/windows.md's
// seal example (its `cat > win-node-1.yaml` heredoc), so that the test
// proves what the documentation shows.
func docsWindowsSpec(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/windows.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "cat > win-node-1.yaml <<'YAML'\n")
	body, _, ok2 := strings.Cut(rest, "\nYAML\n")
	if !ok || !ok2 || !strings.Contains(body, "os: windows") {
		t.Fatal("docs/windows.md: the seal example's win-node-1.yaml heredoc changed")
	}
	return body + "\n"
}

// TestWindowsSpecOnThisBuild: any build (this one included, Linux in CI)
// validates, seals and renders (powershell, cloudbase-init, unattend) docs/windows.md's
// spec.os windows spec with drive paths and an offline-join blob, exit 0;
// `seal --root` reads its C:\ paths from ROOT/C/.
func TestWindowsSpecOnThisBuild(t *testing.T) {
	dir := t.TempDir()
	specFile := filepath.Join(dir, "win-node-1.yaml")
	if err := os.WriteFile(specFile, []byte(docsWindowsSpec(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	for rel, v := range map[string]string{
		"C/ProgramData/machineadm/secrets/bootstrap-token": "abcdef.0123456789abcdef\n",
		"C/secure/win-node-1.djoin":                        "ARAAAAAAAAA=",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	id := filepath.Join(dir, "identity")
	code, rcpt, errOut := run(t, "", "keygen", "--out", id)
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, errOut)
	}
	sealed := filepath.Join(dir, "sealed.yaml")
	sha := strings.Repeat("0", 64)
	for _, args := range [][]string{
		{"config", "validate", "-f", specFile},
		{"seal", "-f", specFile, "--root", root, "--recipient", strings.TrimSpace(rcpt), "-o", sealed},
		{"unseal", "--check", "-f", sealed, "--identity", id},
		{"render", "-f", sealed, "--format", "powershell", "--agent-url", "https://downloads.example.com/machineadm.exe", "--agent-sha256", sha, "-o", filepath.Join(dir, "user-data.ps1")},
		{"render", "-f", sealed, "--format", "cloudbase-init", "--agent-url", "https://downloads.example.com/machineadm.exe", "--agent-sha256", sha, "-o", filepath.Join(dir, "user-data.yaml")},
		{"render", "-f", sealed, "--format", "unattend", "--agent-url", "https://downloads.example.com/machineadm.exe", "--agent-sha256", sha, "-o", filepath.Join(dir, "unattend.xml")},
	} {
		code, out, errOut := run(t, "", args...)
		if code != 0 {
			t.Fatalf("machineadm %s: exit %d\n%s\n%s", strings.Join(args[:2], " "), code, out, errOut)
		}
		// On a non-Windows build its secret files are another machine's:
		// no warning that they are missing here.
		if args[0] == "config" && runtime.GOOS != "windows" && strings.Contains(out+errOut, "does not exist") {
			t.Errorf("config validate of a spec for another OS warns about this machine's files:\n%s%s", out, errOut)
		}
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "user-data.yaml")); !strings.HasPrefix(string(out), "#cloud-config\n") || !strings.Contains(string(out), `path: C:\ProgramData\machineadm\firstboot.ps1`) {
		t.Errorf("render --format cloudbase-init wrote no cloudbase-init cloud-config:\n%s", out)
	}
	if out, _ := os.ReadFile(sealed); strings.Contains(string(out), "ARAAAAAAAAA=") || strings.Contains(string(out), "0123456789abcdef") {
		t.Error("the sealed spec holds a secret")
	}
}

// TestSpecOSRefusesOtherOSFields: each OS's fields in a spec for the
// other are refused by config validate with exit code 2 and the field's
// path, whatever OS machineadm is built for.
func TestSpecOSRefusesOtherOSFields(t *testing.T) {
	win := docsWindowsSpec(t)
	linux := strings.NewReplacer("os: windows", "os: linux",
		`{file: 'C:\ProgramData\machineadm\secrets\bootstrap-token'}`, "{file: /etc/machineadm/secrets/bootstrap-token}",
		`{file: 'C:\secure\win-node-1.djoin'}`, "{file: /etc/machineadm/secrets/djoin}").Replace(win)
	cases := map[string]struct{ spec, field string }{
		"windows: sysctl":                    {strings.Replace(win, "  host:\n", "  host:\n    sysctl: {net.ipv4.ip_forward: '1'}\n", 1), "spec.host.sysctl"},
		"windows: kernel modules":            {strings.Replace(win, "  host:\n", "  host:\n    kernelModules: [br_netfilter]\n", 1), "spec.host.kernelModules"},
		"windows: control plane":             {strings.Replace(win, "role: Worker", "role: ControlPlane", 1), "spec.role"},
		"windows: linux domain-join options": {strings.Replace(win, "      domain: corp.example.com\n", "      domain: corp.example.com\n      linux: {keytab: /etc/krb5.keytab}\n", 1), "spec.host.domainJoin.linux"},
		"linux: offline-join blob":           {linux, "spec.host.domainJoin.offlineJoinBlob"},
		"linux: drive path":                  {strings.Replace(linux, "{file: /etc/machineadm/secrets/bootstrap-token}", `{file: 'C:\ProgramData\token'}`, 1), "spec.join.token.file"},
		"unknown os":                         {strings.Replace(win, "os: windows", "os: plan9", 1), "spec.os"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(t, c.spec, "config", "validate", "-f", "-")
			if code != session.ExitBadInput || !strings.Contains(errOut, c.field+": ") {
				t.Errorf("exit %d, want %d naming %s\n%s\n%s", code, session.ExitBadInput, c.field, out, errOut)
			}
		})
	}
}

// TestRenderCloudbaseInitRefusesLinuxSpec: render --format cloudbase-init
// of a spec for Linux (os: linux, or the Linux examples on a Linux build)
// exits 2 naming the format and spec.os, and writes nothing.
func TestRenderCloudbaseInitRefusesLinuxSpec(t *testing.T) {
	worker, err := os.ReadFile("../../docs/examples/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	linux := strings.Replace(string(worker), "spec:\n", "spec:\n  os: linux\n", 1)
	dst := filepath.Join(t.TempDir(), "user-data")
	code, out, errOut := run(t, linux, "render", "-f", "-", "--format", "cloudbase-init", "--agent-url", "https://downloads.example.com/machineadm.exe", "--agent-sha256", strings.Repeat("0", 64), "-o", dst)
	if code != session.ExitBadInput || !strings.Contains(errOut, "--format: cloudbase-init") || !strings.Contains(errOut, "spec.os") {
		t.Fatalf("exit %d, want %d naming --format cloudbase-init and spec.os\n%s\n%s", code, session.ExitBadInput, out, errOut)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a refused render wrote %s (%v)", dst, err)
	}
}
