package sealspec

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/seal"
)

// Sealing from files in memory (SealOptions.Files) seals the same items
// into the same clear spec as sealing from a root directory holding them,
// and a file it does not hold is missing as one absent from the root is.
func TestSealFromFilesInMemory(t *testing.T) {
	root := machineRoot(t, true)
	mem := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		mem["/"+filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := identity(t, seal.HPKESuiteP384)
	r := []string{id.Recipient()}
	fromRoot, err := SealSpec(example(t, "control-plane-init.yaml"), SealOptions{Recipients: r, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	fromMem, err := SealSpec(example(t, "control-plane-init.yaml"), SealOptions{Recipients: r, Root: t.TempDir(), Files: mem})
	if err != nil {
		t.Fatal(err)
	}
	clearRoot, _, _ := seal.Split(fromRoot.File)
	clearMem, _, _ := seal.Split(fromMem.File)
	if !bytes.Equal(clearRoot, clearMem) || strings.Join(fromRoot.Items, " ") != strings.Join(fromMem.Items, " ") {
		t.Fatalf("items %v and %v, clear specs equal: %v", fromRoot.Items, fromMem.Items, bytes.Equal(clearRoot, clearMem))
	}
	for _, s := range []string{token, certKey, string(mem["/etc/machineadm/pki/ca.key"])} {
		for _, f := range secretForms(s) {
			if bytes.Contains(fromMem.File, []byte(f)) {
				t.Fatal("the sealed file holds a secret")
			}
		}
	}
	delete(mem, "/etc/machineadm/secrets/bootstrap-token")
	if _, err := SealSpec(example(t, "worker.yaml"), SealOptions{Recipients: r, Files: mem}); err == nil || !strings.Contains(err.Error(), "spec.join.token.file") {
		t.Fatalf("a token file not in Files: %v", err)
	}
	mem["/etc/machineadm/secrets/bootstrap-token"] = bytes.Repeat([]byte("a"), 64<<10+1)
	if _, err := SealSpec(example(t, "worker.yaml"), SealOptions{Recipients: r, Files: mem}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a token file over the size limit: %v", err)
	}
}

// Files are found by the machine's path as the spec names it: cleaned,
// and on a spec.os windows machine on its drive, C when it names none.
func TestMemKey(t *testing.T) {
	for _, tc := range []struct {
		os      machineadm.OS
		in, out string
	}{
		{machineadm.OSLinux, "/etc/x/../y//z", "/etc/y/z"},
		{machineadm.OSWindows, `D:\x\..\y`, "D:/y"},
		{machineadm.OSWindows, `d:\y`, "D:/y"},
		{machineadm.OSWindows, "/run/a", "C:/run/a"},
		{machineadm.OSWindows, `\run\a`, "C:/run/a"},
	} {
		if got, err := memKey(tc.os, tc.in); err != nil || got != tc.out {
			t.Errorf("memKey(%s, %q) = %q, %v; want %q", tc.os, tc.in, got, err, tc.out)
		}
	}
	for _, p := range []string{"etc/x", `D:x`} {
		os := machineadm.OSLinux
		if strings.Contains(p, ":") {
			os = machineadm.OSWindows
		}
		if _, err := memKey(os, p); !errors.Is(err, files.ErrEscapesRoot) {
			t.Errorf("memKey(%q): %v, want ErrEscapesRoot", p, err)
		}
	}
}
