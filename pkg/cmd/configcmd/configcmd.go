// Package configcmd is what the `machineadm config` commands do: validate
// a spec (with the embedded kubeadm's own check), print its defaults or a
// new one with placeholders, print the kubeadm configuration derived from
// it, and migrate it to the newest apiVersion. None of it runs anything on
// the host or starts a run: a spec is read the way a run reads it
// (pkg/session's ReadSpec and LoadSpecDoc, so a sealed file is taken as
// bootstrap takes it) and checked, and its result is returned to the
// command tree (pkg/cmd), which prints it.
package configcmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/version"
)

// Validate reads the spec at path (or In for "-"; the spec document of a
// sealed file, whose envelope is not opened), decodes, defaults and
// validates it, then has the embedded kubeadm validate the configuration
// derived from it with placeholder secrets (translate.CheckSpec). Secret
// files are not read; each one that does not exist on this machine is a
// warning (MissingSecretFiles), and so is each one, or CA private key,
// that group or others may read (files.WideSecretFiles), unless the
// sealed file's envelope carries that secret or the spec is for another
// OS than this machine's (spec.os). A sealed file whose spec has no place for an item is an
// invalid spec (session.LoadSpecDoc). Warnings are returned, not logged.
func Validate(in io.Reader, path string) (*spec.Loaded, error) {
	data, err := session.ReadSpec(in, path)
	if err != nil {
		return nil, err
	}
	l, _, items, err := session.LoadSpecDoc(data, path)
	if err != nil {
		return nil, err
	}
	if err := session.CheckSealedDigest(data, path); err != nil {
		return nil, err
	}
	if errs := containerd.Validate(l.Config.Spec.Host.Containerd); len(errs) > 0 {
		return nil, &spec.InvalidSpecError{Source: path, Errors: errs}
	}
	if _, err := translate.CheckSpec(l.Config, path); err != nil {
		return nil, err
	}
	// The secret files are looked for only when this machine could be
	// the spec's: a spec for another OS (spec.os) names files of another
	// machine, which this one cannot tell anything about.
	if host.OSMismatch(l.Config) != nil {
		return l, nil
	}
	// A secret the file's envelope carries is not read from its file:
	// that file need not exist anywhere.
	for _, w := range MissingSecretFiles(l.Config, "/") {
		if !slices.Contains(items, strings.TrimSuffix(w.Field, ".file")) {
			l.Warnings = append(l.Warnings, w)
		}
	}
	// A secret file that exists here but that group or others may read:
	// the same warning inputs-check gives on the machine.
	hostPath := func(p string) (string, error) { return files.Resolve("/", p) }
	for _, w := range files.WideSecretFiles(l.Config, hostPath, false) {
		if !slices.Contains(items, strings.TrimSuffix(w.Field, ".file")) {
			l.Warnings = append(l.Warnings, validation.Warning{Field: w.Field,
				Message: fmt.Sprintf("%s is mode %04o: group or others can read this secret; make it owner-only (chmod 0600 %s)", w.Path, w.Mode, w.Path)})
		}
	}
	return l, nil
}

// secretFileHint says how to make the secret file of a format.
var secretFileHint = map[string]string{
	machineadm.SecretFormatBootstrapToken: "; `machineadm token generate --out FILE` makes one",
	machineadm.SecretFormatCertificateKey: "; `machineadm pki certificate-key --out FILE` makes one",
}

// missing says whether machine path p of cfg does not exist below root,
// found where seal would read it (sealspec.MachinePath: a spec.os windows
// drive path 'C:\x' is ROOT/C/x, or C:\x itself when root is a drive's
// root). A path that cannot be resolved is not reported: validation
// refuses it.
func missing(root string, cfg *machineadm.MachineBootstrapConfig, p string) bool {
	hp, err := sealspec.MachinePath(root, machineadm.OSOf(&cfg.Spec), p)
	if err != nil {
		return false
	}
	_, err = os.Stat(hp)
	return errors.Is(err, fs.ErrNotExist)
}

