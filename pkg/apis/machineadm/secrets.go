package machineadm

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// SecretKind says what a secret field holds (SecretField.Kind).
type SecretKind string

const (
	// SecretKindSource is a SecretSource: the secret inline (Value) or in a
	// file on the machine (File). SecretField.Source points at it and
	// SecretField.Format names its shape. Emitted whenever the field is
	// reachable (its parent section is set), even when both halves are
	// empty, so that resolvers see a required secret that is missing.
	SecretKindSource SecretKind = "SecretSource"
	// SecretKindPEMKey is a PEM private key given inline (registry and
	// mirror clientKey). Emitted when not empty.
	SecretKindPEMKey SecretKind = "PEMKey"
	// SecretKindURLCredentials is a URL with user information
	// ("https://user:password@host/"; URLHasCredentials). Emitted only when
	// the URL carries credentials.
	SecretKindURLCredentials SecretKind = "URLCredentials"
	// SecretKindFileContent is the inline content of a host.files[] entry
	// that only its owner may read (a mode without group or other bits,
	// such as "0600"): the file is marked secret. SecretField.File points
	// at the entry (encoding, path, mode). Emitted when not empty.
	SecretKindFileContent SecretKind = "FileContent"
	// SecretKindCADir is the directory of the shared cluster CA set
	// (spec.controlPlane.pki.dir, kubeadm's layout); its private keys are
	// CAKeyFiles. The field holds a path, not the secret. Emitted when not
	// empty.
	SecretKindCADir SecretKind = "CADir"
	// SecretKindText is free text that is not a secret by design but may
	// embed one pasted in (a PEM key, a token): a readable file's content
	// (SecretField.File is set), a static pod manifest, the containerd
	// config patch. Renderers search it; it is not sealed or redacted.
	// Emitted when not empty.
	SecretKindText SecretKind = "Text"
)

// Formats of SecretSource fields (SecretField.Format), from the field's
// `secret:"…"` tag.
const (
	// SecretFormatBootstrapToken is a kubeadm bootstrap token,
	// "[a-z0-9]{6}.[a-z0-9]{16}".
	SecretFormatBootstrapToken = "bootstrap-token"
	// SecretFormatCertificateKey is kubeadm's certificate key: 64
	// lower-case hex characters (a 32-byte AES key).
	SecretFormatCertificateKey = "certificate-key"
	// SecretFormatPassword is a password (spec.host.domainJoin.credentials).
	SecretFormatPassword = "password"
	// SecretFormatOfflineJoinBlob is the base64 text `djoin /provision`
	// writes (spec.host.domainJoin.offlineJoinBlob).
	SecretFormatOfflineJoinBlob = "offline-join-blob"
	// SecretFormatEncryptionKey is an encryption-at-rest key of the API
	// server: the base64 encoding of 16, 24 or 32 random bytes
	// (spec.controlPlane.apiServer.encryption.resources[].providers[].
	// aesgcm|aescbc|secretbox.keys[].secret).
	SecretFormatEncryptionKey = "encryption-key"
	// SecretFormatKubeConfig is a kubeconfig (YAML) that locates and
	// authenticates to a webhook of the API server (audit, token
	// authentication, authorization); it may hold client keys or tokens.
	SecretFormatKubeConfig = "kubeconfig"
)

// secretTags maps each value of the `secret` struct tag on a string field
// to the kind it makes; "file-content" becomes FileContent or Text by the
// file's mode. SecretSource fields are found by their type and their tag
// names a SecretFormat instead.
var secretTags = map[string]SecretKind{
	"pem-key":      SecretKindPEMKey,
	"url":          SecretKindURLCredentials,
	"ca-dir":       SecretKindCADir,
	"file-content": SecretKindFileContent,
	"text":         SecretKindText,
}

