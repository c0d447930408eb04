// Package apiserverconfig turns the API server's typed security settings
// (spec.controlPlane.apiServer.audit, .encryption, .authentication,
// .authorization; types_security.go of the spec) into what the API server
// reads: its flags (Flags), the host paths its static pod mounts
// (Volumes), the files machineadm writes (Files), and checks them with the
// upstream types and validation of k8s.io/apiserver (Validate). It is
// pure: it reads no file and touches no host; secrets reach Files through
// a reader the caller gives.
//
// One table (flagOwners) says which flag each typed field owns: the flags
// added, the extraArgs refused and the docs all come from it.
package apiserverconfig

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Files machineadm writes in machineadm.APIServerConfigDir.
const (
	// AuditPolicyFile is the audit policy (--audit-policy-file).
	AuditPolicyFile = machineadm.APIServerConfigDir + "/audit-policy.yaml"
	// AuditWebhookKubeConfigFile is the audit webhook's kubeconfig
	// (--audit-webhook-config-file).
	AuditWebhookKubeConfigFile = machineadm.APIServerConfigDir + "/audit-webhook.kubeconfig"
	// EncryptionConfigFile is the EncryptionConfiguration
	// (--encryption-provider-config).
	EncryptionConfigFile = machineadm.APIServerConfigDir + "/encryption-config.yaml"
	// AuthenticationConfigFile is the AuthenticationConfiguration
	// (--authentication-config).
	AuthenticationConfigFile = machineadm.APIServerConfigDir + "/authentication-config.yaml"
	// AuthenticationWebhookKubeConfigFile is the token webhook's kubeconfig
	// (--authentication-token-webhook-config-file).
	AuthenticationWebhookKubeConfigFile = machineadm.APIServerConfigDir + "/authentication-webhook.kubeconfig"
	// AuthorizationConfigFile is the AuthorizationConfiguration
	// (--authorization-config).
	AuthorizationConfigFile = machineadm.APIServerConfigDir + "/authorization-config.yaml"
)

// Names of the static pod volumes machineadm adds to the API server's
// pod; the KMS socket directories are VolumeKMSPrefix + index ("-0", …).
const (
	VolumeConfig    = "machineadm-apiserver-config"
	VolumeAuditLog  = "machineadm-audit-log"
	VolumeKMSPrefix = "machineadm-kms"
)

// AuthorizationWebhookKubeConfigFile is the kubeconfig file of the
// authorization webhook named name.
func AuthorizationWebhookKubeConfigFile(name string) string {
	return machineadm.APIServerConfigDir + "/authorization-webhook-" + name + ".kubeconfig"
}

// flagOwner says which typed field owns an API server flag.
type flagOwner struct {
	// field is the json name under spec.controlPlane.apiServer.
	field string
	// flags are the flags the field sets or makes meaningless; every
	// flag named here is refused in extraArgs when the field is set.
	flags []string
}

// flagOwners is the one table of flag ownership.
var flagOwners = []flagOwner{
	{"audit", []string{"audit-policy-file", "audit-log-path", "audit-log-maxage", "audit-log-maxsize", "audit-log-maxbackup",
		"audit-webhook-config-file", "audit-webhook-mode"}},
	{"encryption", []string{"encryption-provider-config"}},
	{"authentication", []string{"authentication-config", "anonymous-auth", "oidc-issuer-url", "oidc-client-id", "oidc-ca-file",
		"oidc-username-claim", "oidc-username-prefix", "oidc-groups-claim", "oidc-groups-prefix", "oidc-required-claim",
		"oidc-signing-algs", "authentication-token-webhook-config-file", "authentication-token-webhook-version",
		"authentication-token-webhook-cache-ttl"}},
	{"authorization", []string{"authorization-config", "authorization-mode", "authorization-webhook-config-file",
		"authorization-webhook-version", "authorization-webhook-cache-authorized-ttl",
		"authorization-webhook-cache-unauthorized-ttl", "authorization-policy-file"}},
}

// OwnedFlags maps each flag (name without "--") that a set typed field of
// a owns to that field's json name ("audit", "encryption", …). extraArgs
// may not set these flags.
func OwnedFlags(a *machineadm.APIServer) map[string]string {
	out := map[string]string{}
	for _, o := range flagOwners {
		if !fieldSet(a, o.field) {
			continue
		}
		for _, f := range o.flags {
			out[f] = o.field
		}
	}
	return out
}

// AllOwnedFlags lists, per typed field json name, every flag it owns when
// set (for docs and tests).
func AllOwnedFlags() map[string][]string {
	out := map[string][]string{}
	for _, o := range flagOwners {
		out[o.field] = append([]string(nil), o.flags...)
	}
	return out
}

func fieldSet(a *machineadm.APIServer, name string) bool {
	switch name {
	case "audit":
		return a.Audit != nil
	case "encryption":
		return a.Encryption != nil
	case "authentication":
		return a.Authentication != nil
	case "authorization":
		return a.Authorization != nil
	}
	return false
}

// Any says whether a has any typed security setting.
func Any(a *machineadm.APIServer) bool {
	return a.Audit != nil || a.Encryption != nil || a.Authentication != nil || a.Authorization != nil
}

