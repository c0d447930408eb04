package machineadm

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/fill"
)

// secretName matches Go field names that suggest a secret or a place for
// one: keys, passwords, tokens, credentials, and URLs (user information).
var secretName = regexp.MustCompile(`(?i)key|passw|token|secret|credential|auth|url|proxy|server`)

// notSecret lists fields whose names match secretName but hold no secret,
// by "Type.Field", each with the reason.
var notSecret = map[string]string{
	"LinuxDomainJoin.Keytab":               "a path adcli writes the host keytab to (0600); machineadm never reads the keytab",
	"Taint.Key":                            "a taint's key is public Node metadata",
	"ExternalEtcd.KeyFile":                 "a path; the etcd client key is delivered to the machine and read by kube-apiserver, never by machineadm",
	"Proxy.NoProxy":                        "host names and CIDRs, no credentials",
	"Join.APIServerEndpoint":               "host:port, validation refuses anything else",
	"Kubernetes.ImageRepository":           "a registry prefix without scheme or user information (validated)",
	"LocalEtcd.ServerCertSANs":             "names and IPs of the etcd serving certificate",
	"ControlPlaneBinaries.KubeAPIServer":   "the path of the kube-apiserver binary (validated absolute path)",
	"AuthorizationWebhook.AuthorizedTTL":   "a Go duration (cache lifetime of allowed answers)",
	"AuthorizationWebhook.UnauthorizedTTL": "a Go duration (cache lifetime of denied answers)",
}

// formats are the allowed `secret` tag values of SecretSource fields.
var formats = []string{SecretFormatBootstrapToken, SecretFormatCertificateKey, SecretFormatPassword, SecretFormatOfflineJoinBlob, SecretFormatEncryptionKey, SecretFormatKubeConfig}

// auditSecretFields checks the type tree below t and lists every field
// the walk would not know: a SecretSource without a format tag, a
// `secret` tag with an unknown value or on a field that is not a string
// or list of strings, "file-content" outside File, and a string field
// whose name suggests a secret with neither a tag nor a notSecret entry.
func auditSecretFields(t reflect.Type, allow map[string]string) []string {
	var problems []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[t] || t == secretSourceType {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			sf := t.Field(i)
			name := t.Name() + "." + sf.Name
			tag, tagged := sf.Tag.Lookup("secret")
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			isString := ft.Kind() == reflect.String || (ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String)
			switch {
			case ft == secretSourceType:
				if !slices.Contains(formats, tag) {
					problems = append(problems, name+": a SecretSource needs secret:\"FORMAT\" with FORMAT one of "+strings.Join(formats, ", ")+", got "+strconvQuote(tag))
				}
			case tagged && !isString:
				problems = append(problems, name+": secret tag on a field of type "+sf.Type.String()+"; only strings and lists of strings are walked")
			case tagged && tag == CertTag && !hasPEMKey(t):
				problems = append(problems, name+": secret:\"pem-cert\" needs a secret:\"pem-key\" field beside it")
			case tagged && tag != CertTag && secretTags[tag] == "":
				problems = append(problems, name+": unknown secret tag "+strconvQuote(tag))
			case tagged && tag == "file-content" && t != reflect.TypeFor[File]():
				problems = append(problems, name+": secret:\"file-content\" belongs on File.Content only")
			case !tagged && isString && secretName.MatchString(sf.Name) && allow[name] == "":
				problems = append(problems, name+": the name suggests a secret; tag it secret:\"pem-key|url|ca-dir|file-content|text\" or list it in notSecret with the reason")
			}
			walk(sf.Type)
		}
	}
	walk(t)
	return problems
}

// hasPEMKey reports whether the struct type t has a pem-key field.
func hasPEMKey(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("secret") == "pem-key" {
			return true
		}
	}
	return false
}

func strconvQuote(s string) string { return `"` + s + `"` }

