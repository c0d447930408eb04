package v1alpha1

// Default values of v1alpha1 fields. They are applied by SetDefaults and
// shown by `machineadm config defaults`. Defaults that differ by spec.os
// (CRI socket, containerd config file and runtime, report and sentinel
// paths) are OSDefaults (defaults_os.go); spec.os itself defaults to
// DefaultOS, the OS machineadm is built for (defaults_other.go,
// defaults_windows.go).
const (
	DefaultClusterName     = "kubernetes"
	DefaultImageRepository = "registry.k8s.io"
	DefaultServiceSubnet   = "10.96.0.0/12"
	DefaultDNSDomain       = "cluster.local"
	DefaultBindPort        = int32(6443)
	DefaultCertificatesDir = "/etc/kubernetes/pki"
	DefaultEncryptionAlgo  = "ECDSA-P256"
	DefaultRuntime         = RuntimeStaticPods
	DefaultBinDir          = "/usr/local/bin"
	DefaultEtcdDataDir     = "/var/lib/etcd"
	DefaultJoinTimeout     = "5m"
	DefaultTokenTTL        = "24h"
	DefaultFileMode        = "0644"
	DefaultFileOwner       = "0"
	DefaultCgroupDriver    = "systemd"
)

// SetDefaults fills every unset field of c that has a default, in place.
// It never overrides a value the user gave and is idempotent.
func SetDefaults(c *MachineBootstrapConfig) {
	s := &c.Spec
	if s.OS == "" {
		s.OS = DefaultOS
	}
	osd := DefaultsFor(s.OS)
	if s.Action == "" {
		s.Action = ActionJoin
	}
	k := &s.Kubernetes
	setString(&k.ClusterName, DefaultClusterName)
	setString(&k.ImageRepository, DefaultImageRepository)
	setString(&k.Networking.ServiceSubnet, DefaultServiceSubnet)
	setString(&k.Networking.DNSDomain, DefaultDNSDomain)

	if s.Role == RoleControlPlane {
		if s.ControlPlane == nil {
			s.ControlPlane = &ControlPlane{}
		}
		cp := s.ControlPlane
		if cp.BindPort == 0 {
			cp.BindPort = DefaultBindPort
		}
		setString(&cp.PKI.CertificatesDir, DefaultCertificatesDir)
		setString(&cp.PKI.EncryptionAlgorithm, DefaultEncryptionAlgo)
		if cp.Runtime == "" {
			cp.Runtime = DefaultRuntime
		}
		if cp.Runtime == RuntimeSystemd {
			setBinaries(cp)
		}
		setSecurityDefaults(&cp.APIServer)
		if cp.Etcd.Local == nil && cp.Etcd.External == nil {
			cp.Etcd.Local = &LocalEtcd{}
		}
		if cp.Etcd.Local != nil {
			setString(&cp.Etcd.Local.DataDir, DefaultEtcdDataDir)
		}
		for i := range cp.BootstrapTokens {
			t := &cp.BootstrapTokens[i]
			setString(&t.TTL, DefaultTokenTTL)
			if len(t.Groups) == 0 {
				t.Groups = []string{"system:bootstrappers:kubeadm:default-node-token"}
			}
			if len(t.Usages) == 0 {
				t.Usages = []string{"signing", "authentication"}
			}
		}
		if s.Node.Taints == nil {
			s.Node.Taints = &[]Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"}}
		}
	}
	if s.Join != nil {
		setString(&s.Join.Timeout, DefaultJoinTimeout)
	}
	setString(&s.Node.CRISocket, osd.CRISocket)

	for i := range s.Host.Files {
		f := &s.Host.Files[i]
		setString(&f.Mode, DefaultFileMode)
		setString(&f.Owner, DefaultFileOwner)
		setString(&f.Group, DefaultFileOwner)
	}
	if cd := s.Host.Containerd; cd != nil {
		setString(&cd.ConfigFile, osd.ContainerdConfig)
		setString(&cd.CgroupDriver, DefaultCgroupDriver)
		setString(&cd.DefaultRuntime, osd.RuntimeName)
		for i := range cd.Runtimes {
			setString(&cd.Runtimes[i].Type, osd.RuntimeType)
		}
		for i := range cd.Registries {
			for j := range cd.Registries[i].Mirrors {
				m := &cd.Registries[i].Mirrors[j]
				if len(m.Capabilities) == 0 {
					m.Capabilities = []string{"pull", "resolve"}
				}
			}
		}
	}

	setOSDefaults(s)
	setProfileDefaults(s)

	r := &s.Report
	setString(&r.Path, osd.ReportPath)
	setString(&r.Sentinel, osd.Sentinel)
	if r.Console == nil {
		t := true
		r.Console = &t
	}
}

func setString(p *string, def string) {
	if *p == "" {
		*p = def
	}
}

// DefaultKeytab is the host keytab a Linux domain join writes (MIT
// Kerberos' default_keytab_name). Defined on every OS so that the hub can
// alias it; only Linux uses it.
const DefaultKeytab = "/etc/krb5.keytab"

// setBinaries fills the unset control-plane binary paths of a Systemd
// runtime with DefaultBinDir/<component>; the etcd binary only for a local
// etcd.
func setBinaries(cp *ControlPlane) {
	if cp.Binaries == nil {
		cp.Binaries = &ControlPlaneBinaries{}
	}
	b := cp.Binaries
	if cp.Etcd.External == nil {
		setString(&b.Etcd, DefaultBinDir+"/etcd")
	}
	setString(&b.KubeAPIServer, DefaultBinDir+"/kube-apiserver")
	setString(&b.KubeControllerManager, DefaultBinDir+"/kube-controller-manager")
	setString(&b.KubeScheduler, DefaultBinDir+"/kube-scheduler")
}
