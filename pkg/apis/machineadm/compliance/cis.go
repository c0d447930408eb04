package compliance

import "sync"

// cis is a CIS Kubernetes Benchmark v1.12.0 check.
func cis(id string, s Scope, auto bool, how How, title, note string, p *Probe) Check {
	return Check{ID: id, Profile: CIS112, Scope: s, Automated: auto, How: how, Title: title, Note: note, Probe: p}
}

const (
	kubeadmMode   = "kubeadm writes it 0600."
	kubeadmRoot   = "kubeadm writes it as root:root."
	kubeadmFlag   = "kubeadm sets it."
	kubeadmUnset  = "kubeadm never sets it."
	policyNote    = "A cluster policy, not a node setting: RBAC, admission or Pod Security configured in the cluster."
	cipherList    = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
	apiCiphersCIS = "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
)

// CipherSuites is the TLS 1.2 cipher suite list a profile gives the API
// server, controller manager, scheduler and kubelet: the six suites CIS
// 4.2.12 allows for the kubelet, all also allowed by 1.2.29 for the API
// server (AEAD with ECDHE only). TLS 1.3 suites are not configurable in Go.
const CipherSuites = cipherList

// cisChecks are the CIS checks, built on first use (Checks): the table
// is large, and most commands never read it.
var cisChecks = sync.OnceValue(func() []Check {
	checks := []Check{
		cis("1.1.1", ScopeMaster, true, HowKubeadm, "API server pod spec file mode 600 or stricter", kubeadmMode+" With runtime Systemd the unit file stands for it (/etc/systemd/system/kube-apiserver.service, 0600), as for 1.1.2-1.1.8.", mode(FileAPIServerPod, 0o600)),
		cis("1.1.2", ScopeMaster, true, HowKubeadm, "API server pod spec file owned by root:root", kubeadmRoot, owner(FileAPIServerPod, "root:root")),
		cis("1.1.3", ScopeMaster, true, HowKubeadm, "controller manager pod spec file mode 600 or stricter", kubeadmMode, mode(FileControllerManagerPod, 0o600)),
		cis("1.1.4", ScopeMaster, true, HowKubeadm, "controller manager pod spec file owned by root:root", kubeadmRoot, owner(FileControllerManagerPod, "root:root")),
		cis("1.1.5", ScopeMaster, true, HowKubeadm, "scheduler pod spec file mode 600 or stricter", kubeadmMode, mode(FileSchedulerPod, 0o600)),
		cis("1.1.6", ScopeMaster, true, HowKubeadm, "scheduler pod spec file owned by root:root", kubeadmRoot, owner(FileSchedulerPod, "root:root")),
		cis("1.1.7", ScopeMaster, true, HowKubeadm, "etcd pod spec file mode 600 or stricter", kubeadmMode, mode(FileEtcdPod, 0o600)),
		cis("1.1.8", ScopeMaster, true, HowKubeadm, "etcd pod spec file owned by root:root", kubeadmRoot, owner(FileEtcdPod, "root:root")),
		cis("1.1.9", ScopeMaster, false, HowOperator, "CNI configuration file mode 600 or stricter", "The CNI plugin's files belong to the CNI installer; give spec.host.files entries mode 0600 when machineadm writes them.", nil),
		cis("1.1.10", ScopeMaster, false, HowOperator, "CNI configuration file owned by root:root", "As 1.1.9.", nil),
		cis("1.1.11", ScopeMaster, true, HowKubeadm, "etcd data directory mode 700 or stricter", "kubeadm creates it 0700; the Systemd runtime too.", mode(FileEtcdDataDir, 0o700)),
		cis("1.1.12", ScopeMaster, true, HowMachineadm, "etcd data directory owned by etcd:etcd", "The profile creates the etcd system account (sysusers.d) and gives it the data directory after kubeadm's etcd phase; the static pod's etcd runs as root and keeps access. Runtime Systemd runs etcd as the account etcd, which owns the directory, with or without a profile.", owner(FileEtcdDataDir, "etcd:etcd")),
		cis("1.1.13", ScopeMaster, true, HowKubeadm, "admin.conf and super-admin.conf mode 600", kubeadmMode, mode(FileAdminConf, 0o600)),
		cis("1.1.14", ScopeMaster, true, HowKubeadm, "admin.conf and super-admin.conf owned by root:root", kubeadmRoot, owner(FileAdminConf, "root:root")),
		cis("1.1.15", ScopeMaster, true, HowKubeadm, "scheduler.conf mode 600 or stricter", kubeadmMode+" With runtime Systemd too.", mode(FileSchedulerConf, 0o600)),
		cis("1.1.16", ScopeMaster, true, HowKubeadm, "scheduler.conf owned by root:root", kubeadmRoot+" With runtime Systemd too: the unit reads it as a systemd credential.", owner(FileSchedulerConf, "root:root")),
		cis("1.1.17", ScopeMaster, true, HowKubeadm, "controller-manager.conf mode 600 or stricter", kubeadmMode+" With runtime Systemd too.", mode(FileControllerManagerConf, 0o600)),
		cis("1.1.18", ScopeMaster, true, HowKubeadm, "controller-manager.conf owned by root:root", kubeadmRoot+" With runtime Systemd too: the unit reads it as a systemd credential.", owner(FileControllerManagerConf, "root:root")),
		cis("1.1.19", ScopeMaster, true, HowKubeadm, "PKI directory and files owned by root:root", kubeadmRoot+" With runtime Systemd too: the units read keys and certificates as systemd credentials.", owner(FilePKI, "root:root")),
		cis("1.1.20", ScopeMaster, false, HowKubeadm, "PKI certificate files mode 644 or stricter", "kubeadm writes certificates 0644.", mode(FilePKICerts, 0o644)),
		cis("1.1.21", ScopeMaster, false, HowKubeadm, "PKI key files mode 600", "kubeadm writes keys 0600.", mode(FilePKIKeys, 0o600)),

		cis("1.2.1", ScopeMaster, false, HowMachineadm, "API server anonymous authentication off", "Cannot be off: kubeadm's token discovery reads kube-public/cluster-info anonymously. The profile limits anonymous requests with an AuthenticationConfiguration to /livez, /readyz, /healthz and the cluster-info ConfigMap; the evidence reports WARN (limited, not off).", &Probe{Kind: ProbeAnonymous}),
		cis("1.2.2", ScopeMaster, true, HowKubeadm, "API server --token-auth-file not set", kubeadmUnset, flag(KubeAPIServer, "token-auth-file", OpUnset, "")),
		cis("1.2.3", ScopeMaster, false, HowOperator, "DenyServiceExternalIPs admission plugin enabled", "Breaks Services that use externalIPs; add it to spec.controlPlane.apiServer.extraArgs enable-admission-plugins when none do.", flag(KubeAPIServer, "enable-admission-plugins", OpHas, "DenyServiceExternalIPs")),
		cis("1.2.4", ScopeMaster, true, HowKubeadm, "API server kubelet client certificate and key set", kubeadmFlag, flag(KubeAPIServer, "kubelet-client-certificate", OpSet, "")),
		cis("1.2.5", ScopeMaster, true, HowMachineadm, "API server --kubelet-certificate-authority set", "The profile sets it to the cluster CA and turns on kubelet serving certificates (serverTLSBootstrap). The cluster must approve the kubelets' kubernetes.io/kubelet-serving CSRs (an approver such as kubelet-csr-approver, or `kubectl certificate approve`); until then `kubectl logs` and `exec` to that node fail.", flag(KubeAPIServer, "kubelet-certificate-authority", OpSet, "")),
		cis("1.2.6", ScopeMaster, true, HowKubeadm, "API server authorization mode not AlwaysAllow", kubeadmFlag, flag(KubeAPIServer, "authorization-mode", OpNotHas, "AlwaysAllow")),
		cis("1.2.7", ScopeMaster, true, HowKubeadm, "API server authorization mode includes Node", kubeadmFlag, flag(KubeAPIServer, "authorization-mode", OpHas, "Node")),
		cis("1.2.8", ScopeMaster, true, HowKubeadm, "API server authorization mode includes RBAC", kubeadmFlag, flag(KubeAPIServer, "authorization-mode", OpHas, "RBAC")),
		cis("1.2.9", ScopeMaster, false, HowOperator, "EventRateLimit admission plugin enabled", "Needs an admission configuration file with limits sized for the cluster; give it through spec.controlPlane.apiServer extraArgs and files.", flag(KubeAPIServer, "enable-admission-plugins", OpHas, "EventRateLimit")),
		cis("1.2.10", ScopeMaster, true, HowKubeadm, "AlwaysAdmit admission plugin not enabled", kubeadmUnset, flagOrUnset(KubeAPIServer, "enable-admission-plugins", OpNotHas, "AlwaysAdmit")),
		cis("1.2.11", ScopeMaster, false, HowOperator, "AlwaysPullImages admission plugin enabled", "Breaks air-gapped nodes whose images are imported (every pull goes to the registry); enable it through extraArgs where registries are reachable.", flag(KubeAPIServer, "enable-admission-plugins", OpHas, "AlwaysPullImages")),
		cis("1.2.12", ScopeMaster, true, HowKubeadm, "ServiceAccount admission plugin not disabled", kubeadmUnset, flagOrUnset(KubeAPIServer, "disable-admission-plugins", OpNotHas, "ServiceAccount")),
		cis("1.2.13", ScopeMaster, true, HowKubeadm, "NamespaceLifecycle admission plugin not disabled", kubeadmUnset, flagOrUnset(KubeAPIServer, "disable-admission-plugins", OpNotHas, "NamespaceLifecycle")),
		cis("1.2.14", ScopeMaster, true, HowKubeadm, "NodeRestriction admission plugin enabled", kubeadmFlag, flag(KubeAPIServer, "enable-admission-plugins", OpHas, "NodeRestriction")),
		cis("1.2.15", ScopeMaster, true, HowMachineadm, "API server --profiling=false", "The profile sets it.", flag(KubeAPIServer, "profiling", OpEq, "false")),
		cis("1.2.16", ScopeMaster, true, HowMachineadm, "API server --audit-log-path set", "The profile turns audit logging on (spec.controlPlane.apiServer.audit, default log /var/log/kubernetes/audit/audit.log).", flag(KubeAPIServer, "audit-log-path", OpSet, "")),
		cis("1.2.17", ScopeMaster, true, HowMachineadm, "API server --audit-log-maxage 30 or more", "The profile's audit log backend keeps 30 days.", flag(KubeAPIServer, "audit-log-maxage", OpGTE, "30")),
		cis("1.2.18", ScopeMaster, true, HowMachineadm, "API server --audit-log-maxbackup 10 or more", "The profile's audit log backend keeps 10 files.", flag(KubeAPIServer, "audit-log-maxbackup", OpGTE, "10")),
		cis("1.2.19", ScopeMaster, true, HowMachineadm, "API server --audit-log-maxsize 100 or more", "The profile's audit log backend rotates at 100 MB.", flag(KubeAPIServer, "audit-log-maxsize", OpGTE, "100")),
		cis("1.2.20", ScopeMaster, false, HowOperator, "API server --request-timeout as appropriate", "The default (60s) is appropriate for most clusters; set it through extraArgs otherwise.", nil),
		cis("1.2.21", ScopeMaster, true, HowKubeadm, "API server --service-account-lookup true", "The API server's default is true; kubeadm does not change it.", flagOrUnset(KubeAPIServer, "service-account-lookup", OpEq, "true")),
		cis("1.2.22", ScopeMaster, true, HowKubeadm, "API server --service-account-key-file set", kubeadmFlag, flag(KubeAPIServer, "service-account-key-file", OpSet, "")),
		cis("1.2.23", ScopeMaster, true, HowKubeadm, "API server etcd client certificate and key set", kubeadmFlag+" External etcd: from spec.controlPlane.etcd.external.", flag(KubeAPIServer, "etcd-certfile", OpSet, "")),
		cis("1.2.24", ScopeMaster, true, HowKubeadm, "API server serving certificate and key set", kubeadmFlag, flag(KubeAPIServer, "tls-cert-file", OpSet, "")),
		cis("1.2.25", ScopeMaster, true, HowKubeadm, "API server --client-ca-file set", kubeadmFlag, flag(KubeAPIServer, "client-ca-file", OpSet, "")),
		cis("1.2.26", ScopeMaster, true, HowKubeadm, "API server --etcd-cafile set", kubeadmFlag, flag(KubeAPIServer, "etcd-cafile", OpSet, "")),
		cis("1.2.27", ScopeMaster, false, HowMachineadm, "API server --encryption-provider-config set", "The profile turns encryption at rest on (spec.controlPlane.apiServer.encryption).", flag(KubeAPIServer, "encryption-provider-config", OpSet, "")),
		cis("1.2.28", ScopeMaster, false, HowMachineadm, "encryption providers appropriately configured", "The profile's encryption configuration's first provider for secrets is aescbc (or the spec's kms or secretbox).", &Probe{Kind: ProbeEncryption}),
		cis("1.2.29", ScopeMaster, false, HowMachineadm, "API server uses strong cipher suites only", "The profile sets --tls-min-version VersionTLS12 and --tls-cipher-suites to CipherSuites.", flag(KubeAPIServer, "tls-cipher-suites", OpValidElements, apiCiphersCIS)),
		cis("1.2.30", ScopeMaster, true, HowMachineadm, "API server --service-account-extend-token-expiration=false", "The profile sets it: projected service account tokens expire when they say.", flag(KubeAPIServer, "service-account-extend-token-expiration", OpEq, "false")),

		cis("1.3.1", ScopeMaster, false, HowMachineadm, "controller manager --terminated-pod-gc-threshold set", "The profile sets it to 12500 (the controller manager's default, made explicit).", flag(KubeControllerManager, "terminated-pod-gc-threshold", OpSet, "")),
		cis("1.3.2", ScopeMaster, true, HowMachineadm, "controller manager --profiling=false", "The profile sets it.", flag(KubeControllerManager, "profiling", OpEq, "false")),
		cis("1.3.3", ScopeMaster, true, HowKubeadm, "controller manager --use-service-account-credentials true", kubeadmFlag, flag(KubeControllerManager, "use-service-account-credentials", OpNotEq, "false")),
		cis("1.3.4", ScopeMaster, true, HowKubeadm, "controller manager --service-account-private-key-file set", kubeadmFlag, flag(KubeControllerManager, "service-account-private-key-file", OpSet, "")),
		cis("1.3.5", ScopeMaster, true, HowKubeadm, "controller manager --root-ca-file set", kubeadmFlag, flag(KubeControllerManager, "root-ca-file", OpSet, "")),
		cis("1.3.6", ScopeMaster, true, HowKubeadm, "RotateKubeletServerCertificate not turned off", "On by default; the profile never turns it off.", flagOrUnset(KubeControllerManager, "feature-gates", OpNotHas, "RotateKubeletServerCertificate=false")),
		cis("1.3.7", ScopeMaster, true, HowKubeadm, "controller manager --bind-address 127.0.0.1", kubeadmFlag, flagOrUnset(KubeControllerManager, "bind-address", OpEq, "127.0.0.1")),
		cis("1.4.1", ScopeMaster, true, HowMachineadm, "scheduler --profiling=false", "The profile sets it.", flag(KubeScheduler, "profiling", OpEq, "false")),
		cis("1.4.2", ScopeMaster, true, HowKubeadm, "scheduler --bind-address 127.0.0.1", kubeadmFlag, flagOrUnset(KubeScheduler, "bind-address", OpEq, "127.0.0.1")),

		cis("2.1", ScopeEtcd, true, HowKubeadm, "etcd --cert-file and --key-file set", kubeadmFlag, flag(Etcd, "cert-file", OpSet, "")),
		cis("2.2", ScopeEtcd, true, HowKubeadm, "etcd --client-cert-auth true", kubeadmFlag, flag(Etcd, "client-cert-auth", OpEq, "true")),
		cis("2.3", ScopeEtcd, true, HowKubeadm, "etcd --auto-tls not true", kubeadmUnset, flagOrUnset(Etcd, "auto-tls", OpEq, "false")),
		cis("2.4", ScopeEtcd, true, HowKubeadm, "etcd --peer-cert-file and --peer-key-file set", kubeadmFlag, flag(Etcd, "peer-cert-file", OpSet, "")),
		cis("2.5", ScopeEtcd, true, HowKubeadm, "etcd --peer-client-cert-auth true", kubeadmFlag, flag(Etcd, "peer-client-cert-auth", OpEq, "true")),
		cis("2.6", ScopeEtcd, true, HowKubeadm, "etcd --peer-auto-tls not true", kubeadmUnset, flagOrUnset(Etcd, "peer-auto-tls", OpEq, "false")),
		cis("2.7", ScopeEtcd, false, HowKubeadm, "a unique CA for etcd", "kubeadm makes a separate etcd CA (etcd/ca.crt); machineadm pki init too.", flag(Etcd, "trusted-ca-file", OpSet, "")),

		cis("3.1.1", ScopeControlPlane, false, HowClusterPolicy, "no client certificate authentication for users", "An organisation's choice of user authentication (OIDC through spec.controlPlane.apiServer.authentication); admin.conf stays for break-glass use.", nil),
		cis("3.1.2", ScopeControlPlane, false, HowClusterPolicy, "no service account tokens for users", policyNote, nil),
		cis("3.1.3", ScopeControlPlane, false, HowClusterPolicy, "no bootstrap tokens for users", policyNote, nil),
		cis("3.2.1", ScopeControlPlane, false, HowMachineadm, "a minimal audit policy", "The profile's default audit policy (Metadata for everything, no request bodies of Secrets, ConfigMaps and TokenReviews).", flag(KubeAPIServer, "audit-policy-file", OpSet, "")),
		cis("3.2.2", ScopeControlPlane, false, HowOperator, "the audit policy covers key security concerns", "A review of the policy against the organisation's concerns.", nil),

		cis("4.1.1", ScopeNode, true, HowMachineadm, "kubelet service file mode 600 or stricter", "The profile sets the kubelet's unit and drop-in files 0600 (they come with the image).", mode(FileKubeletService, 0o600)),
		cis("4.1.2", ScopeNode, true, HowMachineadm, "kubelet service file owned by root:root", "The profile sets them root:root.", owner(FileKubeletService, "root:root")),
		cis("4.1.3", ScopeNode, false, HowKubeadm, "kube-proxy kubeconfig mode 600 or stricter, if it exists", "kube-proxy reads its kubeconfig from a ConfigMap inside its pod: no file on the node.", mode(FileProxyKubeconfig, 0o600)),
		cis("4.1.4", ScopeNode, false, HowKubeadm, "kube-proxy kubeconfig owned by root:root, if it exists", "As 4.1.3.", owner(FileProxyKubeconfig, "root:root")),
		cis("4.1.5", ScopeNode, true, HowKubeadm, "kubelet.conf mode 600 or stricter", kubeadmMode, mode(FileKubeletConf, 0o600)),
		cis("4.1.6", ScopeNode, true, HowKubeadm, "kubelet.conf owned by root:root", kubeadmRoot, owner(FileKubeletConf, "root:root")),
		cis("4.1.7", ScopeNode, false, HowKubeadm, "kubelet client CA file mode 644 or stricter", "kubeadm writes ca.crt 0644.", mode(FileKubeletCA, 0o644)),
		cis("4.1.8", ScopeNode, false, HowKubeadm, "kubelet client CA file owned by root:root", kubeadmRoot, owner(FileKubeletCA, "root:root")),
		cis("4.1.9", ScopeNode, true, HowMachineadm, "kubelet config.yaml mode 600 or stricter", "kubeadm writes it 0644; the profile sets it 0600 after kubeadm's kubelet-start.", mode(FileKubeletConfig, 0o600)),
		cis("4.1.10", ScopeNode, true, HowKubeadm, "kubelet config.yaml owned by root:root", kubeadmRoot, owner(FileKubeletConfig, "root:root")),
		cis("4.2.1", ScopeNode, true, HowKubeadm, "kubelet anonymous authentication off", "kubeadm's kubelet configuration turns it off.", flag(Kubelet, "anonymous-auth", OpEq, "false")),
		cis("4.2.2", ScopeNode, true, HowKubeadm, "kubelet authorization mode not AlwaysAllow", "kubeadm's kubelet configuration uses Webhook.", flag(Kubelet, "authorization-mode", OpNotHas, "AlwaysAllow")),
		cis("4.2.3", ScopeNode, true, HowKubeadm, "kubelet --client-ca-file set", "kubeadm's kubelet configuration sets it.", flag(Kubelet, "client-ca-file", OpSet, "")),
		cis("4.2.4", ScopeNode, false, HowKubeadm, "kubelet read-only port 0", "kubeadm's kubelet configuration leaves it 0.", flagOrUnset(Kubelet, "read-only-port", OpEq, "0")),
		cis("4.2.5", ScopeNode, false, HowKubeadm, "kubelet streaming connection idle timeout not 0", "The kubelet's default is 4h.", flagOrUnset(Kubelet, "streaming-connection-idle-timeout", OpNotEq, "0")),
		cis("4.2.6", ScopeNode, true, HowKubeadm, "kubelet --make-iptables-util-chains true", "The kubelet's default is true.", flagOrUnset(Kubelet, "make-iptables-util-chains", OpEq, "true")),
		cis("4.2.7", ScopeNode, false, HowKubeadm, "kubelet --hostname-override not set", "machineadm never sets it; spec.node.name becomes kubeadm's nodeRegistration.name, which kubeadm passes as --hostname-override only when it differs from the host name: keep them equal.", flag(Kubelet, "hostname-override", OpUnset, "")),
		cis("4.2.8", ScopeNode, false, HowKubeadm, "kubelet event QPS appropriate", "The kubelet's default (50) is kept.", flagOrUnset(Kubelet, "event-qps", OpGTE, "0")),
		cis("4.2.9", ScopeNode, false, HowMachineadm, "kubelet serving certificate and key", "The profile turns on serverTLSBootstrap: the kubelet asks for a serving certificate from the cluster CA (its CSR must be approved, see 1.2.5) instead of a self-signed one.", flag(Kubelet, "rotate-server-certificates", OpEq, "true")),
		cis("4.2.10", ScopeNode, true, HowKubeadm, "kubelet --rotate-certificates not false", "kubeadm's kubelet configuration turns rotation on.", flagOrUnset(Kubelet, "rotate-certificates", OpEq, "true")),
		cis("4.2.11", ScopeNode, false, HowMachineadm, "kubelet serving certificate rotation on", "The profile sets serverTLSBootstrap (rotate-server-certificates); see 1.2.5 for the approval.", flag(Kubelet, "rotate-server-certificates", OpEq, "true")),
		cis("4.2.12", ScopeNode, false, HowMachineadm, "kubelet uses strong cipher suites only", "The profile sets tlsMinVersion VersionTLS12 and tlsCipherSuites to CipherSuites.", flag(Kubelet, "tls-cipher-suites", OpValidElements, cipherList)),
		cis("4.2.13", ScopeNode, false, HowMachineadm, "a limit on pod PIDs", "The profile sets podPidsLimit 4096 unless spec.node.kubelet.config sets it.", flag(Kubelet, "pod-max-pids", OpSet, "")),
		cis("4.2.14", ScopeNode, false, HowOperator, "kubelet --seccomp-default true", "Runs every container under the runtime's default seccomp profile, which some workloads need relaxed; set seccompDefault in spec.node.kubelet.config.", flag(Kubelet, "seccomp-default", OpEq, "true")),
		cis("4.3.1", ScopeNode, true, HowKubeadm, "kube-proxy metrics bound to localhost", "kubeadm's kube-proxy configuration binds metrics to 127.0.0.1:10249.", nil),
	}
	for _, p := range cisPolicies {
		checks = append(checks, cis(p.id, ScopePolicies, false, HowClusterPolicy, p.title, policyNote, nil))
	}
	return checks
})