// TestSecretFieldsKnowEveryField fails when a field that can hold a
// secret is added to the spec types and the walk does not know it.
func TestSecretFieldsKnowEveryField(t *testing.T) {
	if p := auditSecretFields(reflect.TypeFor[MachineBootstrapConfig](), notSecret); len(p) > 0 {
		t.Errorf("SecretFields does not know these fields:\n  %s", strings.Join(p, "\n  "))
	}
	for name := range notSecret {
		typ, fld, _ := strings.Cut(name, ".")
		if !hasField(reflect.TypeFor[MachineBootstrapConfig](), typ, fld) {
			t.Errorf("notSecret lists %s, which does not exist; remove it", name)
		}
	}
}

// TestAuditFindsUnknownSecrets shows that the audit is not blind: an
// untagged password, an untagged SecretSource, a tag with a typo and a
// tag on an int all fail it.
func TestAuditFindsUnknownSecrets(t *testing.T) {
	type registry struct {
		Host     string       `json:"host"`
		Password string       `json:"password"`
		Login    SecretSource `json:"login"`
		Key      string       `json:"key" secret:"pem"`
		Port     int          `json:"port" secret:"url"`
		Endpoint string       `json:"endpoint" secret:"url"`
		Cert     string       `json:"cert" secret:"pem-cert"`
	}
	type spec struct {
		Registries []registry `json:"registries"`
	}
	got := strings.Join(auditSecretFields(reflect.TypeFor[spec](), nil), "\n")
	for _, want := range []string{"registry.Password: the name suggests a secret", "registry.Login: a SecretSource needs", "registry.Key: unknown secret tag \"pem\"", "registry.Port: secret tag on a field of type int", "registry.Cert: secret:\"pem-cert\" needs"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit did not report %q; got:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Host") || strings.Contains(got, "Endpoint") {
		t.Errorf("audit reported a field that is fine:\n%s", got)
	}
}

func hasField(root reflect.Type, typ, fld string) bool {
	found := false
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		if _, ok := t.FieldByName(fld); ok && t.Name() == typ {
			found = true
		}
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	walk(root)
	return found
}

// filledSpec is a spec with every field set (fill.All), every URL field
// carrying credentials and the first file marked secret (0600).
func filledSpec(t *testing.T) *MachineBootstrapConfig {
	var c MachineBootstrapConfig
	fill.All(t, &c)
	h := &c.Spec.Host
	h.Containerd.Proxy.HTTPProxy = "http://user:pw@proxy.example:3128"
	h.Containerd.Proxy.HTTPSProxy = "proxy.example:3128" // no credentials
	h.Containerd.Registries[0].Server = "https://robot:tok@registry.example"
	h.Containerd.Registries[1].Mirrors[0].URL = "https://tok@mirror.example"
	h.Files[0].Mode = "0600"
	h.Files[1].Source.URL = "https://u:p@files.example/x"
	c.Spec.Report.URL = "https://u:p@report.example/"
	return &c
}

