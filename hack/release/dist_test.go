package main

// Tests of a built release: MACHINEADM_RELEASE_DIST=DIR names the dist
// directory of `make release` (check.sh sets it); without it they skip.

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	spdxjson "github.com/spdx/tools-golang/json"
)

// releaseDist returns the dist directory under test and the artifact
// names SHA256SUMS lists, after checking every digest.
func releaseDist(t *testing.T) (string, []string) {
	t.Helper()
	dist := os.Getenv("MACHINEADM_RELEASE_DIST")
	if dist == "" {
		t.Skip("MACHINEADM_RELEASE_DIST is not set (hack/release/check.sh builds a release and sets it)")
	}
	sums, err := os.ReadFile(filepath.Join(dist, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		want, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("%s: malformed line %q", SumsFile, line)
		}
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
			t.Errorf("%s: digest differs from %s", name, SumsFile)
		}
		names = append(names, name)
	}
	return dist, names
}

func distVersion(t *testing.T, names []string) string {
	t.Helper()
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "machineadm-v"); ok && strings.HasSuffix(v, "-windows-amd64.zip") {
			return "v" + strings.TrimSuffix(v, "-windows-amd64.zip")
		}
	}
	t.Fatal("no Windows zip in SHA256SUMS")
	return ""
}

func TestDistArtifacts(t *testing.T) {
	dist, names := releaseDist(t)
	v := distVersion(t, names)
	pv := strings.TrimPrefix(v, "v")
	want := []string{
		"machineadm-linux-amd64", "machineadm-linux-amd64.spdx.json",
		"machineadm-linux-arm64", "machineadm-linux-arm64.spdx.json",
		"machineadm-windows-amd64.exe", "machineadm-windows-amd64.exe.spdx.json",
		windowsZipName(v),
		"machineadm_" + strings.ReplaceAll(pv, "-", "~") + "_amd64.deb",
		"machineadm_" + strings.ReplaceAll(pv, "-", "~") + "_arm64.deb",
	}
	var rpms int
	for _, n := range names {
		if strings.HasSuffix(n, ".x86_64.rpm") || strings.HasSuffix(n, ".aarch64.rpm") {
			rpms++
			want = append(want, n)
		}
	}
	slices.Sort(want)
	if !slices.Equal(names, want) || rpms != 2 {
		t.Errorf("SHA256SUMS lists\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	// Static binaries, built as make release says.
	for _, b := range Binaries {
		bi, err := buildinfo.ReadFile(filepath.Join(dist, b.File))
		if err != nil {
			t.Fatal(err)
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		// (-trimpath also keeps -ldflags out of the build information.)
		if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"] != b.OS ||
			settings["GOARCH"] != b.Arch || settings["vcs.revision"] != "" {
			t.Errorf("%s: build settings %v", b.File, settings)
		}
		// No build ID (-buildid=), and no path of the build machine.
		if out, err := exec.Command("go", "tool", "buildid", filepath.Join(dist, b.File)).Output(); err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("%s: build ID %q (%v), want none", b.File, out, err)
		}
		data, err := os.ReadFile(filepath.Join(dist, b.File))
		if err != nil {
			t.Fatal(err)
		}
		modcache, _ := exec.Command("go", "env", "GOMODCACHE").Output()
		for _, leak := range []string{filepath.Dir(dist), runtime.GOROOT(), string(bytes.TrimSpace(modcache))} {
			if leak != "" && bytes.Contains(data, []byte(leak+"/")) {
				t.Errorf("%s holds the build machine's path %s", b.File, leak)
			}
		}
		if !bytes.Contains(data, []byte(v)) {
			t.Errorf("%s is not stamped with %s", b.File, v)
		}
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		out, err := exec.Command(filepath.Join(dist, "machineadm-linux-amd64"), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "machineadm "+v+" ") || !strings.Contains(string(out), "v1.37.2") {
			t.Errorf("machineadm version: %v\n%s", err, out)
		}
	}
	// The Windows zip holds the Windows binary and the first-boot scripts.
	exe, _ := os.ReadFile(filepath.Join(dist, "machineadm-windows-amd64.exe"))
	zr, err := zip.OpenReader(filepath.Join(dist, windowsZipName(v)))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var inZip []string
	for _, f := range zr.File {
		inZip = append(inZip, f.Name)
		if f.Name == "machineadm.exe" {
			rc, _ := f.Open()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(rc)
			rc.Close()
			if !bytes.Equal(buf.Bytes(), exe) {
				t.Error("machineadm.exe in the zip differs from machineadm-windows-amd64.exe")
			}
		}
	}
	if got := strings.Join(inZip, " "); got != "LICENSE README.md firstboot.ps1 machineadm.exe unattend.xml" {
		t.Errorf("zip holds %s", got)
	}
}

func TestDistSBOM(t *testing.T) {
	dist, _ := releaseDist(t)
	for _, b := range Binaries {
		data, err := os.ReadFile(filepath.Join(dist, b.File))
		if err != nil {
			t.Fatal(err)
		}
		bi, err := buildinfo.ReadFile(filepath.Join(dist, b.File))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dist, sbomName(b.File)))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := spdxjson.Read(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", sbomName(b.File), err)
		}
		sum := sha256.Sum256(data)
		root := doc.Packages[0]
		if root.PackageName != "github.com/machineadm/machineadm" || root.PackageChecksums[0].Value != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: root package %s %v", b.File, root.PackageName, root.PackageChecksums)
		}
		mods := map[string]bool{}
		for _, p := range doc.Packages[2:] {
			mods[p.PackageName+"@"+p.PackageVersion] = len(p.PackageChecksums) == 1
		}
		for _, d := range bi.Deps {
			m := d
			if d.Replace != nil {
				m = d.Replace
			}
			if hasSum, ok := mods[m.Path+"@"+m.Version]; !ok || !hasSum {
				t.Errorf("%s: SBOM lacks %s@%s or its sum", b.File, m.Path, m.Version)
			}
		}
		if len(bi.Deps) < 50 || len(mods) != len(bi.Deps) {
			t.Errorf("%s: %d modules in the SBOM, %d in the binary", b.File, len(mods), len(bi.Deps))
		}
	}
}

