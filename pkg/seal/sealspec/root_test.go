package sealspec

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/spec"
)

// windowsSpec is a spec.os windows worker whose token and offline-join
// blob are files on drive paths: a Linux build refused to seal it.
const windowsSpec = `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  os: windows
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.example.com:6443
    token: {file: 'C:\ProgramData\machineadm\secrets\token'}
    caCertHashes: ['sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10']
  node: {name: win-node-1}
  host:
    domainJoin:
      domain: corp.example.com
      offlineJoinBlob: {file: 'd:/djoin/win-node-1.txt'}
`

// TestSealWindowsSpecDrivePaths seals a spec.os windows spec with drive
// paths on any build: each drive path is read from ROOT/<drive>/…, and
// the machine opens both secrets.
func TestSealWindowsSpecDrivePaths(t *testing.T) {
	root := t.TempDir()
	const blob = "ARAAAAAAAAAAAAAAAAAAAAAA-djoin-blob"
	write := func(rel, v string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("C/ProgramData/machineadm/secrets/token", token+"\n")
	write("D/djoin/win-node-1.txt", blob)
	id, idFile := identity(t, seal.HPKESuiteP384)
	sealed, err := SealSpec([]byte(windowsSpec), SealOptions{Recipients: []string{id.Recipient()}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sealed.Items, " "); got != "spec.host.domainJoin.offlineJoinBlob spec.join.token" {
		t.Errorf("items %s", got)
	}
	if strings.Contains(string(sealed.File), token) || strings.Contains(string(sealed.File), blob) {
		t.Fatal("the sealed file holds a secret")
	}
	clearSpec, env, err := seal.Split(sealed.File)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := spec.Load(clearSpec, "sealed")
	if err != nil {
		t.Fatal(err)
	}
	cfg := loaded.Config
	if _, err := Unseal(cfg, env, UnsealOptions{IdentityFile: idFile, NodeName: "win-node-1", ClearSpec: clearSpec}); err != nil {
		t.Fatal(err)
	}
	if cfg.Spec.Join.Token.Value != token || cfg.Spec.Host.DomainJoin.OfflineJoinBlob.Value != blob {
		t.Errorf("secrets not applied: token %t, blob %t", cfg.Spec.Join.Token.Value == token, cfg.Spec.Host.DomainJoin.OfflineJoinBlob.Value == blob)
	}
}

// TestSealRootMapping covers sealRoot.resolve: where each machine path of
// a spec is read on the sealing host.
func TestSealRootMapping(t *testing.T) {
	dir := t.TempDir()
	win := sealRoot{dir: dir, os: machineadm.OSWindows}
	lin := sealRoot{dir: dir, os: machineadm.OSLinux}
	cases := []struct {
		root sealRoot
		in   string
		want string // relative to dir; "" for an error
	}{
		{win, `C:\ProgramData\machineadm\token`, "C/ProgramData/machineadm/token"},
		{win, `c:/ProgramData/x`, "C/ProgramData/x"},
		{win, `E:\keys\blob`, "E/keys/blob"},
		{win, `/etc/machineadm/secrets/token`, "C/etc/machineadm/secrets/token"}, // the system drive
		{win, `C:relative`, ""},
		{win, `C:\ProgramData\..\..\x`, ""},
		{lin, `/etc/machineadm/secrets/token`, "etc/machineadm/secrets/token"},
		{lin, `C:\ProgramData\x`, ""}, // no drives on Linux
	}
	for _, c := range cases {
		got, err := c.root.resolve(c.in)
		if c.want == "" {
			if !errors.Is(err, files.ErrEscapesRoot) {
				t.Errorf("%s %s: got %q, %v; want ErrEscapesRoot", c.root.os, c.in, got, err)
			}
			continue
		}
		if want := filepath.Join(dir, filepath.FromSlash(c.want)); err != nil || got != want {
			t.Errorf("%s %s: got %q, %v; want %q", c.root.os, c.in, got, err, want)
		}
	}
	// The root of a drive of the sealing host (Windows' default "/") reads
	// each drive path from that drive itself.
	if runtime.GOOS == "windows" {
		if got := (sealRoot{dir: `C:\`, os: machineadm.OSWindows}).driveDir("D"); got != `D:\` {
			t.Errorf("drive root: got %q", got)
		}
	} else if got := (sealRoot{dir: "/", os: machineadm.OSWindows}).driveDir("C"); got != "/C" {
		t.Errorf("root / on %s: got %q, want /C", runtime.GOOS, got)
	}
}
