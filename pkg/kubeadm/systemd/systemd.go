package systemd

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	controlplanephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	etcdphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/etcd"
	kubeadmconfig "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"
	staticpodutil "k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

// SystemdControlPlane derives the systemd units of the Systemd runtime
// (spec.controlPlane.runtime: Systemd) from the pod specs kubeadm's own
// manifest code builds (controlplane.GetStaticPodSpecs, etcd.GetEtcdPodSpec)
// for the same kubeadm configuration the kubeadm phases run with, patched
// by the same patches directory. So each unit's command line, flags,
// extraArgs, certificate paths and environment are exactly those of the
// static pod kubeadm would have written.
type SystemdControlPlane struct {
	cfg      *kubeadmapi.InitConfiguration
	binaries machineadm.ControlPlaneBinaries
	// kubeconfigDir is kubeadm's /etc/kubernetes.
	kubeconfigDir string
}

// The accounts the units run as (cpunits.Accounts): kubeadm's own names
// for its RootlessControlPlane feature, but "etcd" for etcd (CIS 1.1.12),
// TestAccountNamesAreKubeadms.
const (
	EtcdUser                  = cpunits.EtcdUser
	APIServerUser             = cpunits.APIServerUser
	ControllerManagerUser     = cpunits.ControllerManagerUser
	SchedulerUser             = cpunits.SchedulerUser
	componentDocs             = "https://kubernetes.io/docs/reference/command-line-tools-reference/"
	etcdDocs                  = "https://etcd.io/docs/"
	unprivilegedPortThreshold = 1024
)

