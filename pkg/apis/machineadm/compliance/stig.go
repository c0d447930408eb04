package compliance

import "sync"

// stig is a DISA Kubernetes STIG V2R2 rule.
func stig(id string, s Scope, auto bool, how How, title, note string, p *Probe) Check {
	return Check{ID: id, Profile: STIG, Scope: s, Automated: auto, How: how, Title: title, Note: note, Probe: p}
}

const tlsNote = "The profile sets --tls-min-version VersionTLS12 and --tls-cipher-suites to CipherSuites."

// stigChecks are the STIG checks, built on first use (Checks).
var stigChecks = sync.OnceValue(func() []Check {
	return []Check{
		stig("V-242376", ScopeMaster, true, HowMachineadm, "controller manager uses TLS 1.2 at least", tlsNote, flag(KubeControllerManager, "tls-min-version", OpEq, "VersionTLS12")),
		stig("V-242377", ScopeMaster, true, HowMachineadm, "scheduler uses TLS 1.2 at least", tlsNote, flag(KubeScheduler, "tls-min-version", OpEq, "VersionTLS12")),
		stig("V-242378", ScopeMaster, true, HowMachineadm, "API server uses TLS 1.2 at least", tlsNote, flag(KubeAPIServer, "tls-min-version", OpEq, "VersionTLS12")),
		stig("V-242379", ScopeEtcd, true, HowKubeadm, "etcd client connections use TLS", kubeadmFlag, flag(Etcd, "client-cert-auth", OpEq, "true")),
		stig("V-242380", ScopeEtcd, true, HowKubeadm, "etcd peer connections use TLS", kubeadmFlag, flag(Etcd, "peer-client-cert-auth", OpEq, "true")),
		stig("V-242381", ScopeMaster, true, HowKubeadm, "controller manager uses a service account per controller", kubeadmFlag, flag(KubeControllerManager, "use-service-account-credentials", OpEq, "true")),
		stig("V-242382", ScopeMaster, true, HowKubeadm, "API server authorization mode Node,RBAC", kubeadmFlag, flag(KubeAPIServer, "authorization-mode", OpHas, "RBAC")),
		stig("V-242383", ScopePolicies, false, HowClusterPolicy, "user resources in dedicated namespaces", policyNote, nil),
		stig("V-242384", ScopeMaster, true, HowKubeadm, "scheduler binds to 127.0.0.1", kubeadmFlag, flag(KubeScheduler, "bind-address", OpEq, "127.0.0.1")),
		stig("V-242385", ScopeMaster, true, HowKubeadm, "controller manager binds to 127.0.0.1", kubeadmFlag, flag(KubeControllerManager, "bind-address", OpEq, "127.0.0.1")),
		stig("V-242387", ScopeNode, true, HowKubeadm, "kubelet read-only port off", "kubeadm's kubelet configuration leaves it 0.", flagOrUnset(Kubelet, "read-only-port", OpEq, "0")),
		stig("V-242390", ScopeMaster, true, HowMachineadm, "API server anonymous authentication off", "Cannot be off without breaking kubeadm's token discovery (kube-public/cluster-info is read anonymously). The profile limits anonymous requests to /livez, /readyz, /healthz and the cluster-info ConfigMap (AuthenticationConfiguration); the evidence reports WARN. Waive it with that reason, or join nodes by file discovery.", &Probe{Kind: ProbeAnonymous}),
		stig("V-242391", ScopeNode, true, HowKubeadm, "kubelet anonymous authentication off", "kubeadm's kubelet configuration turns it off.", flag(Kubelet, "anonymous-auth", OpEq, "false")),
		stig("V-242392", ScopeNode, true, HowKubeadm, "kubelet authorization explicit (Webhook)", "kubeadm's kubelet configuration uses Webhook.", flag(Kubelet, "authorization-mode", OpEq, "Webhook")),
		stig("V-242397", ScopeNode, true, HowMachineadm, "kubelet static pod path off", "The profile sets staticPodPath \"\" on workers; a control plane needs runtime Systemd (validation refuses StaticPods unless this rule is waived).", flag(Kubelet, "pod-manifest-path", OpUnset, "")),
		stig("V-242400", ScopeMaster, true, HowKubeadm, "API server alpha APIs off", "No alpha API is enabled unless spec.controlPlane.apiServer.extraArgs runtime-config asks.", flagOrUnset(KubeAPIServer, "runtime-config", OpNotHas, "api/alpha=true")),
		stig("V-242401", ScopeMaster, true, HowMachineadm, "API server audit policy set", "The profile turns audit logging on (spec.controlPlane.apiServer.audit).", flag(KubeAPIServer, "audit-policy-file", OpSet, "")),
		stig("V-242402", ScopeMaster, true, HowMachineadm, "API server audit log path set", "As V-242401.", flag(KubeAPIServer, "audit-log-path", OpSet, "")),
		stig("V-242403", ScopeMaster, true, HowMachineadm, "API server generates audit records", "As V-242401; the default policy logs every request at Metadata level.", flag(KubeAPIServer, "audit-policy-file", OpSet, "")),
		stig("V-242404", ScopeNode, true, HowKubeadm, "kubelet hostname override off", "machineadm never sets it (keep spec.node.name equal to the host name).", flag(Kubelet, "hostname-override", OpUnset, "")),
		stig("V-242405", ScopeMaster, true, HowKubeadm, "manifests owned by root", kubeadmRoot, owner(FileAPIServerPod, "root:root")),
		stig("V-242406", ScopeNode, true, HowKubeadm, "kubelet configuration file owned by root", kubeadmRoot, owner(FileKubeletConfig, "root:root")),
		stig("V-242407", ScopeNode, true, HowMachineadm, "kubelet configuration file mode 644 or stricter", "The profile sets it 0600.", mode(FileKubeletConfig, 0o644)),
		stig("V-242408", ScopeMaster, true, HowKubeadm, "manifests mode 644 or stricter", kubeadmMode, mode(FileAPIServerPod, 0o644)),
		stig("V-242409", ScopeMaster, true, HowMachineadm, "controller manager profiling off", "The profile sets --profiling=false.", flag(KubeControllerManager, "profiling", OpEq, "false")),
		stig("V-242418", ScopeMaster, true, HowMachineadm, "API server uses approved cipher suites", tlsNote, flag(KubeAPIServer, "tls-cipher-suites", OpValidElements, cipherList)),
		stig("V-242419", ScopeMaster, true, HowKubeadm, "API server client CA set", kubeadmFlag, flag(KubeAPIServer, "client-ca-file", OpSet, "")),
		stig("V-242420", ScopeNode, true, HowKubeadm, "kubelet client CA set", "kubeadm's kubelet configuration sets it.", flag(Kubelet, "client-ca-file", OpSet, "")),
		stig("V-242421", ScopeMaster, true, HowKubeadm, "controller manager root CA set", kubeadmFlag, flag(KubeControllerManager, "root-ca-file", OpSet, "")),
		stig("V-242422", ScopeMaster, true, HowKubeadm, "API server serving certificate set", kubeadmFlag, flag(KubeAPIServer, "tls-cert-file", OpSet, "")),
		stig("V-242423", ScopeEtcd, true, HowKubeadm, "etcd client certificate authentication on", kubeadmFlag, flag(Etcd, "client-cert-auth", OpEq, "true")),
		stig("V-242425", ScopeNode, true, HowMachineadm, "kubelet serving certificate from the cluster CA", "The profile turns on serverTLSBootstrap; the cluster must approve the kubelet-serving CSRs.", flag(Kubelet, "rotate-server-certificates", OpEq, "true")),
		stig("V-242427", ScopeEtcd, true, HowKubeadm, "etcd key file set", kubeadmFlag, flag(Etcd, "key-file", OpSet, "")),
		stig("V-242428", ScopeEtcd, true, HowKubeadm, "etcd certificate file set", kubeadmFlag, flag(Etcd, "cert-file", OpSet, "")),
		stig("V-242429", ScopeMaster, true, HowKubeadm, "API server etcd CA set", kubeadmFlag, flag(KubeAPIServer, "etcd-cafile", OpSet, "")),
		stig("V-242430", ScopeMaster, true, HowKubeadm, "API server etcd client certificate set", kubeadmFlag, flag(KubeAPIServer, "etcd-certfile", OpSet, "")),
		stig("V-242431", ScopeMaster, true, HowKubeadm, "API server etcd client key set", kubeadmFlag, flag(KubeAPIServer, "etcd-keyfile", OpSet, "")),
		stig("V-242432", ScopeEtcd, true, HowKubeadm, "etcd peer certificate set", kubeadmFlag, flag(Etcd, "peer-cert-file", OpSet, "")),
		stig("V-242433", ScopeEtcd, true, HowKubeadm, "etcd peer key set", kubeadmFlag, flag(Etcd, "peer-key-file", OpSet, "")),
		stig("V-242434", ScopeNode, true, HowMachineadm, "kubelet protects kernel defaults", "The profile sets protectKernelDefaults and, first, the sysctls the kubelet then requires (vm.overcommit_memory=1, vm.panic_on_oom=0, kernel.panic=10, kernel.panic_on_oops=1, kernel.keys.root_maxkeys=1000000, kernel.keys.root_maxbytes=25000000).", flag(Kubelet, "protect-kernel-defaults", OpEq, "true")),
		stig("V-242436", ScopeMaster, false, HowKubeadm, "ValidatingAdmissionWebhook admission on", "On by default; the profile never disables it.", flagOrUnset(KubeAPIServer, "disable-admission-plugins", OpNotHas, "ValidatingAdmissionWebhook")),
		stig("V-242438", ScopeMaster, true, HowOperator, "API server request timeout set", "The default (60s) applies; set request-timeout in extraArgs to make it explicit.", nil),
		stig("V-242443", ScopePolicies, false, HowOperator, "Kubernetes kept up to date", "spec.kubernetes.version and the upgrade workflow; an organisation's process.", nil),
		stig("V-242445", ScopeEtcd, true, HowMachineadm, "etcd data owned by etcd", "As CIS 1.1.12.", owner(FileEtcdDataDir, "etcd:etcd")),
		stig("V-242446", ScopeMaster, true, HowKubeadm, "conf files owned by root", kubeadmRoot, owner(FileAdminConf, "root:root")),
		stig("V-242449", ScopeNode, true, HowKubeadm, "kubelet CA file mode 644 or stricter", "kubeadm writes ca.crt 0644.", mode(FileKubeletCA, 0o644)),
		stig("V-242450", ScopeNode, true, HowKubeadm, "kubelet CA file owned by root", kubeadmRoot, owner(FileKubeletCA, "root:root")),
		stig("V-242451", ScopeMaster, true, HowKubeadm, "PKI owned by root", kubeadmRoot, owner(FilePKI, "root:root")),
		stig("V-242452", ScopeNode, true, HowKubeadm, "kubelet.conf mode 644 or stricter", kubeadmMode, mode(FileKubeletConf, 0o644)),
		stig("V-242453", ScopeNode, true, HowKubeadm, "kubelet.conf owned by root", kubeadmRoot, owner(FileKubeletConf, "root:root")),
		stig("V-242459", ScopeMaster, true, HowKubeadm, "etcd manifest mode 644 or stricter", kubeadmMode, mode(FileEtcdPod, 0o644)),
		stig("V-242460", ScopeMaster, true, HowKubeadm, "admin.conf mode 644 or stricter", kubeadmMode, mode(FileAdminConf, 0o644)),
		stig("V-242461", ScopeMaster, true, HowMachineadm, "API server audit logs on", "As V-242401.", flag(KubeAPIServer, "audit-log-path", OpSet, "")),
		stig("V-242462", ScopeMaster, true, HowMachineadm, "API server audit log max size set", "The profile's audit log backend rotates at 100 MB.", flag(KubeAPIServer, "audit-log-maxsize", OpGTE, "100")),
		stig("V-242463", ScopeMaster, true, HowMachineadm, "API server audit log max backups set", "The profile's audit log backend keeps 10 files.", flag(KubeAPIServer, "audit-log-maxbackup", OpGTE, "10")),
		stig("V-242464", ScopeMaster, true, HowMachineadm, "API server audit log retention set", "The profile's audit log backend keeps 30 days.", flag(KubeAPIServer, "audit-log-maxage", OpGTE, "30")),
		stig("V-242466", ScopeMaster, true, HowKubeadm, "PKI certificates mode 644 or stricter", "kubeadm writes certificates 0644.", mode(FilePKICerts, 0o644)),
		stig("V-242467", ScopeMaster, true, HowKubeadm, "PKI keys mode 600 or stricter", "kubeadm writes keys 0600.", mode(FilePKIKeys, 0o600)),
		stig("V-242468", ScopeMaster, true, HowMachineadm, "API server refuses TLS 1.0 and 1.1", tlsNote, flag(KubeAPIServer, "tls-min-version", OpEq, "VersionTLS12")),
		stig("V-245541", ScopeNode, true, HowKubeadm, "kubelet streaming timeouts not off", "The kubelet's default is 4h.", flagOrUnset(Kubelet, "streaming-connection-idle-timeout", OpNotEq, "0")),
		stig("V-245543", ScopeMaster, true, HowKubeadm, "API server token authentication file not set", kubeadmUnset, flag(KubeAPIServer, "token-auth-file", OpUnset, "")),
		stig("V-245544", ScopeMaster, true, HowKubeadm, "API server kubelet client certificate set", kubeadmFlag, flag(KubeAPIServer, "kubelet-client-certificate", OpSet, "")),
	}
})
