package machineadm

import (
	"path"
	"strings"
)

// SystemdCredentialFlags are, per component of the Systemd runtime
// ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
// kubeadm's names), the flags whose value is a file the process only
// reads: certificates, keys, kubeconfigs and configuration files
// (kubeadm's flags, the typed API server settings' flags, and the
// upstream file flags an extraArgs entry may set). Each such file reaches
// the process as a systemd credential (LoadCredential=, read by systemd
// outside the unit's sandbox), so it stays root:root 0600 (CIS 1.1.16,
// 1.1.18, 1.1.19). Flags naming a file written (--audit-log-path) or a
// directory (--data-dir) are not here, nor --tls-sni-cert-key, whose
// value is a list of pairs. pkg/kubeadm/systemd renders them;
// validation leaves their files out of the sandbox checks.
var SystemdCredentialFlags = map[string][]string{
	"etcd": {"cert-file", "key-file", "trusted-ca-file", "peer-cert-file", "peer-key-file", "peer-trusted-ca-file",
		"client-crl-file", "peer-crl-file"},
	"kube-apiserver": {
		"client-ca-file", "tls-cert-file", "tls-private-key-file", "kubelet-client-certificate", "kubelet-client-key",
		"kubelet-certificate-authority", "proxy-client-cert-file", "proxy-client-key-file", "requestheader-client-ca-file",
		"service-account-key-file", "service-account-signing-key-file", "etcd-cafile", "etcd-certfile", "etcd-keyfile",
		"audit-policy-file", "audit-webhook-config-file", "encryption-provider-config", "authentication-config",
		"authorization-config", "authentication-token-webhook-config-file", "authorization-webhook-config-file",
		"admission-control-config-file", "egress-selector-config-file", "oidc-ca-file", "tracing-config-file",
		"token-auth-file", "authorization-policy-file", "peer-ca-file",
	},
	"kube-controller-manager": {
		"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "client-ca-file", "requestheader-client-ca-file",
		"root-ca-file", "service-account-private-key-file", "cluster-signing-cert-file", "cluster-signing-key-file",
		"tls-cert-file", "tls-private-key-file", "cloud-config",
		"cluster-signing-kubelet-serving-cert-file", "cluster-signing-kubelet-serving-key-file",
		"cluster-signing-kubelet-client-cert-file", "cluster-signing-kubelet-client-key-file",
		"cluster-signing-kube-apiserver-client-cert-file", "cluster-signing-kube-apiserver-client-key-file",
		"cluster-signing-legacy-unknown-cert-file", "cluster-signing-legacy-unknown-key-file",
	},
	"kube-scheduler": {
		"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "config", "client-ca-file",
		"requestheader-client-ca-file", "tls-cert-file", "tls-private-key-file",
	},
}

// SystemdCredentialPath reports whether the value v of a credential flag
// can be handed over as a credential: an absolute, clean path without
// white space or "%" (which LoadCredential= and ExecStart= could not
// carry as they are). Any other value the process opens itself.
func SystemdCredentialPath(v string) bool {
	return path.IsAbs(v) && path.Clean(v) == v && !strings.ContainsAny(v, " \t%")
}
