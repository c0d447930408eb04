package validation

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// SecretShapeProblem says what is wrong with v, a resolved secret (read
// from its file and trimmed) of format, for after the secret's name, or ""
// when the machine accepts it: a bootstrap token
// (machineadm.SecretFormatBootstrapToken) must be
// "[a-z0-9]{6}.[a-z0-9]{16}", a certificate key
// (machineadm.SecretFormatCertificateKey) 32 bytes in hex, either case, as
// kubeadm decodes it (an inline value is held to lower case by Validate),
// an encryption key the base64 of 16, 24 or 32 bytes, a kubeconfig a
// kubeconfig with a current context and server, a password
// (machineadm.SecretFormatPassword) one line without control characters
// (adcli reads it from its standard input up to a line's end, and
// NetJoinDomain takes a NUL-terminated string: either would join with
// another password than the one given). Other formats have no
// shape here. The phrase never quotes v. It is the
// one check of the machine's inputs-check (pki.CheckInputs in pkg/kubeadm/pki) and of
// `machineadm seal`, which refuses such a file before it is sealed.
func SecretShapeProblem(format, v string) string {
	switch format {
	case machineadm.SecretFormatBootstrapToken:
		if !bootstraputil.IsValidBootstrapToken(v) {
			return "not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}"
		}
	case machineadm.SecretFormatCertificateKey:
		if b, err := hex.DecodeString(v); err != nil || len(b) != 32 {
			return "not 64 hex characters (a 32-byte AES key)"
		}
	case machineadm.SecretFormatEncryptionKey:
		return encryptionKeyProblem(v)
	case machineadm.SecretFormatKubeConfig:
		return kubeConfigProblem(v)
	case machineadm.SecretFormatPassword:
		return passwordProblem(v)
	}
	return ""
}

// TrimSecret trims the white space that a file or a YAML block scalar adds
// around v, a secret of format, as the machine does before it uses or
// checks it: around a password (machineadm.SecretFormatPassword) only
// ASCII spaces, tabs, CRs and LFs, since another space (U+00A0, U+3000)
// may be part of it and is checked, not dropped; around every other
// format all Unicode white space (strings.TrimSpace).
func TrimSecret(format, v string) string {
	if format == machineadm.SecretFormatPassword {
		return strings.Trim(v, " \t\r\n")
	}
	return strings.TrimSpace(v)
}

// passwordProblem is SecretShapeProblem for
// machineadm.SecretFormatPassword: v must be UTF-8 text (a file saved as
// UTF-16 or in a legacy code page is not what the domain compares) without
// a control (Cc), format (Cf: a byte-order mark, zero-width or
// bidirectional marks) or line- or paragraph-separator (U+2028, U+2029)
// character, which adcli would end the line at or which are invisible, so
// the join would use another password than the one the user sees.
func passwordProblem(v string) string {
	switch {
	case v == "":
		return "is empty"
	case !utf8.ValidString(v):
		return "is not UTF-8 text (saved as UTF-16 or in a legacy code page?): a domain password is one line of UTF-8 text"
	case strings.IndexFunc(v, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) }) >= 0:
		return "holds a control, format or line-separator character (a line break, tab, NUL, byte-order mark, zero-width mark or U+2028): a domain password is one line of printable characters"
	}
	return ""
}

// The secret-shape detector: one answer to "does this text, URL or flag
// carry a secret", shared by `machineadm render` (which refuses such a
// spec), `machineadm seal` (which warns about what it leaves in the clear)
// and Validate (which warns). It looks at places that are not secret by
// design — readable files' content, static pod manifests, the containerd
// config patch, URLs, component flags, the kubelet configuration — where a
// secret may have been pasted in. Its phrases name the kind of secret and
// never quote it.

