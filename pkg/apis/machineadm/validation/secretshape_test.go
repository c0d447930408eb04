package validation

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// SecretShapeProblem accepts what kubeadm accepts (a certificate key in
// either case of hex), names the shape otherwise and never quotes the
// value.
func TestSecretShapeProblem(t *testing.T) {
	key := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		format, v string
		ok        bool
	}{
		{machineadm.SecretFormatBootstrapToken, "abcdef.0123456789abcdef", true},
		{machineadm.SecretFormatBootstrapToken, "SECRET.0123456789abcdef", false},
		{machineadm.SecretFormatBootstrapToken, "abcdef.0123456789abcdef\n", false},
		{machineadm.SecretFormatCertificateKey, key, true},
		{machineadm.SecretFormatCertificateKey, strings.ToUpper(key), true},
		{machineadm.SecretFormatCertificateKey, key[:62], false},
		{machineadm.SecretFormatCertificateKey, "SECRET" + key[6:], false},
		{machineadm.SecretFormatPassword, "SECRET anything", true},
		{machineadm.SecretFormatPassword, "SECRET p\u00e4ss \u00a0\u3000\u4e2d", true},
		// Line or paragraph separators, a byte-order mark (a file saved by
		// Notepad), zero-width and bidirectional marks, text that is not
		// UTF-8: each joins with another password than the one seen.
		{machineadm.SecretFormatPassword, "SECRET\u2028second", false},
		{machineadm.SecretFormatPassword, "SECRET\u2029second", false},
		{machineadm.SecretFormatPassword, "\ufeffSECRET", false},
		{machineadm.SecretFormatPassword, "SECRET\u200b", false},
		{machineadm.SecretFormatPassword, "SECRET\u202e", false},
		{machineadm.SecretFormatPassword, "SECRET\xe9t\xe9", false},
		{machineadm.SecretFormatPassword, "\xff\xfeS\x00E\x00", false},
		{machineadm.SecretFormatPassword, "", false},
	} {
		p := SecretShapeProblem(tc.format, tc.v)
		if (p == "") != tc.ok || strings.Contains(p, "SECRET") {
			t.Errorf("SecretShapeProblem(%s, %q) = %q, want ok %v", tc.format, tc.v, p, tc.ok)
		}
	}
}