// authenticationConfigured says whether the AuthenticationConfiguration
// file is written (JWT authenticators or anonymous settings).
func authenticationConfigured(a *machineadm.Authentication) bool {
	return a != nil && (len(a.JWT) > 0 || a.Anonymous != nil)
}

// Flags are the API server flags of a's typed settings, in a fixed order,
// for a defaulted spec. They are appended to kubeadm's extraArgs.
func Flags(a *machineadm.APIServer) []machineadm.Arg {
	var out []machineadm.Arg
	add := func(n, v string) { out = append(out, machineadm.Arg{Name: n, Value: v}) }
	if au := a.Audit; au != nil {
		add("audit-policy-file", AuditPolicyFile)
		if l := au.Log; l != nil {
			add("audit-log-path", l.Path)
			add("audit-log-maxage", itoa(l.MaxAge))
			add("audit-log-maxsize", itoa(l.MaxSize))
			add("audit-log-maxbackup", itoa(l.MaxBackups))
		}
		if w := au.Webhook; w != nil {
			add("audit-webhook-config-file", AuditWebhookKubeConfigFile)
			add("audit-webhook-mode", w.Mode)
		}
	}
	if a.Encryption != nil {
		add("encryption-provider-config", EncryptionConfigFile)
	}
	if au := a.Authentication; au != nil {
		if authenticationConfigured(au) {
			add("authentication-config", AuthenticationConfigFile)
		}
		if w := au.Webhook; w != nil {
			add("authentication-token-webhook-config-file", AuthenticationWebhookKubeConfigFile)
			add("authentication-token-webhook-version", w.Version)
			add("authentication-token-webhook-cache-ttl", w.CacheTTL)
		}
	}
	if a.Authorization != nil {
		add("authorization-config", AuthorizationConfigFile)
	}
	return out
}

func itoa(p *int32) string {
	if p == nil {
		return "0"
	}
	return strconv.Itoa(int(*p))
}

// Volumes are the host paths the API server's static pod must mount for
// a's typed settings: machineadm.APIServerConfigDir read-only, the audit
// log's directory read-write, and the directory of every KMS plugin
// socket read-only (connecting to a socket needs no write access to its
// mount). Each is created when missing (DirectoryOrCreate).
func Volumes(a *machineadm.APIServer) []machineadm.HostPathMount {
	if !Any(a) {
		return nil
	}
	out := []machineadm.HostPathMount{{Name: VolumeConfig, HostPath: machineadm.APIServerConfigDir,
		MountPath: machineadm.APIServerConfigDir, ReadOnly: true, PathType: "DirectoryOrCreate"}}
	if au := a.Audit; au != nil && au.Log != nil && path.IsAbs(au.Log.Path) {
		d := path.Dir(au.Log.Path)
		out = append(out, machineadm.HostPathMount{Name: VolumeAuditLog, HostPath: d, MountPath: d, PathType: "DirectoryOrCreate"})
	}
	for i, dir := range KMSSocketDirs(a) {
		out = append(out, machineadm.HostPathMount{Name: fmt.Sprintf("%s-%d", VolumeKMSPrefix, i), HostPath: dir, MountPath: dir,
			ReadOnly: true, PathType: "DirectoryOrCreate"})
	}
	return out
}

// KMSSocketDirs are the distinct directories of a's KMS plugin sockets,
// in the order the providers appear.
func KMSSocketDirs(a *machineadm.APIServer) []string {
	if a.Encryption == nil {
		return nil
	}
	var out []string
	for _, r := range a.Encryption.Resources {
		for _, p := range r.Providers {
			if p.KMS == nil {
				continue
			}
			sock, ok := SocketPath(p.KMS.Endpoint)
			if !ok {
				continue
			}
			d := path.Dir(sock)
			if !contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// SocketPath is the absolute socket path of a KMS endpoint
// "unix:///path.sock"; false for any other shape.
func SocketPath(endpoint string) (string, bool) {
	p, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return "", false
	}
	return p, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Paths are the paths of every file Files writes for a (a defaulted,
// validated spec), in Files' order, without reading a secret: those named
// by a flag (Flags) and those named only inside another file (the
// authorization webhooks' kubeconfigs). The API server reads each of
// them when it starts.
func Paths(a *machineadm.APIServer) []string {
	var out []string
	if au := a.Audit; au != nil {
		out = append(out, AuditPolicyFile)
		if au.Webhook != nil {
			out = append(out, AuditWebhookKubeConfigFile)
		}
	}
	if a.Encryption != nil {
		out = append(out, EncryptionConfigFile)
	}
	if au := a.Authentication; au != nil {
		if authenticationConfigured(au) {
			out = append(out, AuthenticationConfigFile)
		}
		if au.Webhook != nil {
			out = append(out, AuthenticationWebhookKubeConfigFile)
		}
	}
	if az := a.Authorization; az != nil {
		out = append(out, AuthorizationConfigFile)
		for _, z := range az.Authorizers {
			if z.Webhook != nil {
				out = append(out, AuthorizationWebhookKubeConfigFile(z.Name))
			}
		}
	}
	return out
}
