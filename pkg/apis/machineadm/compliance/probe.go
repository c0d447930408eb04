package compliance

// ProbeKind is what a probe evaluates.
type ProbeKind string

const (
	// ProbeFileMode: every path of File has no permission bit outside Max
	// (kube-bench's "bitmask" comparison).
	ProbeFileMode ProbeKind = "file-mode"
	// ProbeFileOwner: every path of File is owned by Owner ("user:group").
	ProbeFileOwner ProbeKind = "file-owner"
	// ProbeFlag: Component's effective flag Flag compares with Value by
	// Op (for the kubelet: its command line, then its configuration file).
	ProbeFlag ProbeKind = "flag"
	// ProbeAnonymous: the API server's anonymous requests are off
	// (--anonymous-auth=false) or limited by its AuthenticationConfiguration
	// to health paths and the cluster-info ConfigMap (a warning: limited,
	// not off).
	ProbeAnonymous ProbeKind = "anonymous"
	// ProbeEncryption: the API server's encryption configuration's first
	// provider for secrets is aescbc, secretbox or kms (not aesgcm, which
	// CIS 1.2.28 does not accept).
	ProbeEncryption ProbeKind = "encryption"
)

// File names a file (or a set of files) a probe looks at; the evidence
// resolves each to machine paths.
type File string

// The files of the probes.
const (
	FileAPIServerPod          File = "kube-apiserver manifest or unit"
	FileControllerManagerPod  File = "kube-controller-manager manifest or unit"
	FileSchedulerPod          File = "kube-scheduler manifest or unit"
	FileEtcdPod               File = "etcd manifest or unit"
	FileEtcdDataDir           File = "etcd data directory"
	FileAdminConf             File = "admin.conf and super-admin.conf"
	FileSchedulerConf         File = "scheduler.conf"
	FileControllerManagerConf File = "controller-manager.conf"
	FilePKI                   File = "PKI directory and files"
	FilePKICerts              File = "PKI certificates"
	FilePKIKeys               File = "PKI keys"
	FileKubeletService        File = "kubelet service files"
	FileKubeletConf           File = "kubelet.conf"
	FileKubeletConfig         File = "kubelet config.yaml"
	FileKubeletCA             File = "kubelet client CA file"
	FileProxyKubeconfig       File = "kube-proxy kubeconfig"
)

// Op compares a flag's value.
type Op string

// The comparisons (kube-bench's names where it has one).
const (
	// OpSet: the flag is given (any value).
	OpSet Op = "set"
	// OpUnset: the flag is not given.
	OpUnset Op = "unset"
	// OpEq: the value is Value ("false" matches "False").
	OpEq Op = "eq"
	// OpNotEq: the value is not Value.
	OpNotEq Op = "noteq"
	// OpGTE: the value is an integer at least Value.
	OpGTE Op = "gte"
	// OpHas: the comma-separated value has the element Value.
	OpHas Op = "has"
	// OpNotHas: the comma-separated value lacks the element Value.
	OpNotHas Op = "nothave"
	// OpValidElements: every comma-separated element is one of Value's.
	OpValidElements Op = "valid_elements"
)

// Component names a process a flag probe reads.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Etcd                  = "etcd"
	Kubelet               = "kubelet"
	KubeProxy             = "kube-proxy"
)

// Probe is what the evidence evaluates for one check.
type Probe struct {
	// Kind is what it evaluates.
	Kind ProbeKind
	// File is the file of a file-mode or file-owner probe.
	File File
	// Max is the most permissive mode of a file-mode probe (0o600).
	Max uint32
	// Owner is the "user:group" of a file-owner probe.
	Owner string
	// Component is the process of a flag probe.
	Component string
	// Flag is the flag's name without "--".
	Flag string
	// Op and Value compare the flag's value.
	Op    Op
	Value string
	// UnsetOK makes an absent flag pass (kube-bench's "or flag not set").
	UnsetOK bool
}

func mode(f File, max uint32) *Probe { return &Probe{Kind: ProbeFileMode, File: f, Max: max} }
func owner(f File, o string) *Probe  { return &Probe{Kind: ProbeFileOwner, File: f, Owner: o} }
func flag(c, name string, op Op, v string) *Probe {
	return &Probe{Kind: ProbeFlag, Component: c, Flag: name, Op: op, Value: v}
}
func flagOrUnset(c, name string, op Op, v string) *Probe {
	p := flag(c, name, op, v)
	p.UnsetOK = true
	return p
}