// CertTag is the `secret` tag value of a certificate that goes with the
// struct's pem-key field (registry and mirror clientCert). A certificate
// is not secret: it makes no entry of its own, it is the PEMKey entry's
// Cert, so that sealing moves the pair together (validation refuses one
// without the other).
const CertTag = "pem-cert"

// CAKeyFiles are the private keys of the shared CA set, relative to
// spec.controlPlane.pki.dir, in kubeadm's layout
// (k8s.io/kubernetes/cmd/kubeadm/app/constants: CAKeyName,
// FrontProxyCAKeyName, ServiceAccountPrivateKeyName, EtcdCAKeyName).
var CAKeyFiles = []string{"ca.key", "front-proxy-ca.key", "sa.key", filepath.Join("etcd", "ca.key")}

// SecretField is one place in a spec that holds or points at a secret, as
// SecretFields finds it.
type SecretField struct {
	// Path is the field path in the spec's JSON names, with list indices
	// and map keys: "spec.join.token",
	// "spec.controlPlane.bootstrapTokens[0].token",
	// "spec.host.containerd.registries[1].mirrors[0].clientKey".
	Path string
	// Kind says what the field holds.
	Kind SecretKind
	// Format is the shape of a SecretSource (SecretFormatBootstrapToken,
	// SecretFormatCertificateKey); "" for other kinds.
	Format string
	// Source points at the SecretSource in the spec, for SecretKindSource;
	// nil otherwise.
	Source *SecretSource
	// Value points at the string field in the spec for every other kind:
	// the key, URL, content, manifest or directory. Writing through it
	// changes the spec (sealing replaces values this way).
	Value *string
	// File points at the host.files[] entry of a FileContent or Text
	// field that is a file's content; nil otherwise.
	File *File
	// Cert points at the certificate that goes with a PEMKey (the
	// clientCert beside a clientKey, tagged secret:"pem-cert"), and
	// CertPath is its field path; nil and "" for other kinds.
	Cert     *string
	CertPath string
}

// Inline reports whether the secret itself is in the spec: a SecretSource
// with a value, or any kind holding its value (a key, a URL with
// credentials, content, text). A SecretSource that names a file and a CA
// directory are references, not inline.
func (f SecretField) Inline() bool {
	switch f.Kind {
	case SecretKindSource:
		return f.Source.Value != ""
	case SecretKindCADir:
		return false
	}
	return *f.Value != ""
}

// SecretFields returns every field of cfg that holds or points at a
// secret, in the order of the types' fields (lists in index order, maps
// by sorted key). It is the one answer to "where does the spec keep its
// secrets": the redactor, render's inline-secret refusal, validation's
// warnings, the kubeadm inputs and `config kubeadm`'s placeholders use it,
// and sealing (pkg/seal/sealspec). The walk is driven by reflection: every field of type
// SecretSource (or *SecretSource) is found by its type, and string fields
// by their `secret:"…"` struct tag (pem-key, url, ca-dir, file-content,
// text; pem-cert marks the certificate of a pem-key, see CertTag); TestSecretFieldsKnowEveryField fails for an untagged field whose
// name suggests a secret. Which entries are emitted per kind is documented
// on the SecretKind constants. A nil cfg has none.
func SecretFields(cfg *MachineBootstrapConfig) []SecretField {
	return walkSecrets(cfg, false)
}

// SecretSlots is SecretFields with every reachable secret field, set or
// not: empty keys, contents and CA directories, and URLs without
// credentials (still of kind URLCredentials), in the same order and with
// the same pointers. A host.files[] content is FileContent or Text by the
// file's mode, whether or not it has content. It answers "where may a
// secret go": unsealing puts the envelope's items back into a clear spec
// whose secret fields sealing removed. A nil cfg has none.
func SecretSlots(cfg *MachineBootstrapConfig) []SecretField {
	return walkSecrets(cfg, true)
}

func walkSecrets(cfg *MachineBootstrapConfig, all bool) []SecretField {
	if cfg == nil {
		return nil
	}
	w := secretWalk{all: all}
	w.value(reflect.ValueOf(cfg).Elem(), "")
	return w.out
}

