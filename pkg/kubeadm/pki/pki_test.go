package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"
)

func TestInitPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	hash, err := InitPKI(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(hash) {
		t.Errorf("hash %q has the wrong shape", hash)
	}
	if again, err := CACertHash(dir); err != nil || again != hash {
		t.Errorf("CACertHash = %q, %v; want %q", again, err, hash)
	}
	for _, f := range CASet {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if filepath.Ext(f) == ".key" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	if !ca.IsCA || ca.Subject.CommonName != "kubernetes" {
		t.Errorf("ca.crt: IsCA=%v CN=%q", ca.IsCA, ca.Subject.CommonName)
	}
	if _, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("default key type is %T, want ECDSA", ca.PublicKey)
	}
	etcdCA := readCert(t, filepath.Join(dir, "etcd", "ca.crt"))
	if etcdCA.Subject.CommonName != "etcd-ca" || !etcdCA.IsCA {
		t.Errorf("etcd/ca.crt CN=%q", etcdCA.Subject.CommonName)
	}

	// Never overwrite an existing CA set.
	if _, err := InitPKI(dir, "", nil); !errors.Is(err, ErrPKIExists) {
		t.Errorf("second InitPKI: %v, want ErrPKIExists", err)
	}
	if again, _ := CACertHash(dir); again != hash {
		t.Error("CA changed after refused overwrite")
	}
}

func TestInitPKIRSA(t *testing.T) {
	dir := t.TempDir()
	if _, err := InitPKI(dir, "RSA-2048", nil); err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	k, ok := ca.PublicKey.(*rsa.PublicKey)
	if !ok || k.N.BitLen() != 2048 {
		t.Errorf("RSA-2048 CA has key %T", ca.PublicKey)
	}
	if _, err := InitPKI(t.TempDir(), "DSA-1024", nil); err == nil {
		t.Error("unknown key type accepted")
	}
}

func TestGenerateToken(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		tok, err := GenerateToken()
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(tok) || seen[tok] {
			t.Fatalf("token %q malformed or repeated", tok)
		}
		seen[tok] = true
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCAFilesAreReadBounded: CACertHash (`pki hash`) and CheckCA (the
// bootstrap's inputs-check) refuse a FIFO in the CA set at once instead of
// waiting for a writer forever, and a file over MaxCAFileSize without
// reading it whole; each error names the file.
func TestCAFilesAreReadBounded(t *testing.T) {
	// within runs f in the background and fails the test when it blocks.
	within := func(t *testing.T, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("reading the CA set blocked")
			return nil
		}
	}
	for _, name := range []string{"ca.crt", "ca.key", "sa.pub", "etcd/ca.crt"} {
		for _, kind := range []string{"fifo", "large"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "pki")
				if _, err := InitPKI(dir, "", nil); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, name)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				want := "not a regular file (a FIFO)"
				if kind == "fifo" {
					testfifo.Make(t, p)
				} else {
					want = "more than the 1048576 allowed"
					if err := os.WriteFile(p, make([]byte, MaxCAFileSize+1), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				checks := map[string]func() error{"CheckCA": func() error { return CheckCA(dir) }}
				if name == "ca.crt" { // the only file the hash reads
					checks["CACertHash"] = func() error { _, err := CACertHash(dir); return err }
				}
				for fn, f := range checks {
					err := within(t, f)
					if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
						t.Errorf("%s: error %v, want %q naming %s", fn, err, want, p)
					}
				}
			})
		}
	}
}

// TestInitPKIRefusesADirectoryInUse: a directory that holds other files is
// left as it is — not made 0700, no etcd/ created, no CA written — since
// `pki init --out /etc` (or /) would lock other users out of it; an
// empty one is used and made 0700.
func TestInitPKIRefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "motd"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InitPKI(dir, "", nil); !errors.Is(err, ErrPKIDirInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("InitPKI into a directory in use: %v, want ErrPKIDirInUse naming it", err)
	}
	entries, _ := os.ReadDir(dir)
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 || len(entries) != 1 {
		t.Errorf("the refused directory changed: mode %v, %d entries", fi.Mode().Perm(), len(entries))
	}
	empty := t.TempDir()
	if err := os.Chmod(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := InitPKI(empty, "", nil); err != nil {
		t.Fatalf("InitPKI into an empty directory: %v", err)
	}
	if fi, _ := os.Stat(empty); fi.Mode().Perm() != 0o700 {
		t.Errorf("empty directory mode %v after InitPKI, want 0700", fi.Mode().Perm())
	}
	// A file where the directory should be: ErrPKINotDir naming its type,
	// the file left as it was.
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InitPKI(file, "", nil); !errors.Is(err, ErrPKINotDir) || !strings.Contains(err.Error(), file+": not a directory (it is a regular file)") {
		t.Fatalf("InitPKI onto a regular file: %v, want ErrPKINotDir naming it", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Error("InitPKI changed the file it was pointed at")
	}
}

// pki init writes the cluster's encryption-at-rest key beside the CA set:
// 0600, the base64 of 32 bytes (an aescbc AES-256 key), and a new one per
// cluster.
func TestInitPKIWritesEncryptionKey(t *testing.T) {
	var keys []string
	for range 2 {
		dir := filepath.Join(t.TempDir(), "pki")
		if _, err := InitPKI(dir, "", nil); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, EncryptionKeyFile)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("pki init wrote no %s: %v", EncryptionKeyFile, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, fi.Mode().Perm())
		}
		data, _ := os.ReadFile(p)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(raw) != 32 {
			t.Errorf("%s: not the base64 of 32 bytes (%d bytes, %v)", p, len(raw), err)
		}
		keys = append(keys, string(data))
	}
	if keys[0] == keys[1] {
		t.Error("two pki init runs made the same encryption key")
	}
}