// MissingSecretFiles returns a warning for each secret file and CA
// directory the spec names (machineadm.SecretFields: SecretSource files,
// spec.controlPlane.pki.dir) that does not exist below root on this
// machine: the field path with ".file" and the path. `config validate`
// often runs where the spec is written, not on the machine, so this is a
// warning; on the machine, inputs-check fails on the same files. Nothing is
// read: only their existence is checked.
func MissingSecretFiles(cfg *machineadm.MachineBootstrapConfig, root string) []validation.Warning {
	var out []validation.Warning
	for _, f := range machineadm.SecretFields(cfg) {
		switch {
		case f.Kind == machineadm.SecretKindSource && f.Source.File != "":
			if missing(root, cfg, f.Source.File) {
				// A path that holds a secret's shape is the secret pasted
				// where its file belongs: never quoted.
				shown := f.Source.File
				if validation.SecretInText([]byte(shown)) != "" {
					shown = "the file (path withheld: it has a secret's shape)"
				}
				out = append(out, validation.Warning{Field: f.Path + ".file",
					Message: fmt.Sprintf("%s does not exist on this machine; it must be there when machineadm bootstrap runs%s", shown, secretFileHint[f.Format])})
			}
		case f.Kind == machineadm.SecretKindCADir && *f.Value != "":
			if missing(root, cfg, path.Join(filepath.ToSlash(*f.Value), "ca.crt")) {
				out = append(out, validation.Warning{Field: f.Path,
					Message: fmt.Sprintf("%s holds no ca.crt on this machine; the CA set must be there when machineadm bootstrap runs; `machineadm pki init --out DIR` makes one", *f.Value)})
			}
		}
	}
	// Under a profile a control plane without encryption takes the
	// cluster's key from the CA set; bootstrap refuses it without one.
	if machineadm.WantsCASetEncryptionKey(cfg) {
		dir := cfg.Spec.ControlPlane.PKI.Dir
		msg := ""
		switch {
		case dir == "":
			msg = "required under spec.security.profile " + cfg.Spec.Security.Profile + " unless spec.controlPlane.pki.dir gives the CA set with the cluster's " + machineadm.CASetEncryptionKeyFile + "; machineadm bootstrap refuses the spec without a key"
		case !missing(root, cfg, path.Join(filepath.ToSlash(dir), "ca.crt")) && missing(root, cfg, path.Join(filepath.ToSlash(dir), machineadm.CASetEncryptionKeyFile)):
			msg = fmt.Sprintf("%s holds no %s on this machine, the key spec.security.profile %s encrypts Secrets with; add one with `machineadm pki encryption-key --out %s`, or machineadm bootstrap refuses the spec",
				dir, machineadm.CASetEncryptionKeyFile, cfg.Spec.Security.Profile, path.Join(filepath.ToSlash(dir), machineadm.CASetEncryptionKeyFile))
		}
		if msg != "" {
			out = append(out, validation.Warning{Field: "spec.controlPlane.apiServer.encryption", Message: msg})
		}
	}
	return out
}

// KubeadmConfig is `config kubeadm`: the kubeadm configuration documents
// derived from the spec at path, with placeholder secrets, after kubeadm's
// own validation accepted them. A control plane under a compliance
// profile that configures no encryption at rest shows the encryption the
// bootstrap gives it from the CA set's key (machineadm.CASetEncryption:
// the API server's --encryption-provider-config flag and the volume of
// its configuration directory); the key itself is neither read nor
// shown.
func KubeadmConfig(in io.Reader, log *slog.Logger, path string) (*translate.Documents, error) {
	l, err := session.LoadSpec(in, log, path)
	if err != nil {
		return nil, err
	}
	if machineadm.WantsCASetEncryptionKey(l.Config) {
		l.Config.Spec.ControlPlane.APIServer.Encryption = machineadm.CASetEncryption(caSetKeyPlaceholder)
	}
	return translate.CheckSpec(l.Config, path)
}

// caSetKeyPlaceholder stands for the CA set's encryption key in `config
// kubeadm`: the key goes into the API server's encryption configuration
// file, never into kubeadm's documents, so nothing prints it.
const caSetKeyPlaceholder = "withheld"

// Migrate reads a spec of any supported apiVersion and returns it as YAML
// of the newest one (machineadm.LatestAPIVersion), without defaults.
func Migrate(in io.Reader, path string) ([]byte, error) {
	data, err := session.ReadSpec(in, path)
	if err != nil {
		return nil, err
	}
	// A sealed file's envelope binds its clear spec byte for byte (its
	// canonical digest): a migrated clear spec would open on no machine,
	// and dropping the envelope, which the two-documents error suggested,
	// would drop the secrets. Migrate the unsealed spec and seal it again.
	if _, sealed, err := session.SplitSealed(data, path); err != nil {
		return nil, err
	} else if sealed != nil {
		return nil, session.Usagef("%s is sealed (it holds a SealedSecrets document, bound to the clear spec as it is): migrate the unsealed spec and seal it again with 'machineadm seal'", path)
	}
	latest, err := spec.Migrate(data, path)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(latest)
}

// Placeholders that Defaults puts into required fields without a default.
// The endpoint uses the reserved ".invalid" top-level domain (RFC 2606),
// so it can never reach a real host; secrets are referenced as files,
// never inline.
const (
	PlaceholderEndpoint    = "cluster-endpoint.invalid:6443"
	placeholderTokenFile   = "/etc/machineadm/secrets/bootstrap-token"
	placeholderCertKeyFile = "/etc/machineadm/secrets/certificate-key"
	placeholderCAHash      = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
)