var secretSourceType = reflect.TypeFor[SecretSource]()

// secretWalk collects entries; all keeps empty fields (SecretSlots).
type secretWalk struct {
	out []SecretField
	all bool
}

// value walks v (addressable) at JSON path p.
func (w *secretWalk) value(v reflect.Value, p string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			w.value(v.Elem(), p)
		}
	case reflect.Slice:
		for i := range v.Len() {
			w.value(v.Index(i), fmt.Sprintf("%s[%d]", p, i))
		}
	case reflect.Map:
		// Map values are not addressable; the spec's maps hold plain
		// values (labels, sysctl, feature gates), never secrets.
	case reflect.Struct:
		w.fields(v, p)
	}
}

func (w *secretWalk) fields(v reflect.Value, p string) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		fv := v.Field(i)
		fp := joinPath(p, jsonName(sf))
		tag, tagged := sf.Tag.Lookup("secret")
		switch {
		case sf.Type == secretSourceType:
			w.out = append(w.out, SecretField{Path: fp, Kind: SecretKindSource, Format: tag, Source: fv.Addr().Interface().(*SecretSource)})
		case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem() == secretSourceType:
			if !fv.IsNil() {
				w.out = append(w.out, SecretField{Path: fp, Kind: SecretKindSource, Format: tag, Source: fv.Interface().(*SecretSource)})
			}
		case tagged && tag == CertTag:
			// attached to the struct's PEMKey entry (str)
		case tagged && sf.Type.Kind() == reflect.String:
			w.str(v, p, fv, fp, secretTags[tag])
		case tagged && sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.String:
			for j := range fv.Len() {
				w.str(v, p, fv.Index(j), fmt.Sprintf("%s[%d]", fp, j), secretTags[tag])
			}
		default:
			w.value(fv, fp)
		}
	}
}

// str records the tagged string field s, at path p, of the struct parent
// at path pp.
func (w *secretWalk) str(parent reflect.Value, pp string, s reflect.Value, p string, kind SecretKind) {
	ptr := s.Addr().Interface().(*string)
	if *ptr == "" && !w.all {
		return
	}
	f := SecretField{Path: p, Kind: kind, Value: ptr}
	switch kind {
	case SecretKindURLCredentials:
		if !w.all && !URLHasCredentials(*ptr) {
			return
		}
	case SecretKindPEMKey:
		t := parent.Type()
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("secret") == CertTag {
				f.Cert = parent.Field(i).Addr().Interface().(*string)
				f.CertPath = joinPath(pp, jsonName(t.Field(i)))
			}
		}
	case SecretKindFileContent:
		f.Kind = SecretKindText
		if file, ok := parent.Addr().Interface().(*File); ok {
			f.File = file
			if OwnerOnly(file.Mode) {
				f.Kind = SecretKindFileContent
			}
		}
	case SecretKindCADir, SecretKindText:
	default:
		// An unknown tag value (TestSecretFieldsKnowEveryField refuses
		// one): searched as text rather than dropped.
		f.Kind = SecretKindText
	}
	w.out = append(w.out, f)
}

// OwnerOnly reports whether the octal mode string (a host.files[] mode
// such as "0600") grants no permission to group or others: such a file is
// marked secret. An empty mode is the default "0644"; a mode that does not
// parse is not owner-only (validation refuses it).
func OwnerOnly(mode string) bool {
	if mode == "" {
		mode = DefaultFileMode
	}
	m, err := strconv.ParseUint(mode, 8, 32)
	return err == nil && m&0o077 == 0
}

// jsonName is the field's JSON name; "" for an embedded (inlined) struct.
func jsonName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if name == "" && !sf.Anonymous {
		return sf.Name
	}
	return name
}

func joinPath(p, name string) string {
	switch {
	case name == "":
		return p
	case p == "":
		return name
	}
	return p + "." + name
}