// NewSystemdControlPlane returns the derivation for an Init: docs are
// loaded through kubeadm's own path (BytesToInitConfiguration: decoding,
// defaults, dynamic defaults such as the node name and advertise address),
// as the kubeadm phases load them.
func NewSystemdControlPlane(cfg *machineadm.MachineBootstrapConfig, docs *translate.Documents) (*SystemdControlPlane, error) {
	b, err := systemdBinaries(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Spec.Action != machineadm.ActionInit {
		return nil, fmt.Errorf("NewSystemdControlPlane is for action Init; a Join uses NewSystemdControlPlaneJoin")
	}
	ic, err := loadInitConfiguration(docs.YAML)
	if err != nil {
		return nil, err
	}
	return &SystemdControlPlane{cfg: ic, binaries: b, kubeconfigDir: kubeadmconstants.KubernetesDir}, nil
}

// newSystemdControlPlaneFrom wraps an InitConfiguration (a Join's, fetched
// from the cluster).
func newSystemdControlPlaneFrom(cfg *machineadm.MachineBootstrapConfig, ic *kubeadmapi.InitConfiguration) (*SystemdControlPlane, error) {
	b, err := systemdBinaries(cfg)
	if err != nil {
		return nil, err
	}
	return &SystemdControlPlane{cfg: ic, binaries: b, kubeconfigDir: kubeadmconstants.KubernetesDir}, nil
}

func systemdBinaries(cfg *machineadm.MachineBootstrapConfig) (machineadm.ControlPlaneBinaries, error) {
	cp := cfg.Spec.ControlPlane
	if cp == nil || cp.Runtime != machineadm.RuntimeSystemd || cp.Binaries == nil {
		return machineadm.ControlPlaneBinaries{}, fmt.Errorf("spec.controlPlane.runtime is not Systemd (or its binaries are not defaulted)")
	}
	return *cp.Binaries, nil
}

// NodeName is the node name kubeadm uses (its dynamic default when the
// spec has none).
func (s *SystemdControlPlane) NodeName() string { return s.cfg.NodeRegistration.Name }

// LocalEtcd says whether this node runs an etcd member.
func (s *SystemdControlPlane) LocalEtcd() bool { return s.cfg.Etcd.Local != nil }

// EtcdMember is one member of the etcd cluster (kubeadm etcdutil.Member).
type EtcdMember struct {
	// Name is the member name (the node name).
	Name string
	// PeerURL is its peer URL, for example "https://10.0.0.1:2380".
	PeerURL string
}

// EtcdComponent is the local etcd member's unit: kubeadm's etcd pod
// (GetEtcdPodSpec) for this node; initialCluster is empty on Init and the
// member list returned by the member add on Join (kubeadm then adds
// --initial-cluster-state=existing).
func (s *SystemdControlPlane) EtcdComponent(initialCluster []EtcdMember) (cpunits.Component, error) {
	if !s.LocalEtcd() {
		return cpunits.Component{}, fmt.Errorf("the cluster uses an external etcd: no local etcd unit")
	}
	var members []etcdutil.Member
	for _, m := range initialCluster {
		members = append(members, etcdutil.Member{Name: m.Name, PeerURL: m.PeerURL})
	}
	pod := etcdphase.GetEtcdPodSpec(&s.cfg.ClusterConfiguration, &s.cfg.LocalAPIEndpoint, s.NodeName(), members)
	c, err := s.component(kubeadmconstants.Etcd, "etcd member of the Kubernetes control plane (machineadm, kubeadm's flags)", etcdDocs, s.binaries.Etcd, &pod)
	if err != nil {
		return c, err
	}
	c.User, c.Group = EtcdUser, EtcdUser
	return c, nil
}

// ControlPlaneComponents are the units of kube-apiserver,
// kube-controller-manager and kube-scheduler, in that order, from kubeadm's
// GetStaticPodSpecs.
func (s *SystemdControlPlane) ControlPlaneComponents() ([]cpunits.Component, error) {
	pods := controlplanephase.GetStaticPodSpecs(&s.cfg.ClusterConfiguration, &s.cfg.LocalAPIEndpoint, nil)
	specs := []struct {
		name, desc, bin, user string
	}{
		{kubeadmconstants.KubeAPIServer, "Kubernetes API server", s.binaries.KubeAPIServer, APIServerUser},
		{kubeadmconstants.KubeControllerManager, "Kubernetes controller manager", s.binaries.KubeControllerManager, ControllerManagerUser},
		{kubeadmconstants.KubeScheduler, "Kubernetes scheduler", s.binaries.KubeScheduler, SchedulerUser},
	}
	var out []cpunits.Component
	for _, sp := range specs {
		pod, ok := pods[sp.name]
		if !ok {
			return nil, fmt.Errorf("kubeadm built no pod spec for %s", sp.name)
		}
		c, err := s.component(sp.name, sp.desc+" (machineadm, kubeadm's flags)", componentDocs+sp.name+"/", sp.bin, &pod)
		if err != nil {
			return nil, err
		}
		c.User, c.Group = sp.user, sp.user
		switch sp.name {
		case kubeadmconstants.KubeAPIServer:
			if s.LocalEtcd() {
				c.After = []string{"etcd.service"}
			}
			if s.cfg.LocalAPIEndpoint.BindPort < unprivilegedPortThreshold {
				c.Capabilities = []string{"CAP_NET_BIND_SERVICE"}
			}
		default:
			c.After = []string{"kube-apiserver.service"}
		}
		if sp.name == kubeadmconstants.KubeScheduler {
			c.InaccessiblePaths = append(c.InaccessiblePaths, s.cfg.CertificatesDir)
		}
		out = append(out, c)
	}
	return out, nil
}

// component turns kubeadm's pod, after the patches of the configuration's
// patches directory (as kubeadm applies them), into a unit: the container's
// command and args with the binary path in front, its environment, and
// the host paths it may write.
func (s *SystemdControlPlane) component(name, desc, docs, binary string, pod *v1.Pod) (cpunits.Component, error) {
	if s.cfg.Patches != nil && s.cfg.Patches.Directory != "" {
		patched, err := staticpodutil.PatchStaticPod(pod, s.cfg.Patches.Directory, io.Discard)
		if err != nil {
			return cpunits.Component{}, fmt.Errorf("patching the %s pod spec: %w", name, err)
		}
		pod = patched
	}
	if len(pod.Spec.Containers) != 1 {
		return cpunits.Component{}, fmt.Errorf("kubeadm's %s pod has %d containers, want 1", name, len(pod.Spec.Containers))
	}
	ctr := pod.Spec.Containers[0]
	if len(ctr.Command) == 0 {
		return cpunits.Component{}, fmt.Errorf("kubeadm's %s pod has no command", name)
	}
	c := cpunits.Component{
		Name:          name,
		Description:   desc,
		Documentation: docs,
		Command:       append(append([]string{binary}, ctr.Command[1:]...), ctr.Args...),
	}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil {
			return c, fmt.Errorf("the %s pod's environment variable %s comes from %v, which a unit cannot express", name, e.Name, e.ValueFrom)
		}
		c.Env = append(c.Env, cpunits.EnvVar{Name: e.Name, Value: e.Value})
	}
	c.ReadWritePaths = s.writablePaths(c.Command)
	c.Credentials = credentials(name, c.Command)
	if name != kubeadmconstants.Etcd && s.LocalEtcd() {
		c.InaccessiblePaths = []string{s.cfg.Etcd.Local.DataDir}
	}
	return c, nil
}

// writablePaths are the host paths the process writes, from its flags:
// etcd's --data-dir and --wal-dir, the API server's --audit-log-path
// directory (which a static pod would need an extraVolume for). The pod's
// other read-write hostPath mounts are not made writable: the certificate
// directory is only read, and the controller manager only reads the
// FlexVolume plugin directory.
func (s *SystemdControlPlane) writablePaths(argv []string) []string {
	var out []string
	add := func(p string) {
		if p != "" && path.IsAbs(p) && !slices.Contains(out, path.Clean(p)) {
			out = append(out, path.Clean(p))
		}
	}
	for _, a := range argv[1:] {
		name, val, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "data-dir", "wal-dir":
			add(val)
		case "audit-log-path":
			if val != "-" {
				add(filepath.Dir(val))
			}
		}
	}
	return out
}

