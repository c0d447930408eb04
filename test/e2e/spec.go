//go:build e2e

package e2e

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Where a machine finds the secrets the harness delivers (0600 files, never
// inline in the spec).
const (
	machinePKIDir      = "/etc/machineadm/pki"
	machineTokenFile   = "/etc/machineadm/bootstrap-token"
	machineCertKeyFile = "/etc/machineadm/certificate-key"
	machineSpecFile    = "/etc/machineadm/spec.yaml"
	reportPath         = "/var/lib/machineadm/report.json"
	// apiServerEndpoint is cp1's API server: the control-plane endpoint of
	// every scenario (there is no load balancer; cp2 joins behind it).
	apiServerEndpoint = "10.213.0.11:6443"
)

// The e2e machines' container runtime and kubelet settings, all through
// machineadm's own spec. Each one is needed for a kubelet 1.37 in a
// systemd-nspawn machine on a cgroup v1 host:
//   - restrictOOMScoreAdj: containerd here lacks CAP_SYS_RESOURCE, so the
//     negative oom_score_adj the kubelet asks for would fail;
//   - runc NoNewKeyring: nspawn's seccomp filter refuses session keyrings
//     ("unable to join session keyring");
//   - sandboxImage: the imported pause image, never pulled;
//   - failCgroupV1: false: kubelet 1.37 refuses cgroup v1 otherwise;
//   - cgroupfs driver on both sides (see cgroupDriver).
const cgroupDriver = "cgroupfs"

func containerdSettings() *machineadm.Containerd {
	return &machineadm.Containerd{
		CgroupDriver:        cgroupDriver,
		SandboxImage:        pauseImage,
		RestrictOOMScoreAdj: true,
		Runtimes: []machineadm.Runtime{{
			Name:    "runc",
			Options: map[string]any{"NoNewKeyring": true},
		}},
	}
}

func kubeletSettings(node hostsEntry) machineadm.Kubelet {
	return machineadm.Kubelet{
		// The machines have no default route, so the kubelet cannot pick its
		// address by itself.
		ExtraArgs: []machineadm.Arg{{Name: "node-ip", Value: node.IP}},
		Config:    kubeletConfig(),
	}
}

// kubeletConfig is the e2e machines' spec.node.kubelet.config, also the
// Cluster API test's MachineadmConfig's.
func kubeletConfig() map[string]any {
	return map[string]any{
		"failCgroupV1": false,
		"cgroupDriver": cgroupDriver,
		// The resolver configuration of pods with dnsPolicy Default,
		// CoreDNS's among them (see upstreamResolvConf).
		"resolvConf": upstreamResolvConfPath,
		// The machines' root filesystems are directories on the host's
		// disk, so the kubelet's disk figures are the host's: with the
		// defaults (imagefs.available<15%, image GC above 85% used) a
		// build host with 15% free tainted the nodes with disk
		// pressure, evicted pods and deleted the imported images,
		// which are never pulled back (soak run at 18:10 UTC,
		// 2026-12-01). The e2e's nodes are not what fills that disk.
		"evictionHard": map[string]any{
			"memory.available":   "100Mi",
			"nodefs.available":   "1%",
			"nodefs.inodesFree":  "1%",
			"imagefs.available":  "1%",
			"imagefs.inodesFree": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
	}
}

// upstreamResolvConf is what CoreDNS forwards names outside the cluster
// domain to. The machines have no name server (their /etc/resolv.conf is
// empty), but CoreDNS's forward plugin refuses to start without one, and
// 127.0.0.1 would make its loop plugin stop it. The harness's bridge
// address answers nothing on port 53, so such queries fail at once and
// stay on the bridge.
const upstreamResolvConfPath = "/etc/machineadm-e2e/upstream-resolv.conf"

func upstreamResolvConf() machineadm.File {
	return machineadm.File{
		Path:    upstreamResolvConfPath,
		Mode:    "0644",
		Content: "# CoreDNS's upstream in the e2e: nothing answers there\nnameserver " + bridgeIP + "\n",
	}
}

// podCIDR gives each node its own /24 of podSubnet for the bridge CNI.
func podCIDR(node hostsEntry) string {
	var n int
	fmt.Sscanf(node.IP, "10.213.0.%d", &n)
	return fmt.Sprintf("10.244.%d.0/24", n)
}

// cniConfig is the node's CNI configuration (bridge + host-local, portmap),
// delivered through spec.host.files like any site's own network setup.
// isDefaultGateway gives each pod a default route through the node's cni0,
// so traffic to Service ClusterIPs (10.96.0.0/12, no interface has them)
// reaches kube-proxy's rules on the node; no masquerading: the machines
// route each other's pod CIDRs (networkdConfig).
func cniConfig(node hostsEntry) machineadm.File {
	return machineadm.File{
		Path: "/etc/cni/net.d/10-e2e-bridge.conflist",
		Mode: "0644",
		Content: fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "e2e",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, podCIDR(node)),
	}
}

// hostSettings are the host preparation settings of every e2e machine.
func hostSettings(node hostsEntry) machineadm.Host {
	return machineadm.Host{
		// Network sysctls are per network namespace, so the machine may set
		// them; kernel modules cannot be loaded from a container (the host
		// has br_netfilter already).
		Sysctl:     map[string]string{"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"},
		Files:      []machineadm.File{cniConfig(node), upstreamResolvConf()},
		Containerd: containerdSettings(),
	}
}

// ignoredPreflight are the kubeadm preflight checks that cannot pass here:
// SystemVerification reads the kernel configuration, which a container
// does not have. (ImagePull passes: every image kubeadm lists, kube-proxy
// and CoreDNS included, is imported before the bootstrap.)
var ignoredPreflight = []string{"SystemVerification"}

func baseSpec(node hostsEntry, role machineadm.Role, action machineadm.Action) *machineadm.MachineBootstrapConfig {
	return &machineadm.MachineBootstrapConfig{
		APIVersion: machineadm.LatestAPIVersion,
		Kind:       machineadm.Kind,
		Metadata:   machineadm.ObjectMeta{Name: "e2e-" + node.Name},
		Spec: machineadm.MachineBootstrapSpec{
			Role:   role,
			Action: action,
			Kubernetes: machineadm.Kubernetes{
				Version:              kubernetesVersion,
				ControlPlaneEndpoint: apiServerEndpoint,
				ImageRepository:      imageRepository,
				Networking:           machineadm.Networking{PodSubnet: podSubnet},
			},
			Node: machineadm.Node{
				Name:                  node.Name,
				IgnorePreflightErrors: ignoredPreflight,
				Kubelet:               kubeletSettings(node),
			},
			Host: hostSettings(node),
		},
	}
}

// controlPlaneSpec is the spec of a control-plane node: Init on cp1 (with
// the CA set from `machineadm pki init` and the bootstrap token the workers
// use), Join with the certificate key elsewhere.
func controlPlaneSpec(node hostsEntry, action machineadm.Action, caHash string) *machineadm.MachineBootstrapConfig {
	s := baseSpec(node, machineadm.RoleControlPlane, action)
	cp := &machineadm.ControlPlane{
		AdvertiseAddress: node.IP,
		CertificateKey:   &machineadm.SecretSource{File: machineCertKeyFile},
	}
	if action == machineadm.ActionInit {
		cp.PKI = machineadm.PKI{Dir: machinePKIDir}
		// No controller-manager flags: machineadm's own defaults for a
		// control plane it initialises make the first worker's join fast
		// (kubeadm.ControllerManagerDefaultArgs; docs/design.md "The first
		// worker's join").
		cp.BootstrapTokens = []machineadm.BootstrapToken{{
			Token: machineadm.SecretSource{File: machineTokenFile}, TTL: "2h", Description: "machineadm e2e",
		}}
	} else {
		s.Spec.Join = joinSettings(caHash)
	}
	s.Spec.ControlPlane = cp
	return s
}

// workerSpec is the spec of a worker that joins with the bootstrap token,
// pinning the cluster CA by caHash.
func workerSpec(node hostsEntry, caHash string) *machineadm.MachineBootstrapConfig {
	s := baseSpec(node, machineadm.RoleWorker, machineadm.ActionJoin)
	s.Spec.Join = joinSettings(caHash)
	return s
}

func joinSettings(caHash string) *machineadm.Join {
	return &machineadm.Join{
		APIServerEndpoint: apiServerEndpoint,
		Token:             machineadm.SecretSource{File: machineTokenFile},
		CACertHashes:      []string{caHash},
		Timeout:           "2m",
	}
}

// specYAML renders a spec as the YAML a user would write.
func specYAML(s *machineadm.MachineBootstrapConfig) ([]byte, error) {
	return yaml.Marshal(s)
}
