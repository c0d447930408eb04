package main

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	spdxjson "github.com/spdx/tools-golang/json"
)

var testEpoch = time.Unix(1796112476, 0).UTC()

// writeKey writes a new private key of the given kind as PEM (mode 0600)
// and its public key as PKIX PEM; it returns both paths.
func writeKey(t *testing.T, dir, name, kind string) (priv, pub string) {
	t.Helper()
	var key any
	var der []byte
	var err error
	blockType := "PRIVATE KEY"
	switch kind {
	case "ecdsa":
		k, e := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if e != nil {
			t.Fatal(e)
		}
		key = k
		der, err = x509.MarshalECPrivateKey(k) // SEC 1, as `openssl ecparam -genkey` writes
		blockType = "EC PRIVATE KEY"
	case "rsa":
		k, e := rsa.GenerateKey(rand.Reader, 2048)
		if e != nil {
			t.Fatal(e)
		}
		key = k
		der, err = x509.MarshalPKCS8PrivateKey(k)
	case "ed25519":
		_, k, e := ed25519.GenerateKey(rand.Reader)
		if e != nil {
			t.Fatal(e)
		}
		key = k
		der, err = x509.MarshalPKCS8PrivateKey(k)
	}
	if err != nil {
		t.Fatal(err)
	}
	priv = filepath.Join(dir, name+".pem")
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	pub = filepath.Join(dir, name+".pub")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// opensslVerify runs `openssl dgst -sha256 -verify PUB -signature DER MSG`
// on the base64-decoded signature sig and reports whether it verified.
func opensslVerify(t *testing.T, pub string, sig, msg []byte) bool {
	t.Helper()
	ossl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed (hack/install-deps.sh installs it)")
	}
	dir := t.TempDir()
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sig)))
	if err != nil {
		t.Fatal(err)
	}
	sigPath, msgPath := filepath.Join(dir, "x.sig.der"), filepath.Join(dir, "x")
	if err := os.WriteFile(sigPath, der, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(msgPath, msg, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ossl, "dgst", "-sha256", "-verify", pub, "-signature", sigPath, msgPath).CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
		return false
	}
	if !strings.Contains(string(out), "Verified OK") {
		t.Fatalf("openssl exited 0 without \"Verified OK\": %s", out)
	}
	return true
}