// The secret-shape detector finds each shape the review found in user
// data, and leaves alone what only looks near one.
func TestSecretInText(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEnotakey\n-----END RSA PRIVATE KEY-----\n"
	for _, tc := range []struct{ text, want string }{
		{pem, "PEM private key"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\n", "PEM private key"},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOY\n", "PGP private key"},
		{"PuTTY-User-Key-File-3: ssh-ed25519\n", "PuTTY private key"},
		{"key: " + b64(pem), "base64-encoded PEM private key"},
		{b64("kubeconfig:\n  client-key-data: " + b64(pem)), "base64-encoded kubeconfig credential"},
		{`{"users":[{"user":{"client-key-data":"LS0tLS1CRUdJTiBFQyBQUklWQVRF"}}]}`, "kubeconfig credential"},
		{`{"user": {"token": "0123456789abcdef0123"}}`, "kubeconfig credential"},
		{"users:\n- user:\n    token: 0123456789abcdef0123\n", "kubeconfig credential"},
		{"[x.auth]\n  password = \"hunter22\"\n", "password"},
		{"[x.auth]\n  auth = \"dXNlcjpodW50ZXIy\"\n", "registry credential"},
		{"[x.auth]\n  identitytoken = \"abcdefgh12345\"\n", "registry credential"},
		{"kubeadm join --token abcdef.0123456789abcdef", "bootstrap token"},
		// A credential key in any spelling of its word boundaries, and
		// after a prefix: AWS's INI file, OAuth's client_secret,
		// camelCase JSON.
		{"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "client secret"},
		{`{"client_id": "x", "client_secret": "s3cr3tvalue"}`, "client secret"},
		{`{"clientSecret": "s3cr3tvalue"}`, "client secret"},
		{"registry.password: hunter22\n", "password"},
		{"bootstrap_token: 0123456789abcdef0123\n", "kubeconfig credential"},
		{"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ", "JSON Web Token"},
		{"apiKey: AIzaSyA1234567890abcdefghijklmnopqrstuv", "API key"},
		{"GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz", "API key"},
		{"glpat-0123456789abcdefghij", "API key"},
		{"slack: xoxb-1234567890-abcdefghij", "API key"},
		// Not secrets.
		{"AIza-too-short", ""},
		{"ghp_short", ""},
		{"-----BEGIN CERTIFICATE-----\nMIIB\n", ""},
		{"certificate-authority-data: " + b64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), ""},
		{"tokenFile: /etc/kubernetes/token\n", ""},
		{"token: /var/run/secrets/token\n", ""},
		{"password = \"\"\n", ""},
		{"password: ${REGISTRY_PASSWORD}\n", ""},
		{"auth:\n  mode: Webhook\n", ""},
		{"- --token-auth-file=/etc/tokens.csv\n- --enable-bootstrap-token-auth=true\n", ""},
		{"apiVersion: v1\nkind: Pod\n", ""},
	} {
		if got := SecretInText([]byte(tc.text)); got != tc.want {
			t.Errorf("SecretInText(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestURLCredentials(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://u:p@h.example/x", "credentials in the URL"},
		{"https://token@h.example/x", "credentials in the URL"},
		{"https://b.s3.amazonaws.com/o?X-Amz-Signature=SECRET", `a credential in the URL's query (parameter "X-Amz-Signature")`},
		{"https://b.s3.amazonaws.com/o?x-amz-security-token=SECRET", `a credential in the URL's query (parameter "x-amz-security-token")`},
		{"https://s3.amazonaws.com/b/o?AWSAccessKeyId=A&Expires=1&Signature=SECRET", `a credential in the URL's query (parameter "AWSAccessKeyId")`},
		{"https://storage.googleapis.com/b/o?X-Goog-Signature=SECRET", `a credential in the URL's query (parameter "X-Goog-Signature")`},
		{"https://a.blob.core.windows.net/c/o?sv=2024&sig=SECRET", `a credential in the URL's query (parameter "sig")`},
		{"https://h.example/x?private_token=SECRET", `a credential in the URL's query (parameter "private_token")`},
		{"https://h.example/x?api_key=SECRET", `a credential in the URL's query (parameter "api_key")`},
		{"https://h.example/cb#access_token=SECRET", `a credential in the URL's fragment (parameter "access_token")`},
		{"https://maps.example/x?key=AIzaSyA1234567890abcdefghijklmnopqrstuv", `API key in the URL's query (parameter "key")`},
		{"https://h.example/x?t=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ", `JSON Web Token in the URL's query (parameter "t")`},
		// Where the parameter parser does not look: a pair it skips, a path.
		{"https://maps.example/x?v=1;key=AIzaSyA1234567890abcdefghijklmnopqrstuv", `API key in the URL's query`},
		{"https://maps.example/x?key=AIzaSyA1234567890abcdefghijklmnopqrstuv%zz", `API key in the URL's query`},
		{"https://h.example/raw/ghp_0123456789abcdefghijklmnopqrstuvwxyz/file", `API key in the URL's path`},
		{"https://h.example/hook/xoxb-1234567890-abcdefghij", `API key in the URL's path`},
		{"https://h.example/x#v=1;t=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ", `JSON Web Token in the URL's fragment`},
		{"https://dl.example/v1.37.2/bin/linux/amd64/kubelet", ""},
		{"https://h.example/sha256/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/blob", ""},
		{"https://h.example/x?key=amd64", ""},
		// "name:value" text in a URL is no assignment of a credential.
		{"https://h.example/oauth2/auth:authorize", ""},
		{"https://h.example/x?scope=auth:read-write", ""},
		{"https://h.example/auth=basic/file", ""},
		{"https://h.example/x?version=1&arch=amd64", ""},
		{"https://h.example/x", ""},
		{"http://[::1]:8080/x", ""},
	} {
		got := URLCredentials(tc.url)
		if got != tc.want || strings.Contains(got, "SECRET") {
			t.Errorf("URLCredentials(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestArgSecret(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"token", "8f2c1e9a7b6d5c4e3f2a1b0c", "a credential in the flag's value"},
		{"--client-secret", "s3cr3t-value", "a credential in the flag's value"},
		{"bootstrap-token", "abcdef.0123456789abcdef", "bootstrap token"},
		{"node-labels", "a=b", ""},
		{"token-auth-file", "/etc/tokens.csv", ""},
		{"enable-bootstrap-token-auth", "true", ""},
		{"service-account-max-token-expiration", "48h", ""},
		{"password", "", ""},
	} {
		if got := ArgSecret(tc.name, tc.value); got != tc.want {
			t.Errorf("ArgSecret(%q, %q) = %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}
}

// Validate warns, by field and without the value, about what the
// detector finds where nothing is sealed.
func TestValidateWarnsAboutSecretShapes(t *testing.T) {
	runCases(t, []vcase{
		{name: "registry password in configPatch", base: worker, mutate: func(c *machineadm.MachineBootstrapConfig) {
			if c.Spec.Host.Containerd == nil {
				c.Spec.Host.Containerd = &machineadm.Containerd{}
			}
			c.Spec.Host.Containerd.ConfigPatch = "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".auth]\n  password = \"SECRETpw1\"\n"
		}, warn: []string{"spec.host.containerd.configPatch"}, secret: "SECRETpw1"},
		{name: "token in kubelet extraArgs", base: worker, mutate: func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Node.Kubelet.ExtraArgs = append(c.Spec.Node.Kubelet.ExtraArgs, machineadm.Arg{Name: "token", Value: "SECRET0123456789"})
		}, warn: []string{"spec.node.kubelet.extraArgs[1].value"}, secret: "SECRET0123456789"},
		// Every string of the spec reaches the user data, not only the
		// free-form ones: a token in a label value, a key in a taint.
		{name: "bootstrap token in a node label", base: worker, mutate: func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Node.Labels = map[string]string{"example.com/t": "abcdef.0123456789abcdef"}
		}, warn: []string{"spec.node.labels[example.com/t]"}, secret: "0123456789abcdef"},
	})
}

// TrimSecret drops around a password only the white space a file or a
// block scalar adds (so SecretShapeProblem sees the rest), around other
// secrets all white space.
func TestTrimSecret(t *testing.T) {
	for _, tc := range []struct{ format, v, want string }{
		{machineadm.SecretFormatPassword, "pw\r\n", "pw"},
		{machineadm.SecretFormatPassword, " \tpw \n", "pw"},
		{machineadm.SecretFormatPassword, "pw\u00a0\n", "pw\u00a0"},
		{machineadm.SecretFormatPassword, "\u2028pw\u2029", "\u2028pw\u2029"},
		{machineadm.SecretFormatPassword, "\ufeffpw\r\n", "\ufeffpw"},
		{machineadm.SecretFormatBootstrapToken, "\u00a0abcdef.0123456789abcdef\r\n", "abcdef.0123456789abcdef"},
	} {
		if got := TrimSecret(tc.format, tc.v); got != tc.want {
			t.Errorf("TrimSecret(%s, %q) = %q, want %q", tc.format, tc.v, got, tc.want)
		}
	}
}
