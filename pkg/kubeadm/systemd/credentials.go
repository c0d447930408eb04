package systemd

import (
	"fmt"
	"path"
	"strings"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// credentialFlags are, per component, the flags whose value is a file the
// process only reads: certificates, keys, kubeconfigs and configuration
// files (kubeadm's flags, the typed API server settings' flags of
// apiserverconfig.Flags, and the upstream file flags an extraArgs entry
// may set). Each such file reaches the process as a systemd credential,
// so it stays root:root 0600 (CIS 1.1.16, 1.1.18, 1.1.19). Flags naming a
// file written (--audit-log-path) or a directory (--data-dir) are not
// here, nor --tls-sni-cert-key, whose value is a list of pairs.
// TestSystemdExtraArgsFileFlagsAreCredentials sets the upstream ones.
var credentialFlags = map[string][]string{
	kubeadmconstants.Etcd: {"cert-file", "key-file", "trusted-ca-file", "peer-cert-file", "peer-key-file", "peer-trusted-ca-file",
		"client-crl-file", "peer-crl-file"},
	kubeadmconstants.KubeAPIServer: {
		"client-ca-file", "tls-cert-file", "tls-private-key-file", "kubelet-client-certificate", "kubelet-client-key",
		"kubelet-certificate-authority", "proxy-client-cert-file", "proxy-client-key-file", "requestheader-client-ca-file",
		"service-account-key-file", "service-account-signing-key-file", "etcd-cafile", "etcd-certfile", "etcd-keyfile",
		"audit-policy-file", "audit-webhook-config-file", "encryption-provider-config", "authentication-config",
		"authorization-config", "authentication-token-webhook-config-file", "authorization-webhook-config-file",
		"admission-control-config-file", "egress-selector-config-file", "oidc-ca-file", "tracing-config-file",
		"token-auth-file", "authorization-policy-file", "peer-ca-file",
	},
	kubeadmconstants.KubeControllerManager: {
		"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "client-ca-file", "requestheader-client-ca-file",
		"root-ca-file", "service-account-private-key-file", "cluster-signing-cert-file", "cluster-signing-key-file",
		"tls-cert-file", "tls-private-key-file", "cloud-config",
		"cluster-signing-kubelet-serving-cert-file", "cluster-signing-kubelet-serving-key-file",
		"cluster-signing-kubelet-client-cert-file", "cluster-signing-kubelet-client-key-file",
		"cluster-signing-kube-apiserver-client-cert-file", "cluster-signing-kube-apiserver-client-key-file",
		"cluster-signing-legacy-unknown-cert-file", "cluster-signing-legacy-unknown-key-file",
	},
	kubeadmconstants.KubeScheduler: {
		"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "config", "client-ca-file",
		"requestheader-client-ca-file", "tls-cert-file", "tls-private-key-file",
	},
}

// credentials are the credentials of component name's command argv: one
// per argument "--FLAG=PATH" of a flag of credentialFlags with an
// absolute, clean PATH without white space or "%", in the order of
// credentialFlags and then argv. The first of a flag has the flag's name
// as its ID, a repeat of it (a flag that takes several files, such as
// --service-account-key-file) the ID FLAG-2, FLAG-3, … An argument given
// twice, or with a relative path, is left to the process to open.
func credentials(name string, argv []string) []cpunits.Credential {
	args := map[string]int{}
	for _, a := range argv[1:] {
		args[a]++
	}
	var out []cpunits.Credential
	for _, f := range credentialFlags[name] {
		n := 0
		for _, a := range argv[1:] {
			v, ok := strings.CutPrefix(a, "--"+f+"=")
			if !ok || args[a] != 1 || !path.IsAbs(v) || path.Clean(v) != v || strings.ContainsAny(v, " \t%") {
				continue
			}
			n++
			cr := cpunits.Credential{ID: f, Path: v}
			if n > 1 {
				cr.ID, cr.Flag = fmt.Sprintf("%s-%d", f, n), f
			}
			out = append(out, cr)
		}
	}
	return out
}