var (
	// privateKeyBlock matches the armor line of a private key: PEM
	// (RFC 7468: "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY",
	// "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY"...) and OpenPGP
	// (RFC 9580 section 6.2: "PGP PRIVATE KEY BLOCK").
	privateKeyBlock = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----`)
	})
	// puttyKey is PuTTY's private key file header.
	puttyKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`PuTTY-User-Key-File-[0-9]+: `) })
	// bootstrapTokenText is a kubeadm bootstrap token
	// (k8s.io/cluster-bootstrap/token/api BootstrapTokenPattern).
	bootstrapTokenText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`) })
	// jwtText is a JSON Web Token (RFC 7519): a service-account or OIDC
	// token, three base64url parts of which the first two are JSON.
	jwtText = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)
	})
	// credentialAssignment is a credential key with a value on the same
	// line, in YAML ("token: x"), JSON ("\"token\": \"x\"") or TOML
	// ("password = \"x\""): kubeconfig user credentials, registry
	// credentials (containerd's auth, identitytoken), passwords and
	// client secrets. A key is matched in any spelling of its word
	// boundaries (client-secret, client_secret, clientSecret) and after a
	// prefix joined by "-", "_" or "." (aws_secret_access_key,
	// registry.password, bootstrap_token); credentialKinds is looked up
	// with the separators removed (credentialKey).
	credentialAssignment = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:[a-z0-9]+[-_.])*(client[-_]?key[-_]?data|token|id[-_]?token|refresh[-_]?token|password|passwd|identity[-_]?token|client[-_]?secret|secret[-_]?access[-_]?key|auth)\b["']?[ \t]*[:=][ \t]*("[^"\n]*"|'[^'\n]*'|[^\s"',}\]]+)`)
	})
	// apiKeyText is a provider API key or access token recognisable by
	// its documented prefix: a Google API key ("AIza" and 35 characters),
	// a GitHub token (ghp_, gho_, ghu_, ghs_, ghr_ and 36 characters, or
	// github_pat_), a GitLab personal access token (glpat-) and a Slack
	// token (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-).
	apiKeyText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(apiKeyExpr()) })
	// base64Run is a run of base64 (standard or URL alphabet) long enough
	// to hold a PEM armor line.
	base64Run = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9+/_-]{40,}={0,2}`) })
)

// credentialKinds names what a credentialAssignment key holds, and the
// shortest value that counts (shorter ones are placeholders).
var credentialKinds = map[string]struct {
	what string
	min  int
}{
	"clientkeydata": {"kubeconfig credential", 16}, "token": {"kubeconfig credential", 16},
	"idtoken": {"kubeconfig credential", 16}, "refreshtoken": {"kubeconfig credential", 16},
	"password": {"password", 4}, "passwd": {"password", 4},
	"identitytoken": {"registry credential", 8}, "auth": {"registry credential", 8},
	"clientsecret": {"client secret", 8}, "secretaccesskey": {"client secret", 8},
}

// credentialKey is the credentialKinds key of a credentialAssignment key
// as written: lower case, without "-" and "_".
func credentialKey(k string) string {
	return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k))
}

