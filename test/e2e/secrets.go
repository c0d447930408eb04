//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// clusterSecrets is what an operator creates before the first machine
// boots, with machineadm's own commands on their workstation (here: the
// host).
type clusterSecrets struct {
	pkiDir  string // `machineadm pki init --out` output on the host
	caHash  string // the sha256: CA cert hash pki init printed
	token   string // `machineadm token generate`
	certKey string // 32 random bytes, hex: the certificate key
	encKey  string // 32 random bytes, base64: the API server's aescbc key
}

// makeSecrets runs `machineadm pki init` and `machineadm token generate` on
// the host and checks the printed CA cert hash against one computed here.
func (e *env) makeSecrets(ctx context.Context, dir string) (clusterSecrets, error) {
	s := clusterSecrets{pkiDir: dir}
	out, err := exec.CommandContext(ctx, e.machineadm, "pki", "init", "--out", dir).Output()
	if err != nil {
		return s, fmt.Errorf("machineadm pki init: %w", exitDetail(err))
	}
	// The hash is the last line; kubeadm's own "[certs] Generating ..."
	// progress lines may come before it.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s.caHash = strings.TrimSpace(lines[len(lines)-1])
	want, err := caCertHash(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return s, err
	}
	if s.caHash != want {
		return s, fmt.Errorf("machineadm pki init printed %q, ca.crt hashes to %q", s.caHash, want)
	}
	out, err = exec.CommandContext(ctx, e.machineadm, "token", "generate").Output()
	if err != nil {
		return s, fmt.Errorf("machineadm token generate: %w", exitDetail(err))
	}
	s.token = strings.TrimSpace(string(out))
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return s, err
	}
	s.certKey = hex.EncodeToString(key)
	enc := make([]byte, 32)
	if _, err := rand.Read(enc); err != nil {
		return s, err
	}
	s.encKey = base64.StdEncoding.EncodeToString(enc)
	return s, nil
}

// caCertHash is kubeadm's CA pin: "sha256:" and the hex SHA-256 of the CA
// certificate's DER SubjectPublicKeyInfo.
func caCertHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return "", fmt.Errorf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func exitDetail(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

// deliver writes the spec and the secrets it refers to into the machine,
// root-owned and 0600, as a secure provisioning channel would: the CA set
// only for an Init, the certificate key only for control-plane nodes.
func deliver(m *Machine, spec *machineadm.MachineBootstrapConfig, s clusterSecrets) error {
	y, err := yaml.Marshal(spec)
	if err != nil {
		return err
	}
	if err := m.WriteFile(machineSpecFile, y, 0o600); err != nil {
		return err
	}
	if spec.Spec.Join != nil || len(specTokens(spec)) > 0 {
		if err := m.WriteFile(machineTokenFile, []byte(s.token+"\n"), 0o600); err != nil {
			return err
		}
	}
	cp := spec.Spec.ControlPlane
	if usesEncryptionKeyFile(spec) {
		if err := m.WriteFile(machineEncryptionKeyFile, []byte(s.encKey+"\n"), 0o600); err != nil {
			return err
		}
	}
	if cp != nil && cp.CertificateKey != nil {
		if err := m.WriteFile(machineCertKeyFile, []byte(s.certKey+"\n"), 0o600); err != nil {
			return err
		}
	}
	if cp != nil && cp.PKI.Dir != "" {
		return filepath.Walk(s.pkiDir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(s.pkiDir, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return m.WriteFile(filepath.Join(cp.PKI.Dir, rel), b, 0o600)
		})
	}
	return nil
}

func specTokens(spec *machineadm.MachineBootstrapConfig) []machineadm.BootstrapToken {
	if spec.Spec.ControlPlane == nil {
		return nil
	}
	return spec.Spec.ControlPlane.BootstrapTokens
}