// WriteEncryptionKey never replaces a key that exists (data in etcd may be
// encrypted with it), nor follows a link planted at the path.
func TestWriteEncryptionKeyNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, EncryptionKeyFile)
	wrote, err := WriteEncryptionKey(p)
	if err != nil || !wrote {
		t.Fatalf("first write: wrote %v, %v", wrote, err)
	}
	first, _ := os.ReadFile(p)
	wrote, err = WriteEncryptionKey(p)
	if err != nil || wrote {
		t.Fatalf("second write: wrote %v, %v; want kept", wrote, err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Error("the existing key was replaced")
	}
	target := filepath.Join(dir, "elsewhere")
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if wrote, err := WriteEncryptionKey(link); wrote || err != nil {
		t.Errorf("write at a dangling link: wrote %v, %v; want left alone", wrote, err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the link was followed")
	}
}

// pkiInitChildEnv makes the test binary one of the concurrent `pki init`
// runs of TestInitPKIConcurrentRunsOneWins: InitPKI of the directory the
// variable names, once the start file beside it exists.
const pkiInitChildEnv = "MACHINEADM_TEST_PKI_INIT_CHILD"

// Runs of pki init into one directory at the same time (processes:
// InitPKI serializes the runs of one process) leave one whole CA set:
// exactly one succeeds, and the hash it printed is the written ca.crt's,
// whose key is the written ca.key. Both checked the directory empty
// before, and kubeadm's writes replaced each other's files: a ca.crt of
// one run beside the ca.key of another.
func TestInitPKIConcurrentRunsOneWins(t *testing.T) {
	if dir := os.Getenv(pkiInitChildEnv); dir != "" {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(dir + ".start"); err == nil {
				break
			}
		}
		hash, err := InitPKI(dir, "", nil)
		if err != nil {
			fmt.Println("REFUSED", err)
			os.Exit(0)
		}
		fmt.Println("HASH", hash)
		os.Exit(0)
	}
	dir := filepath.Join(t.TempDir(), "pki")
	const n = 6
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestInitPKIConcurrentRunsOneWins$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), pkiInitChildEnv+"="+dir)
		cmds[i].Stdout = &outs[i]
		cmds[i].Stderr = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := os.WriteFile(dir+".start", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, outs[i].String())
		}
		out := outs[i].String()
		switch {
		case strings.HasPrefix(out, "HASH "):
			hashes = append(hashes, strings.Fields(out)[1])
		case strings.HasPrefix(out, "REFUSED ") && (strings.Contains(out, ErrPKIDirInUse.Error()) || strings.Contains(out, ErrPKIExists.Error())):
		default:
			t.Errorf("run %d: %s", i, out)
		}
	}
	if len(hashes) != 1 {
		t.Fatalf("%d runs succeeded, want 1: %v", len(hashes), hashes)
	}
	if err := CheckCA(dir); err != nil {
		t.Errorf("the CA set written is not whole: %v", err)
	}
	if h, err := CACertHash(dir); err != nil || h != hashes[0] {
		t.Errorf("ca.crt's hash %s (%v), the winner printed %s", h, err, hashes[0])
	}
	if _, err := os.Lstat(filepath.Join(dir, initClaimFile)); !os.IsNotExist(err) {
		t.Errorf("claim file left behind: %v", err)
	}
}

// A run that finds the key (WriteEncryptionKey reports it kept one) reads
// a whole key, even while another run is writing it: the file was created
// empty and then written, so a run at the same time (or after a crash
// between the two) took an empty key for the cluster's.
func TestWriteEncryptionKeyNeverPartial(t *testing.T) {
	for round := range 20 {
		p := filepath.Join(t.TempDir(), EncryptionKeyFile)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wrote, err := WriteEncryptionKey(p)
				if err != nil {
					errs <- err
					return
				}
				if wrote {
					return
				}
				b, err := os.ReadFile(p)
				if err != nil {
					errs <- err
					return
				}
				if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err != nil || len(k) != 32 {
					errs <- fmt.Errorf("round %d: a kept key of %d bytes read %q", round, len(b), b)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}
