package host

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/redact"
)

// StepAPIServerConfig is the name of the step that writes the API
// server's security configuration.
const StepAPIServerConfig = "apiserver-config"

// apiServerConfigMode is the mode of every file the step writes: the
// policy and configurations are read by the API server alone (CIS 1.1.x
// asks 600 for the control plane's configuration), and keys and
// kubeconfigs are secret.
const apiServerConfigMode = 0o600

func init() {
	// Order 12: after accounts (5) and files (10, which may deliver the
	// key and kubeconfig files this step reads), before kubeadm.
	Register(Concern{Order: 12, Name: StepAPIServerConfig,
		Short: "Write the API server's audit policy, encryption, authentication and authorization configuration and webhook kubeconfigs (root 0600; with runtime Systemd a webhook kubeconfig named only inside another file is the API server account's)",
		Class: errclass.HostPreparationFailed, OS: []string{OSLinux},
		// Its fields are spec.controlPlane.apiServer.audit, encryption,
		// authentication and authorization (Fields lists spec.host only).
		Validation: "validateAPIServerSecurity",
		checker:    apiServerChecker,
		when:       apiServerAsked,
	})
}

// hintAPIServerSecret is the hint of an unreadable or malformed key or
// kubeconfig file.
const hintAPIServerSecret = "deliver the file named by the field before machineadm runs (spec.host.files, a sealed value, or the image), with the content the field's documentation describes"

// apiServerAsked says whether cfg has typed API-server security settings.
func apiServerAsked(cfg *machineadm.MachineBootstrapConfig) bool {
	cp := cfg.Spec.ControlPlane
	return cfg.Spec.Role == machineadm.RoleControlPlane && cp != nil && apiserverconfig.Any(&cp.APIServer)
}

type apiServerPlan struct {
	entries []fileEntry
}

// apiServerChecker reads the secrets of the API server's typed security
// settings (keys, webhook kubeconfigs), builds every file
// (apiserverconfig.Files, checked with the upstream validation) and
// decides their owner: root, and with the Systemd runtime the API
// server's account kubeadm-kas for the files named only inside another
// file (the authorization webhooks' kubeconfigs; created by the accounts
// step, so resolved when written): the unit gets the files its flags name
// as credentials. Nothing is changed.
func apiServerChecker(cfg *machineadm.MachineBootstrapConfig) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		cp := cfg.Spec.ControlPlane
		if !apiServerAsked(cfg) {
			return &apiServerPlan{}, nil
		}
		read := func(field string, src *machineadm.SecretSource) ([]byte, error) {
			return readAPIServerSecret(env, field, src)
		}
		fs, err := apiserverconfig.Files(&cp.APIServer, read)
		if err != nil {
			var ec *errclass.Error
			if errors.As(err, &ec) {
				return nil, err
			}
			return nil, errclass.New(errclass.InvalidSpec, hintAPIServerSecret, err)
		}
		ids, err := files.LoadIDs(env.root())
		if err != nil {
			return nil, hostErr(hintFileOwner, "%s: %w", StepAPIServerConfig, err)
		}
		root, err := resolveOwner(ids, "0", "0", pendingAccounts(cfg), "spec.controlPlane.runtime", "spec.controlPlane.runtime")
		if err != nil {
			return nil, err
		}
		own := root
		if cp.Runtime == machineadm.RuntimeSystemd {
			if own, err = resolveOwner(ids, cpunits.APIServerUser, cpunits.APIServerUser, pendingAccounts(cfg), "spec.controlPlane.runtime", "spec.controlPlane.runtime"); err != nil {
				return nil, err
			}
		}
		// A file a flag names reaches a unit as a credential, read by
		// systemd as root; a file named only inside another (an
		// authorization webhook's kubeconfig) is opened by the API
		// server itself.
		flagged := map[string]bool{}
		for _, a := range apiserverconfig.Flags(&cp.APIServer) {
			flagged[a.Value] = true
		}
		var p apiServerPlan
		for _, f := range fs {
			if err := withheld(env, f.Field, f.Path); err != nil {
				return nil, err
			}
			o := own
			if flagged[f.Path] {
				o = root
			}
			p.entries = append(p.entries, fileEntry{field: f.Field, owner: o, desired: files.Desired{
				Path: f.Path, Content: f.Content, Mode: apiServerConfigMode,
				// Keys and kubeconfigs never reach a diff; the others are
				// shown as any 0600 file is (not at all).
				Secret: true,
			}})
		}
		return &p, nil
	}
}

func (p *apiServerPlan) apply(ctx context.Context, env *Env, rec *recorder) error {
	for _, e := range p.entries {
		var err error
		if e.desired.UID, e.desired.GID, err = e.owner.resolve(env, rec, e.desired.Path); err != nil {
			return err
		}
		if _, err := rec.file(e.desired, e.field); err != nil {
			return err
		}
	}
	return nil
}

// readAPIServerSecret resolves one key or kubeconfig: the inline value or
// the file under the root, checked for its format. A dry run without the
// file plans with a stand-in of the right shape. Errors never quote it.
func readAPIServerSecret(env *Env, field string, src *machineadm.SecretSource) ([]byte, error) {
	format := machineadm.SecretFormatEncryptionKey
	if strings.HasSuffix(field, ".kubeConfig") {
		format = machineadm.SecretFormatKubeConfig
	}
	data := []byte(src.Value)
	if src.File != "" {
		var err error
		data, err = redact.ReadSecretFile(filepath.Join(env.root(), src.File))
		if err != nil {
			if env.DryRun {
				env.log().Warn("dry run: secret file unreadable; planned with a stand-in", "field", field, "file", src.File)
				return standIn(format), nil
			}
			return nil, errclass.Errorf(errclass.PayloadUnavailable, hintAPIServerSecret, "%s: reading %s: %w", field, src.File, err)
		}
	}
	if msg := validation.SecretShapeProblem(format, strings.TrimSpace(string(data))); msg != "" {
		return nil, errclass.Errorf(errclass.InvalidSpec, hintAPIServerSecret, "%s: %s", field, msg)
	}
	return data, nil
}

// standIn is a value of format's shape for dry runs without the secret.
func standIn(format string) []byte {
	if format == machineadm.SecretFormatKubeConfig {
		return []byte("apiVersion: v1\nkind: Config\nclusters: [{name: dry-run, cluster: {server: 'https://dry-run.invalid'}}]\n" +
			"contexts: [{name: dry-run, context: {cluster: dry-run, user: dry-run}}]\ncurrent-context: dry-run\nusers: [{name: dry-run, user: {}}]\n")
	}
	return []byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
}