// credentialKeyNames are credentialKinds' keys, sorted.
func credentialKeyNames() []string {
	names := make([]string, 0, len(credentialKinds))
	for k := range credentialKinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// SecretInText names the kind of secret content holds, or "": a PEM,
// OpenPGP or PuTTY private key, a bootstrap token, a JSON Web Token, a
// provider API key or token of a known prefix (Google, GitHub, GitLab,
// Slack), a
// credential assigned in YAML, JSON or TOML (a kubeconfig's
// client-key-data or token, a registry password, auth or identitytoken,
// a client secret), or any of these base64-encoded (a kubeconfig's
// client-key-data holds a base64 PEM key), searched to two levels.
func SecretInText(content []byte) string {
	return secretInText(content, 2, true)
}

// secretInText is SecretInText to depth levels of base64; without
// assignments it looks for secrets by their own shape only, not for
// "key: value" text (a URL's "/auth:authorize" is no credential).
//
// Each pattern runs only on text holding what every match of it holds (a
// literal part, a "." or a ":" or "="): the spec's every string is
// searched, most of them short and plain.
func secretInText(content []byte, depth int, assignments bool) string {
	if bytes.Contains(content, []byte("PRIVATE KEY")) {
		if m := privateKeyBlock().FindSubmatch(content); m != nil {
			if strings.HasPrefix(string(m[1]), "PGP ") {
				return "PGP private key"
			}
			return "PEM private key"
		}
	}
	switch {
	case bytes.Contains(content, []byte("PuTTY-User-Key-File-")) && puttyKey().Match(content):
		return "PuTTY private key"
	case bytes.IndexByte(content, '.') >= 0 && bootstrapTokenText().Match(content):
		return "bootstrap token"
	case bytes.Contains(content, []byte("eyJ")) && jwtText().Match(content):
		return "JSON Web Token"
	case mayHoldAPIKey(content) && apiKeyText().Match(content):
		return "API key"
	}
	text := content
	if !assignments || !bytes.ContainsAny(content, ":=") {
		text = nil // no assignment to look for
	}
	for _, m := range credentialAssignment().FindAllSubmatch(text, -1) {
		kind := credentialKinds[credentialKey(string(m[1]))]
		v := strings.Trim(string(m[2]), `"'`)
		if len(v) >= kind.min && !placeholder(v) {
			return kind.what
		}
	}
	if depth == 0 || len(content) < 40 {
		return ""
	}
	for _, run := range base64Run().FindAll(content, -1) {
		if dec := decodeBase64(string(run)); dec != nil {
			if what := secretInText(dec, depth-1, assignments); what != "" {
				return "base64-encoded " + what
			}
		}
	}
	return ""
}

// apiKeys are apiKeyText's alternatives, each with the literal text every
// match of it starts with (mayHoldAPIKey's prefilter): one table, so that
// a pattern cannot be added without its prefilter ("github_pat_" holds no
// "gh").
var apiKeys = []struct{ literal, expr string }{
	{"AIza", `AIza[0-9A-Za-z_-]{35}`},
	{"gh", `gh[pousr]_[A-Za-z0-9]{36}`},
	{"github_pat_", `github_pat_[A-Za-z0-9_]{40,}`},
	{"glpat-", `glpat-[A-Za-z0-9_-]{20,}`},
	{"xox", `xox[bpars]-[A-Za-z0-9-]{10,}`},
}

// apiKeyExpr is apiKeyText's expression: apiKeys' alternatives, each at
// a word boundary.
func apiKeyExpr() string {
	alts := make([]string, len(apiKeys))
	for i, k := range apiKeys {
		alts[i] = `\b` + k.expr
	}
	return strings.Join(alts, "|")
}

// mayHoldAPIKey reports whether content holds the literal start of one of
// apiKeys.
func mayHoldAPIKey(content []byte) bool {
	for _, k := range apiKeys {
		if bytes.Contains(content, []byte(k.literal)) {
			return true
		}
	}
	return false
}

// placeholder reports whether v is a reference or placeholder rather than
// a secret: a path, a variable, a template, a list or mapping, a boolean
// or null.
func placeholder(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "~", "redacted", "<redacted>":
		return true
	}
	return strings.ContainsAny(v[:1], "/$<{[*%") || strings.HasPrefix(v, "{{")
}

// decodeBase64 decodes s in any of the four base64 alphabets and
// paddings, or returns nil.
func decodeBase64(s string) []byte {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
		if b, err := enc.DecodeString(strings.TrimRight(s, "=")); err == nil {
			return b
		}
	}
	return nil
}

// urlSignatureParams are query parameters that make a URL a credential on
// its own: presigned object-storage URLs (AWS Signature V4 and V2, Google
// Cloud Storage V4, Azure shared access signatures) and their session
// tokens.
var urlSignatureParams = map[string]bool{
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true,
	"x-goog-signature": true, "x-goog-credential": true, "googleaccessid": true,
	"sig": true, "signature": true, "awsaccesskeyid": true,
}