// signedNames are the files of dist that carry a signature.
func signedNames(names []string) []string { return append(slices.Clone(names), SumsFile) }

func TestDistSignaturesSigstore(t *testing.T) {
	dist, names := releaseDist(t)
	v, err := signature.LoadVerifierFromPEMFile(filepath.Join(dist, PublicKeyFile), crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	other := otherSigner(t)
	for _, n := range signedNames(names) {
		msg, sig := readSigned(t, dist, n)
		if err := Verify(v, sig, msg); err != nil {
			t.Errorf("%s: release signature refused: %v", n, err)
		}
		otherSig, err := Sign(other, msg)
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(v, otherSig, msg); err == nil {
			t.Errorf("%s: a second key's signature was accepted", n)
		}
	}
}

func TestDistSignaturesOpenSSL(t *testing.T) {
	dist, names := releaseDist(t)
	other := otherSigner(t)
	pub := filepath.Join(dist, PublicKeyFile)
	for _, n := range signedNames(names) {
		if strings.HasSuffix(n, ".spdx.json") || strings.HasSuffix(n, ".deb") {
			continue // same path as their siblings; keeps the test quick
		}
		msg, sig := readSigned(t, dist, n)
		if !opensslVerify(t, pub, sig, msg) {
			t.Errorf("%s: openssl refused the release signature", n)
		}
		otherSig, err := Sign(other, msg)
		if err != nil {
			t.Fatal(err)
		}
		if opensslVerify(t, pub, otherSig, msg) {
			t.Errorf("%s: openssl accepted a second key's signature", n)
		}
	}
}

// TestDistStub runs the shell stub of `machineadm render --format shell
// --agent-signature-url` for real: it downloads the release's agent and
// signature from a loopback server, checks digest and signature with
// sha256sum and openssl, installs the agent and runs it. The stub runs as
// the unprivileged user nobody under MACHINEADM_PREFIX, so the agent it
// starts (`machineadm bootstrap`) cannot change this host.
func TestDistStub(t *testing.T) {
	dist, _ := releaseDist(t)
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs the linux/amd64 agent")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed (hack/install-deps.sh installs it)")
	}
	agentFile := filepath.Join(dist, "machineadm-linux-amd64")
	agent, _ := os.ReadFile(agentFile)
	sig, _ := os.ReadFile(agentFile + SigSuffix)
	otherSig, err := Sign(otherSigner(t), agent)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(agent)
	files := map[string][]byte{"/machineadm": agent, "/machineadm.sig": sig, "/other.sig": otherSig}
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if b, ok := files[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()

	run := func(sigPath string) (root, stderr string, code int) {
		t.Helper()
		root, err := os.MkdirTemp("", "machineadm-stub-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
		stub := filepath.Join(root, "stub.sh")
		render := exec.Command(agentFile, "render", "-f", "../../docs/examples/worker.yaml", "--format", "shell",
			"--agent-url", srv.URL+"/machineadm", "--agent-sha256", hex.EncodeToString(sum[:]),
			"--agent-signature-url", srv.URL+sigPath, "--agent-public-key", filepath.Join(dist, PublicKeyFile), "-o", stub)
		if out, err := render.CombinedOutput(); err != nil {
			t.Fatalf("render: %v\n%s", err, out)
		}
		cmd := exec.Command("/bin/sh", stub)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + root, "MACHINEADM_PREFIX=" + root,
			"MACHINEADM_FETCH_ATTEMPTS=2", "MACHINEADM_FETCH_DELAY=0", "MACHINEADM_FETCH_TIMEOUT=60",
			"no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1"}
		if os.Getuid() == 0 {
			if err := chownTree(root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		var errBuf bytes.Buffer
		cmd.Stderr, cmd.Stdout = &errBuf, &errBuf
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("stub did not finish in 2 min:\n%s", errBuf.String())
		}
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return root, errBuf.String(), code
	}

	// The release signature: verified, installed, run.
	root, stderr, _ := run("/machineadm.sig")
	installed, err := os.ReadFile(filepath.Join(root, "usr/local/bin/machineadm"))
	if err != nil || !bytes.Equal(installed, agent) {
		t.Errorf("the stub did not install the release agent (%v):\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "machineadm-stub: running ") {
		t.Errorf("the stub did not run the agent:\n%s", stderr)
	}
	// A second key's signature: refused before anything is installed.
	root, stderr, code := run("/other.sig")
	if code == 0 || !strings.Contains(stderr, "signature does not verify") {
		t.Errorf("second key: exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "usr/local/bin/machineadm")); !os.IsNotExist(err) {
		t.Errorf("second key: the agent was installed (%v)", err)
	}
	if hits["/other.sig"] == 0 || hits["/machineadm.sig"] == 0 {
		t.Errorf("signatures fetched: %v", hits)
	}
}

func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func readSigned(t *testing.T, dist, name string) (msg, sig []byte) {
	t.Helper()
	msg, err := os.ReadFile(filepath.Join(dist, name))
	if err != nil {
		t.Fatal(err)
	}
	if sig, err = os.ReadFile(filepath.Join(dist, name+SigSuffix)); err != nil {
		t.Fatal(err)
	}
	return msg, sig
}

// otherSigner is a second ECDSA P-256 key, not the release's.
func otherSigner(t *testing.T) signature.SignerVerifier {
	t.Helper()
	key, _ := writeKey(t, t.TempDir(), "other", "ecdsa")
	s, err := loadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
