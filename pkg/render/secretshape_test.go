package render

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// workerWith is the worker example with extra YAML under spec.host and
// spec.node.kubelet.
func workerWith(host, kubelet string) []byte {
	return []byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:` + strings.Repeat("0", 64) + `"]
  node:
    kubelet:
` + kubelet + `
  host:
` + host)
}

// TestInlineSecretShapes: each secret shape the review found rendered into
// user data is refused, by field, in every format, and rendered with
// --insecure-inline-secrets; none of them was found before the detector
// was shared and extended.
func TestInlineSecretShapes(t *testing.T) {
	b64PEM := base64.StdEncoding.EncodeToString([]byte(testKeyPEM))
	const jsonKubeconfig = `{"apiVersion":"v1","kind":"Config","users":[{"name":"admin","user":{"client-key-data":"LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUowbm90YXJlYWxrZXk="}}]}`
	const jsonToken = `{"users":[{"name":"admin","user":{"token":"s3cr3t-t0ken-value-0123456789"}}]}`
	const pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGNotAKeyAtAll\n-----END PGP PRIVATE KEY BLOCK-----\n"
	const patch = "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"registry.demo.example\".auth]\n  username = \"robot\"\n  password = \"hunter2-robot\"\n"
	noKubelet := "      config: {failCgroupV1: false}"
	for _, c := range []struct {
		name, host, kubelet, want string
	}{
		{"presigned S3 source.url", `    files:
      - path: /opt/blob
        source: {url: "https://bucket.s3.amazonaws.com/blob?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101&X-Amz-Signature=abc123", sha256: ` + strings.Repeat("a", 64) + `}`, noKubelet,
			`spec.host.files[0].source.url: a credential in the URL's query (parameter "X-Amz-Credential")`},
		{"presigned GCS source.url", `    files:
      - path: /opt/blob
        source: {url: "https://storage.googleapis.com/b/o?X-Goog-Signature=abc123", sha256: ` + strings.Repeat("a", 64) + `}`, noKubelet,
			`spec.host.files[0].source.url: a credential in the URL's query (parameter "X-Goog-Signature")`},
		{"Azure SAS source.url", `    files:
      - path: /opt/blob
        source: {url: "https://acct.blob.core.windows.net/c/blob?sv=2024-01-01&sp=r&sig=abc%3D", sha256: ` + strings.Repeat("a", 64) + `}`, noKubelet,
			`spec.host.files[0].source.url: a credential in the URL's query (parameter "sig")`},
		{"token query in report.url", "    kernelModules: [overlay]\n  report:\n    url: \"https://reports.demo.example/r?access_token=abc\"", noKubelet,
			`spec.report.url: a credential in the URL's query (parameter "access_token")`},
		{"JSON kubeconfig client-key-data", `    files:
      - path: /etc/demo/kubeconfig.json
        content: '` + jsonKubeconfig + `'`, noKubelet,
			"spec.host.files[0].content: kubeconfig credential in /etc/demo/kubeconfig.json"},
		{"JSON kubeconfig token", `    files:
      - path: /etc/demo/kubeconfig.json
        content: '` + jsonToken + `'`, noKubelet,
			"spec.host.files[0].content: kubeconfig credential in /etc/demo/kubeconfig.json"},
		{"PGP private key", `    files:
      - path: /etc/demo/key.asc
        content: ` + quoteYAML(pgp), noKubelet,
			"spec.host.files[0].content: PGP private key in /etc/demo/key.asc"},
		{"base64-wrapped PEM key in a plain file", `    files:
      - path: /etc/demo/key.txt
        content: "key=` + b64PEM + `\n"`, noKubelet,
			"spec.host.files[0].content: base64-encoded PEM private key in /etc/demo/key.txt"},
		{"registry password in configPatch", "    containerd:\n      configPatch: |\n        " + strings.ReplaceAll(strings.TrimSuffix(patch, "\n"), "\n", "\n        "), noKubelet,
			"spec.host.containerd.configPatch: password"},
		{"bootstrap token in kubelet extraArgs", "    kernelModules: [overlay]", "      extraArgs: [{name: node-labels, value: a=b}, {name: bootstrap-token, value: abcdef.0123456789abcdef}]",
			"spec.node.kubelet.extraArgs[1].value: bootstrap token (flag bootstrap-token)"},
		{"token flag in kubelet extraArgs", "    kernelModules: [overlay]", "      extraArgs: [{name: token, value: 8f2c1e9a7b6d5c4e3f2a1b0c}]",
			"spec.node.kubelet.extraArgs[0].value: a credential in the flag's value (flag token)"},
		{"JWT in kubelet config", "    kernelModules: [overlay]", "      config: {failCgroupV1: false, staticPodURLHeader: {Authorization: [\"Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ\"]}}",
			"spec.node.kubelet.config.staticPodURLHeader.Authorization[0]: JSON Web Token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := workerWith(c.host, c.kubelet)
			cfg := loadSpec(t, spec)
			got := InlineSecrets(cfg)
			if len(got) != 1 || got[0] != c.want {
				t.Fatalf("InlineSecrets = %q, want [%q]", got, c.want)
			}
			for _, f := range Formats {
				_, err := Render(spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
				var se *InlineSecretsError
				if !errors.As(err, &se) {
					t.Fatalf("%s: err = %v, want *InlineSecretsError", f, err)
				}
				for _, secret := range []string{"abc123", "hunter2", "s3cr3t", "8f2c1e9a", "0123456789abcdef", "eyJhbGci", "lQOYB"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("%s: the refusal quotes the secret: %v", f, err)
					}
				}
				mustRender(t, spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, AllowInlineSecrets: true})
			}
		})
	}
}

