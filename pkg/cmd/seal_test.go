package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/session"
)

// TestKeygenSealUnsealCheck runs the three commands as a user would.
func TestKeygenSealUnsealCheck(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := Execute(args, strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	os.MkdirAll(filepath.Join(dir, "etc/machineadm/secrets"), 0o700)
	const token = "abcdef.0123456789abcdef"
	os.WriteFile(filepath.Join(dir, "etc/machineadm/secrets/bootstrap-token"), []byte(token+"\n"), 0o600)
	specFile := filepath.Join(dir, "w.yaml")
	os.WriteFile(specFile, []byte(testspec.MinimalWorker), 0o644)

	id := filepath.Join(dir, "identity")
	rcpt, errOut, code := run("keygen", "--type", "hpke", "--out", id)
	if code != 0 || !strings.HasPrefix(rcpt, "hpke:p384:") {
		t.Fatalf("keygen: %d %q %s", code, rcpt, errOut)
	}
	if fi, _ := os.Stat(id); fi.Mode().Perm() != 0o600 {
		t.Errorf("identity mode %v", fi.Mode())
	}
	if _, _, code := run("keygen", "--type", "rsa", "--out", filepath.Join(dir, "x")); code != 2 {
		t.Errorf("keygen --type rsa: exit %d", code)
	}
	if _, _, code := run("keygen", "--type", "hpke", "--suite", "x25519", "--out", filepath.Join(dir, "x")); code != 2 {
		t.Errorf("keygen --type hpke --suite x25519: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("keygen with a bad --type or --suite wrote its --out file")
	}
	sealed := filepath.Join(dir, "sealed.yaml")
	if _, errOut, code := run("seal", "-f", specFile, "--recipient", strings.TrimSpace(rcpt), "--machine-name", "*", "--root", dir, "-o", sealed); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	data, _ := os.ReadFile(sealed)
	if bytes.Contains(data, []byte(token)) || !bytes.Contains(data, []byte("kind: SealedSecrets")) {
		t.Fatalf("sealed file:\n%s", data)
	}
	out, errOut, code := run("unseal", "--check", "-f", sealed, "--identity", id)
	if code != 0 || !strings.Contains(out, "opens: hpke recipient") || !strings.Contains(out, "spec.join.token") || strings.Contains(out+errOut, token) {
		t.Errorf("unseal --check: %d %q %q", code, out, errOut)
	}
	other := filepath.Join(dir, "other")
	run("keygen", "--out", other)
	if out, errOut, code := run("unseal", "--check", "-f", sealed, "--identity", other); code != 1 || !strings.Contains(errOut, "no identity matches") {
		t.Errorf("unseal --check with another identity: %d %q %q", code, out, errOut)
	}
	if _, _, code := run("seal", "-f", specFile, "-o", sealed); code != 2 {
		t.Errorf("seal without a recipient: exit %d", code)
	}
}

// sealRoot makes a root for seal: its etc/machineadm/secrets/bootstrap-token
// holds token (0600), and an identity made by keygen is at DIR/identity.
// It returns the root, the identity's path and its recipient line.
// sealedWorker writes testspec.MinimalWorker named w1 to DIR/w.yaml and
// seals it for rcpt with --root dir into DIR/sealed.yaml, which it returns.
func sealedWorker(t *testing.T, dir, rcpt string) (sealed string) {
	t.Helper()
	specFile := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(specFile, []byte(testspec.MinimalWorker+"  node: {name: w1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sealed = filepath.Join(dir, "sealed.yaml")
	if code, _, errOut := run(t, "", "seal", "-f", specFile, "--recipient", rcpt, "--root", dir, "-o", sealed); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	return sealed
}

func sealRoot(t *testing.T, token string) (dir, id, rcpt string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc/machineadm/secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/machineadm/secrets/bootstrap-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id = filepath.Join(dir, "identity")
	code, out, errOut := run(t, "", "keygen", "--out", id)
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, errOut)
	}
	return dir, id, strings.TrimSpace(out)
}

// unseal --check of a file that is not a sealed spec, or whose envelope is
// malformed, is bad input (exit 2), not an identity that fails to open it
// (exit 1).
func TestUnsealCheckBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	id := filepath.Join(dir, "identity")
	if code, _, _ := run(t, "", "keygen", "--out", id); code != 0 {
		t.Fatalf("keygen: exit %d", code)
	}
	malformed := testspec.MinimalWorker + "\n---\napiVersion: machineadm.io/v1alpha1\nkind: SealedSecrets\nbogus: 1\n"
	for name, in := range map[string]string{"plain spec": testspec.MinimalWorker, "malformed envelope": malformed} {
		code, out, errOut := run(t, in, "unseal", "--check", "-f", "-", "--identity", id)
		if code != session.ExitBadInput || !strings.Contains(errOut, "Error: ") {
			t.Errorf("unseal --check of a %s: exit %d, want %d\nstdout %s\nstderr %s", name, code, session.ExitBadInput, out, errOut)
		}
	}
}

// Secrets given where seal and unseal expect a recipient or a path are
// refused as bad input (exit 2 for flags, before anything is read or
// written) and never echoed.
func TestSealUnsealNeverEchoSecretsGivenAsArguments(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	dir, id, rcpt := sealRoot(t, token)
	specFile := filepath.Join(dir, "w.yaml")
	os.WriteFile(specFile, []byte(testspec.MinimalWorker), 0o644)
	raw, _ := os.ReadFile(id)
	var line string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "MACHINEADM-HPKE-SECRET-KEY:") {
			line = l
		}
	}
	key := line[strings.LastIndex(line, ":")+1:]
	sealed := filepath.Join(dir, "sealed.yaml")
	for name, args := range map[string][]string{
		"identity as recipient": {"--recipient", line, "--machine-name", "*"},
		"token as recipient":    {"--recipient", token, "--machine-name", "*"},
		"bad machine name":      {"--recipient", rcpt, "--machine-name", "w 1"},
	} {
		code, out, errOut := run(t, "", append([]string{"seal", "-f", specFile, "--root", dir, "-o", sealed}, args...)...)
		if code != session.ExitBadInput {
			t.Errorf("seal with %s: exit %d, want %d\n%s", name, code, session.ExitBadInput, errOut)
		}
		if strings.Contains(out+errOut, key[:8]) || strings.Contains(out+errOut, "0123456789") {
			t.Errorf("seal with %s echoed the secret:\n%s%s", name, out, errOut)
		}
		if _, err := os.Stat(sealed); err == nil {
			t.Fatalf("seal with %s wrote %s", name, sealed)
		}
	}
	if code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "-o", sealed, "--recipient", rcpt, "--machine-name", "*"); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	code, out, errOut := run(t, "", "unseal", "--check", "-f", sealed, "--identity", line)
	if code == session.ExitOK || strings.Contains(out+errOut, key[:8]) || !strings.Contains(errOut, "identity line") {
		t.Errorf("unseal --check --identity <identity line>: exit %d\n%s%s", code, out, errOut)
	}
}