// urlCredentialParam is a query or fragment parameter name that holds a
// credential: tokens, secrets, passwords, API and access keys.
var urlCredentialParam = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(token|secret|password|passwd|api[-_]?key|access[-_]?key|session[-_]?key|credential)`)
})

// URLCredentials names the credential the URL raw carries, or "": user
// information ("credentials in the URL", machineadm.URLHasCredentials), or
// a presigned signature or token-like parameter in its query or fragment
// ("X-Amz-Signature", "X-Goog-Signature", Azure's "sig", "token",
// "access_token", "api_key"...), or a secret SecretInText knows by its
// shape (a key, a token, a JWT, an API key, not "name: value" text, which
// URLs are full of: "/auth:authorize") in a parameter of any name
// (Google's "?key=AIza...") or anywhere in its path, query or fragment (a
// pair the query parser skips, a token in a path segment): whoever reads
// such a URL can use it. The phrase names the parameter, never its value.
func URLCredentials(raw string) string {
	if machineadm.URLHasCredentials(raw) {
		return "credentials in the URL"
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	for _, part := range []struct{ where, raw string }{{"query", u.RawQuery}, {"fragment", u.EscapedFragment()}} {
		if part.raw == "" {
			continue
		}
		q, _ := url.ParseQuery(part.raw) // a malformed pair is skipped, the others kept
		names := make([]string, 0, len(q))
		for k := range q {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if urlSignatureParams[strings.ToLower(k)] || urlCredentialParam().MatchString(k) {
				return fmt.Sprintf("a credential in the URL's %s (parameter %q)", part.where, k)
			}
			for _, v := range q[k] {
				if what := secretInText([]byte(v), 2, false); what != "" {
					return fmt.Sprintf("%s in the URL's %s (parameter %q)", what, part.where, k)
				}
			}
		}
	}
	// The text as a whole: a pair ParseQuery skips (a ';', a bad escape)
	// and a path segment (a webhook's or bot's token) hold secrets too.
	for _, part := range []struct{ where, raw string }{{"path", u.EscapedPath()}, {"query", u.RawQuery}, {"fragment", u.EscapedFragment()}} {
		text := part.raw
		if t, err := url.PathUnescape(text); err == nil {
			text = t
		}
		if what := secretInText([]byte(text), 2, false); what != "" {
			return fmt.Sprintf("%s in the URL's %s", what, part.where)
		}
	}
	return ""
}

// secretArgName is a flag name that says its value is a credential; a
// name that says it is a file, path, directory, duration or switch
// (refArgName) does not.
var (
	secretArgName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(token|password|passwd|secret|credential|api-?key)`)
	})
	refArgName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(file|path|dir|ttl|expiration|duration|auth-mode|enable)`)
	})
	durationValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(ns|us|ms|s|m|h)?([0-9]+(ns|us|ms|s|m|h))*$`) })
)

// ArgSecret names the secret a command-line flag (name without or with
// dashes, and its value) carries, or "": a value SecretInText finds a
// secret in, or any value of a flag whose name says it is a credential
// (--token, --password, --client-secret ...) unless it is a path, a
// boolean, a number or a duration.
func ArgSecret(name, value string) string {
	if what := SecretInText([]byte(value)); what != "" {
		return what
	}
	n := strings.TrimLeft(name, "-")
	if value == "" || !secretArgName().MatchString(n) || refArgName().MatchString(n) || durationValue().MatchString(value) || placeholder(value) {
		return ""
	}
	return "a credential in the flag's value"
}

// SecretShape is one place of a spec where the detector found a secret.
type SecretShape struct {
	// Path is the field path, as in machineadm.SecretField.Path.
	Path string
	// What names the secret found, for example "PEM private key in
	// /etc/demo/key.pem" or "credentials in the URL".
	What string
	// Kind is the kind of the field per machineadm.SecretSlots
	// (URLCredentials, FileContent, Text); "" for a flag or a
	// configuration value found outside the secret fields.
	Kind machineadm.SecretKind
}