// TestSecretFieldsFilledSpec lists what the walk finds in a spec with
// every field set: each path once, with its kind and format.
func TestSecretFieldsFilledSpec(t *testing.T) {
	c := filledSpec(t)
	var got []string
	for _, f := range SecretFields(c) {
		got = append(got, f.Path+" "+string(f.Kind)+" "+f.Format)
	}
	want := []string{
		"spec.controlPlane.apiServer.audit.webhook.kubeConfig SecretSource kubeconfig",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[0].aesgcm.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[0].aesgcm.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[0].aescbc.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[0].aescbc.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[0].secretbox.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[0].secretbox.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[1].aesgcm.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[1].aesgcm.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[1].aescbc.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[1].aescbc.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[1].secretbox.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[0].providers[1].secretbox.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[0].aesgcm.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[0].aesgcm.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[0].aescbc.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[0].aescbc.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[0].secretbox.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[0].secretbox.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[1].aesgcm.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[1].aesgcm.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[1].aescbc.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[1].aescbc.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[1].secretbox.keys[0].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.encryption.resources[1].providers[1].secretbox.keys[1].secret SecretSource encryption-key",
		"spec.controlPlane.apiServer.authentication.webhook.kubeConfig SecretSource kubeconfig",
		"spec.controlPlane.apiServer.authorization.authorizers[0].webhook.kubeConfig SecretSource kubeconfig",
		"spec.controlPlane.apiServer.authorization.authorizers[1].webhook.kubeConfig SecretSource kubeconfig",
		"spec.controlPlane.pki.dir CADir ",
		"spec.controlPlane.certificateKey SecretSource certificate-key",
		"spec.controlPlane.bootstrapTokens[0].token SecretSource bootstrap-token",
		"spec.controlPlane.bootstrapTokens[1].token SecretSource bootstrap-token",
		"spec.join.token SecretSource bootstrap-token",
		"spec.host.files[0].content FileContent ",
		"spec.host.files[1].content Text ",
		"spec.host.files[1].source.url URLCredentials ",
		"spec.host.containerd.registries[0].server URLCredentials ",
		"spec.host.containerd.registries[0].mirrors[0].clientKey PEMKey ",
		"spec.host.containerd.registries[0].mirrors[1].clientKey PEMKey ",
		"spec.host.containerd.registries[0].clientKey PEMKey ",
		"spec.host.containerd.registries[1].mirrors[0].url URLCredentials ",
		"spec.host.containerd.registries[1].mirrors[0].clientKey PEMKey ",
		"spec.host.containerd.registries[1].mirrors[1].clientKey PEMKey ",
		"spec.host.containerd.registries[1].clientKey PEMKey ",
		"spec.host.containerd.proxy.httpProxy URLCredentials ",
		"spec.host.containerd.configPatch Text ",
		"spec.host.staticPods[0].manifest Text ",
		"spec.host.staticPods[1].manifest Text ",
		"spec.host.domainJoin.credentials.password SecretSource password",
		"spec.host.domainJoin.offlineJoinBlob SecretSource offline-join-blob",
		"spec.report.url URLCredentials ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("SecretFields:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// TestSecretFieldsCertBesideKey: a PEMKey entry carries the clientCert
// beside it, which makes no entry of its own.
func TestSecretFieldsCertBesideKey(t *testing.T) {
	c := filledSpec(t)
	m := &c.Spec.Host.Containerd.Registries[1].Mirrors[0]
	r := &c.Spec.Host.Containerd.Registries[0]
	n := 0
	for _, f := range SecretFields(c) {
		if strings.HasSuffix(f.Path, "clientCert") {
			t.Errorf("%s: a certificate has an entry of its own", f.Path)
		}
		if (f.Kind == SecretKindPEMKey) != (f.Cert != nil) {
			t.Errorf("%s: kind %s, Cert %v", f.Path, f.Kind, f.Cert)
		}
		switch f.Path {
		case "spec.host.containerd.registries[1].mirrors[0].clientKey":
			n++
			if f.Cert != &m.ClientCert || f.CertPath != "spec.host.containerd.registries[1].mirrors[0].clientCert" {
				t.Errorf("mirror: Cert %p (want %p), CertPath %q", f.Cert, &m.ClientCert, f.CertPath)
			}
		case "spec.host.containerd.registries[0].clientKey":
			n++
			if f.Cert != &r.ClientCert || f.CertPath != "spec.host.containerd.registries[0].clientCert" {
				t.Errorf("registry: Cert %p (want %p), CertPath %q", f.Cert, &r.ClientCert, f.CertPath)
			}
		}
	}
	if n != 2 {
		t.Errorf("found %d of the 2 keys", n)
	}
}

// TestSecretSlots: the slots of a spec whose secret fields are empty (as
// sealing leaves them) are every place a secret may go below the sections
// that are set, with the file content's kind by mode; SecretFields finds
// none of the empty ones.
func TestSecretSlots(t *testing.T) {
	c := &MachineBootstrapConfig{Spec: MachineBootstrapSpec{
		Join: &Join{Token: SecretSource{File: "/t"}, APIServerEndpoint: "cp:6443"},
		Host: Host{
			Files:      []File{{Path: "/a", Mode: "0600"}, {Path: "/b"}},
			Containerd: &Containerd{Registries: []Registry{{Host: "r.example"}}},
		},
		Report: Report{URL: "https://report.example/"},
	}}
	var got []string
	for _, f := range SecretSlots(c) {
		got = append(got, f.Path+" "+string(f.Kind))
	}
	want := []string{
		"spec.join.token SecretSource",
		"spec.host.files[0].content FileContent",
		"spec.host.files[1].content Text",
		"spec.host.containerd.registries[0].server URLCredentials",
		"spec.host.containerd.registries[0].clientKey PEMKey",
		"spec.host.containerd.configPatch Text",
		"spec.report.url URLCredentials",
	}
	if !slices.Equal(got, want) {
		t.Errorf("SecretSlots:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
	for _, f := range SecretSlots(c) {
		if f.Kind == SecretKindPEMKey {
			*f.Value, *f.Cert = "key", "cert"
		}
	}
	if r := c.Spec.Host.Containerd.Registries[0]; r.ClientKey != "key" || r.ClientCert != "cert" {
		t.Errorf("writes through SecretSlots did not reach the spec: %+v", r)
	}
	if got := SecretFields(c); len(got) != 2 || got[1].Path != "spec.host.containerd.registries[0].clientKey" {
		t.Errorf("SecretFields: want the token and the key now set, got %+v", got)
	}
	if SecretSlots(nil) != nil {
		t.Error("SecretSlots(nil) != nil")
	}
}

// TestSecretFieldsPointIntoTheSpec: writing through an entry changes the
// spec (sealing relies on it); File is the entry's file.
func TestSecretFieldsPointIntoTheSpec(t *testing.T) {
	c := filledSpec(t)
	for _, f := range SecretFields(c) {
		switch {
		case f.Kind == SecretKindSource:
			f.Source.Value = "sealed:" + f.Path
		default:
			*f.Value = "sealed:" + f.Path
		}
		if (f.File != nil) != strings.HasSuffix(f.Path, "].content") {
			t.Errorf("%s: File = %v", f.Path, f.File)
		}
	}
	if c.Spec.Join.Token.Value != "sealed:spec.join.token" || c.Spec.Host.Containerd.Registries[1].Mirrors[0].ClientKey != "sealed:spec.host.containerd.registries[1].mirrors[0].clientKey" || c.Spec.ControlPlane.PKI.Dir != "sealed:spec.controlPlane.pki.dir" {
		t.Errorf("writes through SecretFields did not reach the spec: %+v", c.Spec.Join.Token)
	}
}

func TestSecretFieldsEmptyAndInline(t *testing.T) {
	if SecretFields(nil) != nil {
		t.Error("SecretFields(nil) != nil")
	}
	c := &MachineBootstrapConfig{Spec: MachineBootstrapSpec{
		Join: &Join{Token: SecretSource{File: "/t"}, APIServerEndpoint: "cp:6443"},
		Host: Host{Files: []File{{Path: "/a", Content: "x", Mode: "0640"}, {Path: "/b"}}},
		ControlPlane: &ControlPlane{
			BootstrapTokens: []BootstrapToken{{Token: SecretSource{Value: "abcdef.0123456789abcdef"}}},
			PKI:             PKI{Dir: "/etc/machineadm/pki"},
		},
		Report: Report{URL: "https://report.example/"},
	}}
	var got []string
	for _, f := range SecretFields(c) {
		got = append(got, f.Path+" "+string(f.Kind)+" "+strings.Repeat("inline", btoi(f.Inline())))
	}
	want := []string{
		"spec.controlPlane.pki.dir CADir ",
		"spec.controlPlane.bootstrapTokens[0].token SecretSource inline",
		"spec.join.token SecretSource ",
		"spec.host.files[0].content Text inline",
	}
	if !slices.Equal(got, want) {
		t.Errorf("SecretFields:\n got  %q\n want %q", got, want)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestOwnerOnly(t *testing.T) {
	for mode, want := range map[string]bool{"0600": true, "0400": true, "0700": true, "0000": true, "0640": false, "0604": false, "": false, "0644": false, "bad": false} {
		if got := OwnerOnly(mode); got != want {
			t.Errorf("OwnerOnly(%q) = %v, want %v", mode, got, want)
		}
	}
}