// A URL with credentials is not sealed: seal says so for each, naming the
// field, and writes the file that still holds it owner-only (0600, not
// 0644), so the password is not left world-readable.
func TestSealWarnsAboutCredentialsLeftInTheClear(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	for name, tc := range map[string]struct {
		spec string
		mode os.FileMode
		warn bool
	}{
		"proxy password": {testspec.MinimalWorker + "  host:\n    containerd:\n      proxy: {httpsProxy: \"http://u:S3cretPassw0rd@proxy.example:3128\"}\n", 0o600, true},
		"no credentials": {testspec.MinimalWorker, 0o644, false},
		// The same secret-shape detector as render's: a presigned URL and
		// a registry password in the containerd configPatch stay in the
		// clear too, and were not warned about before.
		"presigned url":        {testspec.MinimalWorker + "  host:\n    files:\n      - path: /opt/blob\n        source: {url: \"https://b.example/o?X-Amz-Signature=S3cretPassw0rd\", sha256: " + strings.Repeat("a", 64) + "}\n", 0o600, false},
		"configPatch password": {testspec.MinimalWorker + "  host:\n    containerd:\n      configPatch: |\n        [plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".auth]\n          password = \"S3cretPassw0rd\"\n", 0o600, false},
	} {
		specFile := filepath.Join(dir, "w.yaml")
		os.WriteFile(specFile, []byte(tc.spec), 0o644)
		sealed := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".sealed.yaml")
		code, out, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w1", "-o", sealed)
		if code != 0 {
			t.Fatalf("%s: seal: %d %s", name, code, errOut)
		}
		if got := strings.Contains(errOut, "warning: spec.host.containerd.proxy.httpsProxy: a URL with credentials is not sealed"); got != tc.warn {
			t.Errorf("%s: warning %v, want %v:\n%s", name, got, tc.warn, errOut)
		}
		if tc.mode == 0o600 && !strings.Contains(errOut, " is not sealed: it stays in the clear") {
			t.Errorf("%s: no warning about what stays in the clear:\n%s", name, errOut)
		}
		if strings.Contains(out+errOut, "S3cretPassw0rd") {
			t.Errorf("%s: seal printed the password", name)
		}
		fi, err := os.Stat(sealed)
		if err != nil || fi.Mode().Perm() != tc.mode {
			t.Errorf("%s: %s mode %v (%v), want %v", name, sealed, fi.Mode().Perm(), err, tc.mode)
		}
	}
}