func TestSignVerify(t *testing.T) {
	dir := t.TempDir()
	msg := []byte("machineadm agent bytes\n")
	for _, kind := range []string{"ecdsa", "rsa"} {
		t.Run(kind, func(t *testing.T) {
			key, pub := writeKey(t, dir, kind, kind)
			otherKey, otherPub := writeKey(t, dir, kind+"-other", kind)
			sv, err := loadSigner(key)
			if err != nil {
				t.Fatal(err)
			}
			sig, err := Sign(sv, msg)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsAny(sig, "\n\r ") {
				t.Errorf("signature %q holds white space", sig)
			}
			v, err := signature.LoadVerifierFromPEMFile(pub, crypto.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(v, sig, msg); err != nil {
				t.Errorf("sigstore: own signature refused: %v", err)
			}
			if err := Verify(v, sig, append(msg, 'x')); err == nil {
				t.Error("sigstore: signature accepted for other bytes")
			}
			if !opensslVerify(t, pub, sig, msg) {
				t.Error("openssl: own signature refused")
			}
			other, err := loadSigner(otherKey)
			if err != nil {
				t.Fatal(err)
			}
			otherSig, err := Sign(other, msg)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(v, otherSig, msg); err == nil {
				t.Error("sigstore: a second key's signature was accepted")
			}
			if opensslVerify(t, pub, otherSig, msg) {
				t.Error("openssl: a second key's signature was accepted")
			}
			if !opensslVerify(t, otherPub, otherSig, msg) {
				t.Error("openssl: the second key's own signature refused (the refusal above proves nothing)")
			}
		})
	}
}

func TestLoadSignerRefuses(t *testing.T) {
	dir := t.TempDir()
	ed, _ := writeKey(t, dir, "ed", "ed25519")
	if _, err := loadSigner(ed); err == nil || !strings.Contains(err.Error(), "ECDSA") {
		t.Errorf("ed25519 key: err = %v, want a refusal naming ECDSA", err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSigner(junk); err == nil {
		t.Error("junk key accepted")
	}
	ec, _ := writeKey(t, dir, "ec", "ecdsa")
	if err := checkKeyFile(ec); err != nil {
		t.Errorf("mode 0600 key refused: %v", err)
	}
	if err := os.Chmod(ec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkKeyFile(ec); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key: err = %v, want a refusal", err)
	}
}

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	key, _ := writeKey(t, dir, "k", "ecdsa")
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b.File), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ok := []string{"-dist", dir, "-version", "v1.2.3-rc.1", "-source-date-epoch", "1796112476", "-key", key}
	cfg, err := parseFlags(ok)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Epoch.Equal(testEpoch) || cfg.Version != "v1.2.3-rc.1" {
		t.Errorf("cfg = %+v", cfg)
	}
	bad := map[string][]string{
		"-version":           {"-dist", dir, "-version", "b806156", "-source-date-epoch", "1796112476", "-key", key},
		"v01":                {"-dist", dir, "-version", "v01.2.3", "-source-date-epoch", "1796112476", "-key", key},
		"-source-date-epoch": {"-dist", dir, "-version", "v1.2.3", "-source-date-epoch", "", "-key", key},
		"1980 or later":      {"-dist", dir, "-version", "v1.2.3", "-source-date-epoch", "5", "-key", key},
		"-key: required":     {"-dist", dir, "-version", "v1.2.3", "-source-date-epoch", "1796112476"},
		"binary missing":     {"-dist", t.TempDir(), "-version", "v1.2.3", "-source-date-epoch", "1796112476", "-key", key},
	}
	for want, args := range bad {
		_, err := parseFlags(args)
		if _, isUsage := err.(*usageError); !isUsage || !strings.Contains(err.Error(), strings.TrimPrefix(want, "v01")) {
			t.Errorf("%q: err = %v, want a usage error containing %q", args, err, want)
		}
	}
}

func TestWriteZipDeterministic(t *testing.T) {
	entries := []zipEntry{
		{Name: "unattend.xml", Mode: 0o644, Data: []byte("<x/>")},
		{Name: "machineadm.exe", Mode: 0o755, Data: bytes.Repeat([]byte("MZ"), 1000)},
		{Name: "firstboot.ps1", Mode: 0o644, Data: []byte("#ps1")},
	}
	a, err := writeZip(entries, testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	reversed := []zipEntry{entries[2], entries[1], entries[0]}
	b, err := writeZip(reversed, testEpoch.In(time.FixedZone("X", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same entries in another order (or the same time in another zone) gave other bytes")
	}
	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(testEpoch) {
			t.Errorf("%s: modified %v, want %v", f.Name, f.Modified, testEpoch)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		for _, e := range entries {
			if e.Name == f.Name && (!bytes.Equal(e.Data, data) || f.Mode().Perm() != e.Mode) {
				t.Errorf("%s: content or mode %v differs", f.Name, f.Mode())
			}
		}
	}
	if got := strings.Join(names, ","); got != "firstboot.ps1,machineadm.exe,unattend.xml" {
		t.Errorf("names = %s, want sorted", got)
	}
	if _, err := writeZip(append(entries, entries[0]), testEpoch); err == nil {
		t.Error("a duplicate name was accepted")
	}
}

func TestSumsText(t *testing.T) {
	dir := t.TempDir()
	for n, c := range map[string]string{"b.deb": "bb", "a-bin": "aa"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sumsText(dir, []string{"b.deb", "a-bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := "961b6dd3ede3cb8ecbaacbd68de040cd78eb2ed5889130cceb4c49268ea4d506  a-bin\n" +
		"3b64db95cb55c763391c707108489ae18b4112d783300de38e033b4c98c3deaf  b.deb\n"
	if string(got) != want {
		t.Errorf("sums:\n%s\nwant:\n%s", got, want)
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		if err := os.WriteFile(filepath.Join(dir, SumsFile), got, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sha256sum", "--check", "--strict", SumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum --check: %v\n%s", err, out)
		}
	}
	if _, err := sumsText(dir, []string{"missing"}); err == nil {
		t.Error("a missing file was summed")
	}
}

func TestPackagedUnit(t *testing.T) {
	unit, err := os.ReadFile("../../contrib/systemd/machineadm.service")
	if err != nil {
		t.Fatal(err)
	}
	got, err := packagedUnit(unit)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("\nExecStart=/usr/bin/machineadm bootstrap -f /etc/machineadm/spec.yaml\n")) ||
		bytes.Contains(got, []byte(unitAgentPath)) {
		t.Errorf("packaged unit:\n%s", got)
	}
	for _, bad := range []string{
		"[Service]\nExecStart=/usr/local/bin/machineadm bootstrap\n",
		"[Service]\nExecStart=/opt/bin/machineadm a\nExecStart=/opt/bin/machineadm b\n",
	} {
		if _, err := packagedUnit([]byte(bad)); err == nil {
			t.Errorf("unit %q accepted", bad)
		}
	}
}

func TestBuildSBOM(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok || len(bi.Deps) == 0 {
		t.Fatal("the test binary has no build information")
	}
	bin := []byte("binary bytes")
	doc, err := BuildSBOM(bi, "machineadm-linux-amd64", bin, "v1.2.3", testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := spdxjson.Write(doc, &a); err != nil {
		t.Fatal(err)
	}
	doc2, _ := BuildSBOM(bi, "machineadm-linux-amd64", bin, "v1.2.3", testEpoch)
	if err := spdxjson.Write(doc2, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two SBOMs of the same input differ")
	}
	back, err := spdxjson.Read(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatalf("the SBOM does not read back as SPDX JSON: %v", err)
	}
	if back.SPDXVersion != "SPDX-2.3" || back.CreationInfo.Created != "2026-12-01T08:07:56Z" {
		t.Errorf("version %s created %s", back.SPDXVersion, back.CreationInfo.Created)
	}
	// Every dependency, with its version and go.sum hash.
	byName := map[string]string{}
	for _, p := range back.Packages {
		byName[p.PackageName] = p.PackageVersion + " " + p.PackageComment
	}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		got, ok := byName[m.Path]
		if !ok || !strings.HasPrefix(got, m.Version+" ") || (m.Sum != "" && !strings.Contains(got, m.Sum)) {
			t.Errorf("module %s %s %s: SBOM has %q", m.Path, m.Version, m.Sum, got)
		}
	}
	if len(back.Packages) != len(bi.Deps)+2 || len(back.Relationships) != len(bi.Deps)+2 {
		t.Errorf("%d packages, %d relationships for %d modules", len(back.Packages), len(back.Relationships), len(bi.Deps))
	}
	root := back.Packages[0]
	if sum := sha256.Sum256(bin); root.PackageChecksums[0].Value != hex.EncodeToString(sum[:]) || root.PackageVersion != "v1.2.3" {
		t.Errorf("binary checksum %v", root.PackageChecksums)
	}
}

func TestModulePackage(t *testing.T) {
	p, err := modulePackage(&debug.Module{Path: "k8s.io/api", Version: "v0.0.0",
		Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.37.2", Sum: "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}})
	if err != nil {
		t.Fatal(err)
	}
	if p.PackageVersion != "v0.37.2" || !strings.Contains(p.PackageComment, "Replaces k8s.io/api@v0.0.0") ||
		p.PackageChecksums[0].Value != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" ||
		p.PackageDownloadLocation != "https://proxy.golang.org/k8s.io/api/@v/v0.37.2.zip" {
		t.Errorf("replaced module: %+v %v", p, p.PackageChecksums)
	}
	p, err = modulePackage(&debug.Module{Path: "github.com/Azure/go-ansiterm", Version: "v0.0.0-2025", Sum: "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="})
	if err != nil || p.PackageDownloadLocation != "https://proxy.golang.org/github.com/!azure/go-ansiterm/@v/v0.0.0-2025.zip" {
		t.Errorf("case-encoded proxy URL: %v %v", p.PackageDownloadLocation, err)
	}
	if _, err := modulePackage(&debug.Module{Path: "x", Version: "v1.0.0", Sum: "h1:short"}); err == nil {
		t.Error("a malformed sum was accepted")
	}
	p, err = modulePackage(&debug.Module{Path: "x", Version: "v1", Replace: &debug.Module{Path: "../x"}})
	if err != nil || p.PackageVersion != noAssertion || p.PackageChecksums != nil {
		t.Errorf("local replacement: %+v %v", p, err)
	}
}

// TestAgentsOnly: -agents-only needs no version or source date and writes
// exactly what the controller image serves: SHA256SUMS of the three
// binaries, a verifying signature for each and for SHA256SUMS, and the
// public key; nothing else.
func TestAgentsOnly(t *testing.T) {
	dir := t.TempDir()
	key, pub := writeKey(t, t.TempDir(), "k", "ecdsa")
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b.File), []byte("build "+b.File), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := parseFlags([]string{"-agents-only", "-dist", dir, "-key", key})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(cfg); err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifierFromPEMFile(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{SumsFile, SumsFile + SigSuffix, PublicKeyFile}
	for _, b := range Binaries {
		want = append(want, b.File, b.File+SigSuffix)
		msg, _ := os.ReadFile(filepath.Join(dir, b.File))
		sig, _ := os.ReadFile(filepath.Join(dir, b.File+SigSuffix))
		if err := Verify(v, sig, msg); err != nil {
			t.Errorf("%s: %v", b.File, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		t.Errorf("dist holds %v, want exactly %v", got, want)
	}
	if _, err := parseFlags([]string{"-agents-only", "-dist", dir}); err == nil {
		t.Error("-agents-only without -key accepted")
	}
}
