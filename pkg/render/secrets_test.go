package render

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// testKeyPEM looks like a PEM private key to the detector; it is not a key.
const testKeyPEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIJ0notarealkeynotarealkeynotarealkey\n-----END EC PRIVATE KEY-----\n"

func TestInlineSecrets(t *testing.T) {
	gz := gzipBase64([]byte("users:\n- name: admin\n  user:\n    client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRF\n"))
	spec := []byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: ControlPlane
  action: Join
  kubernetes: {version: v1.37.2, controlPlaneEndpoint: "cp.demo.example:6443"}
  controlPlane:
    certificateKey: {value: "` + strings.Repeat("ab", 32) + `"}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {value: abcdef.0123456789abcdef}
    caCertHashes: ["sha256:` + strings.Repeat("0", 64) + `"]
  host:
    files:
      - path: /etc/demo/key.pem
        content: ` + quoteYAML(testKeyPEM) + `
      - path: /etc/demo/key.b64
        encoding: base64
        content: ` + base64.StdEncoding.EncodeToString([]byte(testKeyPEM)) + `
      - path: /etc/demo/kubeconfig
        encoding: gzip+base64
        content: ` + gz + `
      - path: /etc/demo/join.sh
        content: "kubeadm join --token abcdef.0123456789abcdef"
      - path: /etc/demo/harmless.txt
        content: "-----BEGIN CERTIFICATE-----\nnot secret\n"
    containerd:
      registries:
        - host: registry.demo.example
          mirrors:
            - url: https://mirror.demo.example
              clientCert: "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n"
              clientKey: ` + quoteYAML(testKeyPEM) + `
`)
	cfg := loadSpec(t, spec)
	got := InlineSecrets(cfg)
	// In the order of machineadm.SecretFields (the types' field order).
	want := []string{
		"spec.controlPlane.certificateKey.value: certificate key",
		"spec.join.token.value: bootstrap token",
		"spec.host.files[0].content: PEM private key in /etc/demo/key.pem",
		"spec.host.files[1].content: PEM private key in /etc/demo/key.b64",
		"spec.host.files[2].content: kubeconfig credential in /etc/demo/kubeconfig",
		"spec.host.files[3].content: bootstrap token in /etc/demo/join.sh",
		"spec.host.containerd.registries[0].mirrors[0].clientKey: private key",
	}
	if !slices.Equal(got, want) {
		t.Errorf("InlineSecrets:\n got %q\nwant %q", got, want)
	}

	// Render refuses such a spec in every format, says what to do instead,
	// and never echoes a secret.
	for _, f := range Formats {
		_, err := Render(spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
		var se *InlineSecretsError
		if !errors.As(err, &se) {
			t.Fatalf("%s: err = %v, want *InlineSecretsError", f, err)
		}
		msg := err.Error()
		for _, part := range []string{"spec.join.token.value", "file: /etc/machineadm/secrets/bootstrap-token", "--payload-url", "--insecure-inline-secrets"} {
			if !strings.Contains(msg, part) {
				t.Errorf("%s: message lacks %q:\n%s", f, part, msg)
			}
		}
		if strings.Contains(msg, "0123456789abcdef") || strings.Contains(msg, "notarealkey") {
			t.Errorf("%s: the message shows a secret:\n%s", f, msg)
		}
		// --insecure-inline-secrets renders it; so does a payload URL, which
		// keeps the spec out of the user data.
		mustRender(t, spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, AllowInlineSecrets: true})
		mustRender(t, spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Payload: &PayloadSource{URL: testPayloadURL, SHA256: sha256Hex(spec)}})
	}
}

func TestInlineSecretsNoneInExamples(t *testing.T) {
	for _, name := range []string{"worker", "control-plane-init", "control-plane-join"} {
		_, cfg := loadExample(t, name)
		if got := InlineSecrets(cfg); got != nil {
			t.Errorf("%s: %q", name, got)
		}
	}
	spec := []byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  controlPlane:
    bootstrapTokens:
      - token: {file: /etc/machineadm/secrets/t1}
      - token: {value: abcdef.0123456789abcdef}
`)
	if got := InlineSecrets(loadSpec(t, spec)); !slices.Equal(got, []string{"spec.controlPlane.bootstrapTokens[1].token.value: bootstrap token"}) {
		t.Errorf("bootstrap tokens: %q", got)
	}
}

func quoteYAML(s string) string {
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}

// Credentials in URLs and a registry's own client key are inline secrets
// too; the refusal names the fields and never the password.
func TestInlineSecretsURLCredentialsAndRegistryKey(t *testing.T) {
	const password = "pr0xy-s3cret-pass"
	spec := []byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  action: Join
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:` + strings.Repeat("0", 64) + `"]
  host:
    files:
      - path: /opt/blob
        source: {url: "https://fetch:` + password + `@files.demo.example/blob", sha256: ` + strings.Repeat("a", 64) + `}
    containerd:
      proxy:
        httpProxy: "http://user:` + password + `@proxy.demo.example:3128"
        httpsProxy: "socks5://user:` + password + `@proxy.demo.example:1080"
        noProxy: "10.0.0.0/8"
      registries:
        - host: registry.demo.example
          server: "https://robot:` + password + `@registry.demo.example"
          clientCert: "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n"
          clientKey: ` + quoteYAML(testKeyPEM) + `
          mirrors:
            - url: https://mirror.demo.example
  report:
    url: "https://reporter:` + password + `@reports.demo.example/r"
`)
	cfg := loadSpec(t, spec)
	got := InlineSecrets(cfg)
	want := []string{
		"spec.host.files[0].source.url: credentials in the URL",
		"spec.host.containerd.registries[0].server: credentials in the URL",
		"spec.host.containerd.registries[0].clientKey: private key",
		"spec.host.containerd.proxy.httpProxy: credentials in the URL",
		"spec.host.containerd.proxy.httpsProxy: credentials in the URL",
		"spec.report.url: credentials in the URL",
	}
	if !slices.Equal(got, want) {
		t.Errorf("InlineSecrets:\n got %q\nwant %q", got, want)
	}
	for _, f := range Formats {
		_, err := Render(spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
		var se *InlineSecretsError
		if !errors.As(err, &se) {
			t.Fatalf("%s: err = %v, want *InlineSecretsError", f, err)
		}
		if msg := err.Error(); strings.Contains(msg, password) || strings.Contains(msg, "notarealkey") {
			t.Errorf("%s: the message shows a secret:\n%s", f, msg)
		}
		mustRender(t, spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, AllowInlineSecrets: true})
	}
}

// TestInlineSecretsGzipBomb: content that inflates past
// machineadm.MaxContentBytes is not inflated without bound; its raw text
// is searched instead (validation refuses such a spec before render).
func TestInlineSecretsGzipBomb(t *testing.T) {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, machineadm.MaxContentBytes+1))
	_ = zw.Close()
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Host: machineadm.Host{Files: []machineadm.File{
		{Path: "/etc/bomb", Encoding: machineadm.EncodingGzipBase64, Content: base64.StdEncoding.EncodeToString(b.Bytes())},
	}}}}
	if got := InlineSecrets(cfg); got != nil {
		t.Errorf("InlineSecrets = %q, want none", got)
	}
}