// The warning about a URL left in the clear names the -o path escaped (a
// control character in it neither acts on the terminal nor starts a line),
// and with -o - says the spec went to standard output, where no file mode
// applies.
func TestSealCredentialsWarningNamesOutputSafely(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	specFile := filepath.Join(dir, "w.yaml")
	os.WriteFile(specFile, []byte(testspec.MinimalWorker+"  host:\n    containerd:\n      proxy: {httpsProxy: \"http://u:S3cretPassw0rd@proxy.example:3128\"}\n"), 0o644)
	sealed := filepath.Join(dir, "w\x1b[2J\nkind: Evil.sealed.yaml")
	code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w1", "-o", sealed)
	if code != 0 || rawControl(errOut) || strings.Contains(errOut, "\nkind: Evil") || !strings.Contains(errOut, `w\x1b[2J\x0akind: Evil.sealed.yaml (written 0600)`) {
		t.Errorf("seal -o <path with control characters>: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w1", "-o", "-")
	if code != 0 || !strings.Contains(errOut, "stays in the clear in standard output,") || strings.Contains(errOut, "written 0600") || !strings.Contains(out, "kind: SealedSecrets") {
		t.Errorf("seal -o -: exit %d, stderr %q", code, errOut)
	}
}

// A spec seal cannot take — already sealed, or without a node name and no
// --machine-name — is bad input: exit 2, nothing written.
func TestSealRefusesUnsealableSpecsExit2(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	specFile := filepath.Join(dir, "w.yaml")
	os.WriteFile(specFile, []byte(testspec.MinimalWorker), 0o644)
	sealed := filepath.Join(dir, "w.sealed.yaml")
	if code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w1", "-o", sealed); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	for name, args := range map[string][]string{
		"already sealed":  {"-f", sealed, "--machine-name", "w1"},
		"no machine name": {"-f", specFile},
	} {
		out := filepath.Join(dir, "again.yaml")
		code, _, errOut := run(t, "", append([]string{"seal", "--root", dir, "--recipient", rcpt, "-o", out}, args...)...)
		if code != session.ExitBadInput {
			t.Errorf("seal of a spec %s: exit %d, want %d\n%s", name, code, session.ExitBadInput, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("seal of a spec %s wrote %s", name, out)
		}
	}
}

// keygen onto an existing file is bad input (exit 2) found before any key
// is made: the file is left as it was and no recipient is printed.
func TestKeygenRefusesAnExistingFileExit2(t *testing.T) {
	for _, typ := range []string{"hpke", "age"} {
		out := filepath.Join(t.TempDir(), "identity")
		if err := os.WriteFile(out, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, errOut := run(t, "", "keygen", "--type", typ, "--out", out)
		if code != session.ExitBadInput || stdout != "" || !strings.Contains(errOut, "exists; machineadm keygen never replaces an identity") {
			t.Errorf("keygen --type %s onto an existing file: exit %d, stdout %q, stderr %s", typ, code, stdout, errOut)
		}
		if b, _ := os.ReadFile(out); string(b) != "keep me" {
			t.Errorf("keygen --type %s changed the existing file: %q", typ, b)
		}
	}
}

// unseal --check says "opens" only for a file the machine would accept:
// it opens the envelope for the machine's node name (spec.node.name, or
// --node-name) and checks the opened secrets as inputs-check does. An
// envelope sealed for another node, or whose token is not a token, fails
// (exit 1) as bootstrap fails; the same file checked for the node it was
// sealed for opens.
func TestUnsealCheckRunsTheMachinesChecks(t *testing.T) {
	dir, id, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	specFile := filepath.Join(dir, "w.yaml")
	os.WriteFile(specFile, []byte(testspec.MinimalWorker+"  node: {name: w1}\n"), 0o644)
	forW2 := filepath.Join(dir, "w2.sealed.yaml")
	if code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w2", "-o", forW2); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	code, out, errOut := run(t, "", "unseal", "--check", "-f", forW2, "--identity", id)
	if code != session.ExitFailed || strings.Contains(out, "opens") || !strings.Contains(errOut, "VerificationFailed") && !strings.Contains(errOut, "machine") {
		t.Errorf("unseal --check of an envelope for w2, spec node w1: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "unseal", "--check", "-f", forW2, "--identity", id, "--node-name", "w2"); code != 0 || !strings.Contains(out, "opens") {
		t.Errorf("unseal --check --node-name w2: exit %d\n%s\n%s", code, out, errOut)
	}

	// A well-formed envelope whose token is not a bootstrap token: it
	// opens, and the machine's inputs-check refuses it.
	good := filepath.Join(dir, "w1.sealed.yaml")
	if code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "-o", good); code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	data, _ := os.ReadFile(good)
	clearDoc, sealedDoc, err := seal.Split(data)
	if err != nil {
		t.Fatal(err)
	}
	env, err := seal.Parse(sealedDoc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := seal.ParseRecipient(rcpt)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := seal.Seal(seal.Binding{ClusterName: env.ClusterName, MachineName: env.MachineName, SpecDigest: env.SpecDigest}, map[string][]byte{"spec.join.token": []byte("not-a-bootstrap-token")}, r)
	if err != nil {
		t.Fatal(err)
	}
	badYAML, err := bad.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad.sealed.yaml")
	os.WriteFile(badFile, seal.Join(clearDoc, badYAML), 0o644)
	code, out, errOut = run(t, "", "unseal", "--check", "-f", badFile, "--identity", id)
	if code != session.ExitFailed || strings.Contains(out, "opens") || !strings.Contains(errOut, "spec.join.token") || strings.Contains(out+errOut, "not-a-bootstrap-token") {
		t.Errorf("unseal --check of a sealed non-token: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "unseal", "--check", "-f", good, "--identity", id); code != 0 || !strings.Contains(out, `as node "w1"`) {
		t.Errorf("unseal --check of the good file: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestSealRootKeepsLinksInside: with --root, a secret file that is an
// absolute symbolic link is resolved inside the root, as on the machine;
// it was followed out of the root to the sealing host's file, whose
// content was sealed.
func TestSealRootKeepsLinksInside(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	outside := filepath.Join(t.TempDir(), "host-token")
	if err := os.WriteFile(outside, []byte("zyxwvu.0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "etc/machineadm/secrets/bootstrap-token")
	if err := os.Remove(tok); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, tok); err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(specFile, []byte(testspec.MinimalWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	sealed := filepath.Join(dir, "w.sealed.yaml")
	// The link's target inside the root does not exist: refused.
	code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w1", "-o", sealed)
	if code == 0 || !strings.Contains(errOut, "spec.join.token.file") {
		t.Errorf("seal followed the link out of --root: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(sealed); err == nil {
		t.Error("a sealed spec was written")
	}
	// Inside the root, the link's target is read (here a malformed token,
	// which seal refuses by its shape).
	inside := filepath.Join(dir, outside)
	if err := os.MkdirAll(filepath.Dir(inside), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, []byte("not-a-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "", "seal", "-f", specFile, "--root", dir, "--recipient", rcpt, "--machine-name", "w1", "-o", sealed)
	if code == 0 || !strings.Contains(errOut, "spec.join.token.file") || strings.Contains(errOut, "not-a-token") {
		t.Errorf("seal did not read the link's target inside --root: exit %d, stderr %q", code, errOut)
	}
}

// TestSealRootNotADirectoryExit2: a --root that is missing or not a
// directory is a usage error (exit 2), as for prepare; it exited 1 from
// the first secret file it could not read.
func TestSealRootNotADirectoryExit2(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	specFile := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(specFile, []byte(testspec.MinimalWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{filepath.Join(dir, "missing"), specFile, ""} {
		code, _, errOut := run(t, "", "seal", "-f", specFile, "--root", root, "--recipient", rcpt, "--machine-name", "w1", "-o", filepath.Join(dir, "out.yaml"))
		if code != session.ExitBadInput || !strings.Contains(errOut, "--root") {
			t.Errorf("seal --root %q: exit %d, stderr %q", root, code, errOut)
		}
	}
}

// TestEditedSealedSpecRefusedWithoutKey: a sealed file whose clear spec was
// edited after sealing (here its node name) opens on no machine; config
// validate and render, which read it without a key, refuse it with exit
// code 2 at SealedSecrets.specDigest instead of calling it valid or
// rendering it. The file as sealed still validates and renders.
func TestEditedSealedSpecRefusedWithoutKey(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	sealed := sealedWorker(t, dir, rcpt)
	data, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(dir, "edited.yaml")
	if err := os.WriteFile(edited, bytes.Replace(data, []byte("node: {name: w1}"), []byte("node: {name: w2}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	render := func(f string) []string {
		return []string{"render", "-f", f, "--format", "shell", "--agent-url", "file:///usr/local/bin/machineadm", "-o", f + ".out"}
	}
	for _, args := range [][]string{{"config", "validate", "-f", edited}, render(edited)} {
		code, out, errOut := run(t, "", args...)
		if code != session.ExitBadInput || !strings.Contains(errOut, "SealedSecrets.specDigest") || !strings.Contains(errOut, "seal it again") {
			t.Errorf("%q on an edited sealed spec: exit %d, stdout %q, stderr %q; want exit 2 naming SealedSecrets.specDigest", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(edited + ".out"); err == nil {
		t.Error("render wrote the edited sealed spec")
	}
	for _, args := range [][]string{{"config", "validate", "-f", sealed}, render(sealed)} {
		if code, _, errOut := run(t, "", args...); code != 0 {
			t.Errorf("%q on the sealed spec as sealed: exit %d %s", args, code, errOut)
		}
	}
}

// TestUnsealCheckBadNodeNameExit2: a --node-name no Node can have (a line
// feed, an escape sequence, upper case) is a usage error, exit 2, shown
// escaped; it exited 1 as an envelope sealed for another machine.
func TestUnsealCheckBadNodeNameExit2(t *testing.T) {
	dir, id, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	sealed := sealedWorker(t, dir, rcpt)
	for _, name := range []string{"w1\n\x1b[31mx", "W1", "w1 x", "-w1"} {
		code, out, errOut := run(t, "", "unseal", "--check", "-f", sealed, "--identity", id, "--node-name", name)
		if code != session.ExitBadInput || !strings.Contains(errOut, "--node-name") || strings.Contains(errOut, "\x1b[31m") && strings.ContainsRune(errOut, 0x1b) {
			t.Errorf("--node-name %q: exit %d, stdout %q, stderr %q; want exit 2 naming --node-name", name, code, out, errOut)
		}
	}
	if code, _, errOut := run(t, "", "unseal", "--check", "-f", sealed, "--identity", id, "--node-name", "w1"); code != 0 {
		t.Errorf("--node-name w1: exit %d %s", code, errOut)
	}
}

// TestMigrateRefusesSealedFile: config migrate of a sealed file exits 2
// saying it is sealed and how to migrate it; it said "holds 2 YAML
// documents ... remove the extra sections", which would drop the secrets.
func TestMigrateRefusesSealedFile(t *testing.T) {
	dir, _, rcpt := sealRoot(t, "abcdef.0123456789abcdef")
	sealed := sealedWorker(t, dir, rcpt)
	code, out, errOut := run(t, "", "config", "migrate", "-f", sealed)
	if code != session.ExitBadInput || out != "" || !strings.Contains(errOut, "is sealed") || strings.Contains(errOut, "remove the extra") {
		t.Errorf("config migrate of a sealed file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
