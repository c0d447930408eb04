//go:build unix

package configcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
)

// TestMissingSecretFilesDrivePaths: config validate's check that a spec's
// secret files exist finds a spec.os windows spec's drive paths where seal
// reads them (ROOT/C/...): joined with the whole drive path it warned
// about a file that was there.
func TestMissingSecretFilesDrivePaths(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "C/ProgramData/machineadm/secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "C/ProgramData/machineadm/secrets/token"), []byte("abcdef.0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, _, _, err := session.LoadSpecDoc([]byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  os: windows
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.example.com:6443
    token: {file: 'C:\ProgramData\machineadm\secrets\token'}
    caCertHashes: ['sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10']
  host:
    domainJoin:
      domain: corp.example.com
      offlineJoinBlob: {file: 'D:\djoin.txt'}
`), "win.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range MissingSecretFiles(l.Config, root) {
		got = append(got, w.Field)
	}
	if strings.Join(got, " ") != "spec.host.domainJoin.offlineJoinBlob.file" {
		t.Errorf("warnings for %v, want only the blob (D:, absent)", got)
	}
}

// A secret file path that holds the secret itself (the token pasted into
// the path) is not quoted by the warning that it does not exist.
func TestMissingSecretFilesNeverQuoteASecretPath(t *testing.T) {
	l, _, _, err := session.LoadSpecDoc([]byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.example.com:6443
    token: {file: /etc/abcdef.0123456789abcdzz}
    caCertHashes: ['sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10']
`), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ws := MissingSecretFiles(l.Config, t.TempDir())
	if len(ws) != 1 || ws[0].Field != "spec.join.token.file" || strings.Contains(ws[0].Message, "0123456789abcdzz") {
		t.Fatalf("warnings %v", ws)
	}
}
