//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The agent from the management cluster (R10): machineadm-controller
// serves the agent builds its image carries (make agents) over HTTPS on
// cp1's host network, and the workload's workers, whose image has no
// agent, download theirs from there (their MachineadmConfigTemplate names
// no agent source).
const (
	// capiAgentPort is machineadm-controller's agent server.
	capiAgentPort = 9446
	// capiAgentSecret holds the agent server's serving certificate.
	capiAgentSecret = "machineadm-agent-tls"
	// capiAgentCertDir is where the Deployment mounts it.
	capiAgentCertDir = "/etc/machineadm-agent-tls"
)

// capiAgentURL is where the workload machines reach the agent server.
var capiAgentURL = "https://" + net.JoinHostPort(cp1.IP, strconv.Itoa(capiAgentPort))

// serveAgents turns on the agent server of machineadm-controller's
// Deployment (container c of d) with the serving certificate from
// capiAgentSecret, and returns that Secret (a self-signed certificate for
// cp1's address, which the rendered data pins as the CA).
func serveAgents(d *appsv1.Deployment, c *corev1.Container) (*unstructured.Unstructured, error) {
	cert, key, err := agentServingCert(net.ParseIP(cp1.IP))
	if err != nil {
		return nil, err
	}
	c.Args = setArg(c.Args, "--agent-bind-address", fmt.Sprintf(":%d", capiAgentPort))
	c.Args = setArg(c.Args, "--agent-url", capiAgentURL)
	c.Args = setArg(c.Args, "--agent-tls-cert-file", capiAgentCertDir+"/tls.crt")
	c.Args = setArg(c.Args, "--agent-tls-key-file", capiAgentCertDir+"/tls.key")
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "agent-tls", MountPath: capiAgentCertDir, ReadOnly: true})
	d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{
		Name: "agent-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: capiAgentSecret}},
	})
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": capiAgentSecret, "namespace": "machineadm-system"},
		"type":     string(corev1.SecretTypeTLS),
		"data":     map[string]any{"tls.crt": b64(cert), "tls.key": b64(key)},
	}}, nil
}

// agentServingCert is a self-signed ECDSA serving certificate for ip.
func agentServingCert(ip net.IP) (cert, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "machineadm-e2e-agent-server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{ip},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// checkAgentDownloads checks that every booted worker got its agent from
// the agent server: its image had none, and its stub's log (cloud-init's
// output) shows the download from capiAgentURL, checked by digest and
// signature before it ran. It returns how many workers it checked.
func (p *nspawnProvider) checkAgentDownloads(t *testing.T) int {
	t.Helper()
	p.mu.Lock()
	var ms []*Machine
	for _, pm := range p.machines {
		if pm.m != nil {
			ms = append(ms, pm.m)
		}
	}
	p.mu.Unlock()
	n := 0
	for _, m := range ms {
		if m.Name == capiCP {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.Root, "var/log/cloud-init-output.log"))
		if err != nil {
			errorf(t, "%s: %v", m.Name, err)
			continue
		}
		want := capiAgentURL + "/agents/machineadm-linux-amd64: attempt 1 of"
		if !strings.Contains(string(b), want) {
			errorf(t, "%s: the stub did not download the agent from the management cluster (%q not in its log):\n%s", m.Name, want, tail(string(b), 15))
			continue
		}
		n++
	}
	return n
}

// servedAgentDigests are the digests SHA256SUMS lists for the builds
// machineadm-controller's image carries (make agents wrote them to
// bin/agents-root/agents, or MACHINEADM_E2E_AGENTS): the workers' data
// pins them, and the leak check must not take them for certificate keys.
func servedAgentDigests(t *testing.T, e *env) []string {
	t.Helper()
	dir := getenv("MACHINEADM_E2E_AGENTS", filepath.Join(e.repo, "bin/agents-root/agents"))
	b, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		fatalf(t, "the agent builds the controller image carries: %v (make image-controller)", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if h, _, ok := strings.Cut(line, "  "); ok {
			out = append(out, h)
		}
	}
	return out
}