func within(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// EtcdPathRules are the owners and modes the etcd unit c needs: the data
// directory 0700 owned by etcd:etcd, everything in it too (CIS 1.1.11 and
// 1.1.12), etcd's serving and peer keys root:root 0600 (they reach etcd
// as credentials; a host made when etcd owned them converges), and its
// other writable directories (--wal-dir) 0700 etcd:etcd, everything in
// them too when they are outside the data directory (Recursive: the
// same walk, with the same refusals; a WAL directory moved from root's
// etcd holds root's segments, which etcd must write).
func (s *SystemdControlPlane) EtcdPathRules(c cpunits.Component) []cpunits.PathRule {
	pki := s.cfg.CertificatesDir
	data := s.cfg.Etcd.Local.DataDir
	r := []cpunits.PathRule{
		{Path: data, Dir: true, Mode: 0o700, User: EtcdUser, Group: EtcdUser, Recursive: true},
		rootKey(filepath.Join(pki, kubeadmconstants.EtcdServerKeyName)),
		rootKey(filepath.Join(pki, kubeadmconstants.EtcdPeerKeyName)),
	}
	c.ReadWritePaths = slices.DeleteFunc(slices.Clone(c.ReadWritePaths), func(p string) bool { return p == path.Clean(data) })
	r = append(s.traversableDirs(filepath.Join(pki, "etcd")), r...)
	for _, w := range writableDirRules([]cpunits.Component{c}) {
		w.Recursive = !within(w.Path, data)
		r = append(r, w)
	}
	return r
}

// rootKey is the rule of a key or kubeconfig a unit reads as a
// credential: root:root 0600, as kubeadm writes it (CIS 1.1.19, 1.1.21).
func rootKey(p string) cpunits.PathRule {
	return cpunits.PathRule{Path: p, Mode: 0o600, User: "0", Group: "0"}
}

// traversableDirs are kubeadm's kubeconfig directory and certificate
// directory (and more, such as pki/etcd), root:root 0755 as kubeadm
// creates them. machineadm's own writer creates missing parents 0700
// (when it imports spec.controlPlane.pki.dir); kube-bench's 1.1.19 wants
// the directories root-owned too.
func (s *SystemdControlPlane) traversableDirs(more ...string) []cpunits.PathRule {
	var r []cpunits.PathRule
	for _, d := range append([]string{s.kubeconfigDir, s.cfg.CertificatesDir}, more...) {
		r = append(r, cpunits.PathRule{Path: d, Dir: true, Mode: 0o755, User: "0", Group: "0"})
	}
	return r
}

// writableDirRules create the writable directories of comps (other than
// etcd's data directory, which EtcdPathRules covers) 0700 for the
// component's user.
func writableDirRules(comps []cpunits.Component) []cpunits.PathRule {
	var r []cpunits.PathRule
	for _, c := range comps {
		for _, p := range c.ReadWritePaths {
			r = append(r, cpunits.PathRule{Path: p, Dir: true, Mode: 0o700, User: c.User, Group: c.Group})
		}
	}
	return r
}

// ControlPlanePathRules are the owners and modes the three control-plane
// units need: every key and kubeconfig they read stays root:root 0600 as
// kubeadm writes it (the units get them as credentials), which also
// brings back to root the files a host made by an older machineadm gave
// the components' accounts (their keys and kubeconfigs, and sa.key
// root:kubeadm-sa-key-readers 0640). The directories on the way are
// root:root 0755; directories the units write are created.
func (s *SystemdControlPlane) ControlPlanePathRules(comps []cpunits.Component) []cpunits.PathRule {
	pki := s.cfg.CertificatesDir
	var dirs []string
	if s.LocalEtcd() {
		dirs = append(dirs, filepath.Join(pki, "etcd"))
	}
	r := s.traversableDirs(dirs...)
	for _, name := range []string{kubeadmconstants.ServiceAccountPrivateKeyName, kubeadmconstants.ServiceAccountPublicKeyName,
		kubeadmconstants.APIServerKeyName, kubeadmconstants.APIServerKubeletClientKeyName, kubeadmconstants.FrontProxyClientKeyName} {
		r = append(r, rootKey(filepath.Join(pki, name)))
	}
	if s.LocalEtcd() {
		r = append(r, rootKey(filepath.Join(pki, kubeadmconstants.APIServerEtcdClientKeyName)))
	}
	ca := rootKey(filepath.Join(pki, kubeadmconstants.CAKeyName))
	ca.Optional = true // absent with an external CA
	r = append(r, ca,
		rootKey(filepath.Join(s.kubeconfigDir, kubeadmconstants.ControllerManagerKubeConfigFileName)),
		rootKey(filepath.Join(s.kubeconfigDir, kubeadmconstants.SchedulerKubeConfigFileName)),
	)
	return append(r, writableDirRules(comps)...)
}

// loadInitConfiguration loads Init documents through kubeadm's own path.
func loadInitConfiguration(docs []byte) (*kubeadmapi.InitConfiguration, error) {
	ic, err := kubeadmconfig.BytesToInitConfiguration(docs, true)
	if err != nil {
		return nil, fmt.Errorf("loading the kubeadm configuration: %w", err)
	}
	return ic, nil
}