// SpecDefaults is `config defaults -f SPEC`: the spec at path (or In for
// "-"; the spec document of a sealed file) decoded, converted to the
// newest apiVersion and validated, with every default filled in, as YAML.
// Inline secret values are replaced by the redactor's mark, so the output
// can be shown and shared. Warnings come back in the *spec.Loaded. An
// invalid spec is a *spec.InvalidSpecError (exit code 2).
func SpecDefaults(in io.Reader, path string) ([]byte, *spec.Loaded, error) {
	data, err := session.ReadSpec(in, path)
	if err != nil {
		return nil, nil, err
	}
	l, _, _, err := session.LoadSpecDoc(data, path)
	if err != nil {
		return nil, nil, err
	}
	cfg := l.Config
	cfg.APIVersion = machineadm.LatestAPIVersion
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	red := redact.New()
	for _, f := range machineadm.SecretFields(cfg) {
		if !f.Inline() {
			continue
		}
		switch f.Kind {
		case machineadm.SecretKindSource:
			red.Add(f.Source.Value)
		case machineadm.SecretKindURLCredentials:
			red.Add(redact.URLSecrets(*f.Value)...)
		default:
			red.Add(*f.Value)
		}
	}
	return []byte(red.String(string(out))), l, nil
}

// Defaults returns a spec of the newest apiVersion for role and action
// ("" action: Init for ControlPlane, Join for Worker) with every default
// filled in, and placeholders in the required fields that have none, as
// YAML; the action it chose and a description of each placeholder it used
// come back too. containerd adds spec.host.containerd with its defaults.
// A bad role or action is a *session.UsageError.
func Defaults(role, action string, containerd bool) ([]byte, string, []string, error) {
	if action == "" {
		action = string(machineadm.ActionJoin)
		if role == string(machineadm.RoleControlPlane) {
			action = string(machineadm.ActionInit)
		}
	}
	switch {
	case role != string(machineadm.RoleControlPlane) && role != string(machineadm.RoleWorker):
		return nil, "", nil, session.Usagef("--role must be ControlPlane or Worker, got %q", role)
	case action != string(machineadm.ActionInit) && action != string(machineadm.ActionJoin):
		return nil, "", nil, session.Usagef("--action must be Init or Join, got %q", action)
	case action == string(machineadm.ActionInit) && role == string(machineadm.RoleWorker):
		return nil, "", nil, session.Usagef("--action Init needs --role ControlPlane")
	}
	cfg := machineadm.MachineBootstrapConfig{
		APIVersion: machineadm.LatestAPIVersion,
		Kind:       machineadm.Kind,
		Spec: machineadm.MachineBootstrapSpec{
			Role:       machineadm.Role(role),
			Action:     machineadm.Action(action),
			Kubernetes: machineadm.Kubernetes{Version: defaultKubernetesVersion()},
		},
	}
	if containerd {
		cfg.Spec.Host.Containerd = &machineadm.Containerd{}
	}
	placeholders := fillPlaceholders(&cfg)
	machineadm.SetDefaults(&cfg)
	out, err := yaml.Marshal(&cfg)
	return out, action, placeholders, err
}

// fillPlaceholders sets the required fields of cfg that have no default,
// by role and action, and returns one line for each placeholder it used
// ("spec.join.token.file: /etc/machineadm/secrets/bootstrap-token").
func fillPlaceholders(cfg *machineadm.MachineBootstrapConfig) []string {
	s := &cfg.Spec
	s.Kubernetes.ControlPlaneEndpoint = PlaceholderEndpoint
	used := []string{"spec.kubernetes.controlPlaneEndpoint: " + PlaceholderEndpoint}
	if s.Action == machineadm.ActionJoin {
		s.Join = &machineadm.Join{
			APIServerEndpoint: PlaceholderEndpoint,
			Token:             machineadm.SecretSource{File: placeholderTokenFile},
			CACertHashes:      []string{placeholderCAHash},
		}
		used = append(used,
			"spec.join.apiServerEndpoint: "+PlaceholderEndpoint,
			"spec.join.token.file: "+placeholderTokenFile+" (machineadm token generate --out FILE)",
			"spec.join.caCertHashes: the all-zero hash (machineadm pki hash DIR)")
		if s.Role == machineadm.RoleControlPlane {
			s.ControlPlane = &machineadm.ControlPlane{CertificateKey: &machineadm.SecretSource{File: placeholderCertKeyFile}}
			used = append(used, "spec.controlPlane.certificateKey.file: "+placeholderCertKeyFile+" (machineadm pki certificate-key --out FILE)")
		}
	}
	return used
}

// defaultKubernetesVersion is the embedded kubeadm's Kubernetes version,
// the version a spec without other constraints should target.
func defaultKubernetesVersion() string {
	if version.CheckStamped() == nil {
		return version.Get().Kubernetes
	}
	return "v1.37.2"
}