// SecretShapeOf names the secret the detector finds in f, a field of
// kind URLCredentials, FileContent or Text (content decoded first, with
// machineadm.DecodeContent's bound), or "" — for other kinds too.
func SecretShapeOf(f machineadm.SecretField) string {
	if f.Value == nil || *f.Value == "" {
		return ""
	}
	switch f.Kind {
	case machineadm.SecretKindURLCredentials:
		return URLCredentials(*f.Value)
	case machineadm.SecretKindFileContent, machineadm.SecretKindText:
		content := []byte(*f.Value)
		in := ""
		if f.File != nil {
			in = " in " + f.File.Path
			if dec, err := machineadm.DecodeContent(*f.Value, f.File.Encoding); err == nil {
				content = dec // validation reports bad encodings; else search the raw text
			}
		}
		if what := SecretInText(content); what != "" {
			return what + in
		}
	}
	return ""
}

// SecretShapes lists every place of cfg outside its secret values where
// the detector finds a secret: URLs (every machineadm.SecretSlots URL,
// with or without user information), files' content, static pod
// manifests and the containerd config patch (SecretShapeOf), then
// component flags (every extraArgs list: ArgSecret), string values of
// free-form configuration (spec.node.kubelet.config, runtime options) and
// every other string of the spec (labels, annotations, taints, names:
// SecretInText), in the types' field order. Every string of a spec ends up
// in the user data, so none is left out; the SecretSlots fields are
// judged by SecretShapeOf alone. A nil cfg has none.
func SecretShapes(cfg *machineadm.MachineBootstrapConfig) []SecretShape {
	var out []SecretShape
	w := shapeWalk{out: &out}
	for _, f := range machineadm.SecretSlots(cfg) {
		w.slots = append(w.slots, f.Path)
		if what := SecretShapeOf(f); what != "" {
			out = append(out, SecretShape{Path: f.Path, What: what, Kind: f.Kind})
		}
	}
	if cfg != nil {
		w.walk(reflect.ValueOf(cfg).Elem(), "", false)
	}
	return out
}

// shapeWalk is the state of SecretShapes' walk over the spec's values.
type shapeWalk struct {
	// slots are the paths of the SecretSlots fields, judged apart.
	slots []string
	out   *[]SecretShape
}

// inSlot says whether the path p is a SecretSlots field or below one.
func (w shapeWalk) inSlot(p string) bool {
	for _, s := range w.slots {
		if p == s || strings.HasPrefix(p, s+".") || strings.HasPrefix(p, s+"[") {
			return true
		}
	}
	return false
}

var argType = reflect.TypeFor[machineadm.Arg]()

// walk adds the flags (machineadm.Arg) and the string values below v, at
// JSON path p, in which the detector finds a secret; free says v is below
// a map[string]any (free-form configuration).
func (w shapeWalk) walk(v reflect.Value, p string, free bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem(), p, free)
		}
	case reflect.Slice:
		for i := range v.Len() {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", p, i), free)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			if free || v.Type().Elem().Kind() == reflect.Interface {
				w.walk(v.MapIndex(k), p+"."+k.String(), true)
			} else {
				w.walk(v.MapIndex(k), p+"["+k.String()+"]", false) // labels, annotations: as field paths name them
			}
		}
	case reflect.String:
		if !free && w.inSlot(p) {
			return // judged by SecretShapeOf, or a secret value itself
		}
		if what := SecretInText([]byte(v.String())); what != "" {
			*w.out = append(*w.out, SecretShape{Path: p, What: what})
		}
	case reflect.Struct:
		if v.Type() == argType {
			a := v.Interface().(machineadm.Arg)
			if what := ArgSecret(a.Name, a.Value); what != "" {
				*w.out = append(*w.out, SecretShape{Path: p + ".value", What: what + " (flag " + a.Name + ")"})
			}
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fp := p
			if name != "" && !f.Anonymous {
				fp = strings.TrimPrefix(p+"."+name, ".")
			}
			w.walk(v.Field(i), fp, false)
		}
	}
}