// TestOptionURLCredentials: credentials in --agent-url, --agent-signature-url
// and --payload-url (user information or a presigned query) would be
// written into user data; render refuses them, naming the flag and never
// the credential, unless --insecure-inline-secrets.
func TestOptionURLCredentials(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := publicPEM(t, ec)
	for _, c := range []struct {
		flag string
		o    Options
	}{
		{"--agent-url", Options{Agent: AgentSource{URL: "https://robot:pa55word@downloads.example.com/m", SHA256: testAgentSHA256}}},
		{"--agent-url", Options{Agent: AgentSource{URL: "https://downloads.example.com/m?X-Amz-Signature=pa55word", SHA256: testAgentSHA256}}},
		{"--agent-signature-url", Options{Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: "https://robot:pa55word@downloads.example.com/m.sig", PublicKey: pub}}},
		{"--agent-signature-url", Options{Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: "https://downloads.example.com/m.sig?sig=pa55word", PublicKey: pub}}},
		{"--payload-url", Options{Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Payload: &PayloadSource{URL: "https://robot:pa55word@specs.example.com/w1.yaml", SHA256: testAgentSHA256}}},
		{"--payload-url", Options{Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Payload: &PayloadSource{URL: "https://specs.example.com/w1.yaml?token=pa55word", SHA256: testAgentSHA256}}},
	} {
		c.o.Format = FormatShell
		_, err := Render(data, cfg, c.o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Flag != c.flag {
			t.Errorf("%s: err = %v, want an OptionError for %s", c.flag, err, c.flag)
			continue
		}
		if strings.Contains(err.Error(), "pa55word") {
			t.Errorf("%s: the refusal quotes the credential: %v", c.flag, err)
		}
		c.o.AllowInlineSecrets = true
		mustRender(t, data, cfg, c.o)
	}
	// A malformed URL with a credential is refused without quoting it.
	_, err = Render(data, cfg, Options{Format: FormatShell, Agent: AgentSource{URL: "https://robot:pa55word@downloads.example.com/m m", SHA256: testAgentSHA256}, AllowInlineSecrets: true})
	if err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("malformed URL with a credential: %v", err)
	}
}
