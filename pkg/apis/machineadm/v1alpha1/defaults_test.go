package v1alpha1

import (
	"encoding/json"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// minimal returns a spec with only role and action set, plus the sections
// whose presence switches defaults on (join, one of each list element,
// containerd).
func minimal(role Role, action Action) *MachineBootstrapConfig {
	c := &MachineBootstrapConfig{APIVersion: APIVersion, Kind: Kind}
	c.Spec.Role, c.Spec.Action = role, action
	c.Spec.Kubernetes.Version = "v1.37.2"
	if action != ActionInit {
		c.Spec.Join = &Join{}
	}
	if role == RoleControlPlane && action == ActionInit {
		c.Spec.ControlPlane = &ControlPlane{BootstrapTokens: []BootstrapToken{{}}}
	}
	c.Spec.Host.Files = []File{{Path: "/etc/x"}}
	c.Spec.Host.Containerd = &Containerd{
		Runtimes:   []Runtime{{Name: "kata"}},
		Registries: []Registry{{Host: "docker.io", Mirrors: []Mirror{{URL: "https://m.example"}}}},
	}
	return c
}

func TestSetDefaultsPerRoleAndAction(t *testing.T) {
	cpTaints := &[]Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"}}
	for _, tc := range []struct {
		role   Role
		action Action
	}{{RoleControlPlane, ActionInit}, {RoleControlPlane, ActionJoin}, {RoleWorker, ActionJoin}, {RoleWorker, ""}} {
		t.Run(string(tc.role)+"/"+string(tc.action), func(t *testing.T) {
			c := minimal(tc.role, tc.action)
			SetDefaults(c)
			s := c.Spec
			check := func(name string, got, want any) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", name, got, want)
				}
			}
			wantAction := tc.action
			if wantAction == "" {
				wantAction = ActionJoin
			}
			check("action", s.Action, wantAction)
			check("kubernetes.clusterName", s.Kubernetes.ClusterName, "kubernetes")
			check("kubernetes.imageRepository", s.Kubernetes.ImageRepository, "registry.k8s.io")
			check("kubernetes.networking.serviceSubnet", s.Kubernetes.Networking.ServiceSubnet, "10.96.0.0/12")
			check("kubernetes.networking.dnsDomain", s.Kubernetes.Networking.DNSDomain, "cluster.local")
			check("kubernetes.networking.podSubnet", s.Kubernetes.Networking.PodSubnet, "")
			check("node.criSocket", s.Node.CRISocket, "unix:///run/containerd/containerd.sock")
			check("node.name", s.Node.Name, "") // chosen at run time from the host name
			check("report.path", s.Report.Path, "/var/lib/machineadm/report.json")
			check("report.sentinel", s.Report.Sentinel, "/run/cluster-api/bootstrap-success.complete")
			check("report.console", s.Report.Console, ptr(true))
			check("host.files[0].mode", s.Host.Files[0].Mode, "0644")
			check("host.files[0].owner", s.Host.Files[0].Owner, "0")
			check("host.files[0].group", s.Host.Files[0].Group, "0")
			check("host.containerd.configFile", s.Host.Containerd.ConfigFile, "/etc/containerd/config.toml")
			check("host.containerd.cgroupDriver", s.Host.Containerd.CgroupDriver, "systemd")
			check("host.containerd.configVersion", s.Host.Containerd.ConfigVersion, 0) // chosen from the installed containerd
			check("host.containerd.defaultRuntime", s.Host.Containerd.DefaultRuntime, "runc")
			check("host.containerd.runtimes[0].type", s.Host.Containerd.Runtimes[0].Type, "io.containerd.runc.v2")
			check("host.containerd.registries[0].mirrors[0].capabilities", s.Host.Containerd.Registries[0].Mirrors[0].Capabilities, []string{"pull", "resolve"})
			if s.Join != nil {
				check("join.timeout", s.Join.Timeout, "5m")
				check("join.unsafeSkipCAVerification", s.Join.UnsafeSkipCAVerification, false)
			}

			if tc.role == RoleWorker {
				check("controlPlane", s.ControlPlane, (*ControlPlane)(nil))
				check("node.taints", s.Node.Taints, (*[]Taint)(nil))
				return
			}
			cp := s.ControlPlane
			if cp == nil {
				t.Fatal("controlPlane not created for role ControlPlane")
			}
			check("controlPlane.bindPort", cp.BindPort, int32(6443))
			check("controlPlane.advertiseAddress", cp.AdvertiseAddress, "") // kubeadm chooses
			check("controlPlane.pki.certificatesDir", cp.PKI.CertificatesDir, "/etc/kubernetes/pki")
			check("controlPlane.pki.encryptionAlgorithm", cp.PKI.EncryptionAlgorithm, "ECDSA-P256")
			check("controlPlane.pki.dir", cp.PKI.Dir, "")
			check("controlPlane.runtime", cp.Runtime, RuntimeStaticPods)
			check("controlPlane.binaries", cp.Binaries, (*ControlPlaneBinaries)(nil))
			check("controlPlane.etcd.local", cp.Etcd.Local, &LocalEtcd{DataDir: "/var/lib/etcd"})
			check("controlPlane.etcd.external", cp.Etcd.External, (*ExternalEtcd)(nil))
			check("node.taints", s.Node.Taints, cpTaints)
			if tc.action == ActionInit {
				tok := cp.BootstrapTokens[0]
				check("bootstrapTokens[0].ttl", tok.TTL, "24h")
				check("bootstrapTokens[0].groups", tok.Groups, []string{"system:bootstrappers:kubeadm:default-node-token"})
				check("bootstrapTokens[0].usages", tok.Usages, []string{"signing", "authentication"})
			}
		})
	}
}

// TestSetDefaultsKeepsUserValues gives a value to every field by reflection
// (so fields added later are covered) and expects SetDefaults to change
// nothing.
func TestSetDefaultsKeepsUserValues(t *testing.T) {
	for _, role := range []Role{RoleControlPlane, RoleWorker} {
		c := fullConfig(t)
		c.Spec.Role = role
		c.Spec.ControlPlane.Etcd.External = nil // local and external are exclusive
		before, _ := json.Marshal(c)
		SetDefaults(c)
		after, _ := json.Marshal(c)
		if string(before) != string(after) {
			t.Errorf("role %s: SetDefaults changed user values:\n before %s\n after  %s", role, before, after)
		}
	}
}

// TestSetDefaultsKeepsExplicitChoices covers values that look like "unset"
// but are deliberate: an explicit empty taint list, console false, an
// external etcd.
func TestSetDefaultsKeepsExplicitChoices(t *testing.T) {
	c := minimal(RoleControlPlane, ActionInit)
	c.Spec.Node.Taints = &[]Taint{}
	c.Spec.Report.Console = ptr(false)
	c.Spec.ControlPlane.Etcd.External = &ExternalEtcd{Endpoints: []string{"https://192.0.2.1:2379"}}
	SetDefaults(c)
	if c.Spec.Node.Taints == nil || len(*c.Spec.Node.Taints) != 0 {
		t.Errorf("explicit empty taints replaced: %#v", c.Spec.Node.Taints)
	}
	if *c.Spec.Report.Console {
		t.Errorf("report.console false overridden")
	}
	if c.Spec.ControlPlane.Etcd.Local != nil {
		t.Errorf("local etcd added next to an external one: %#v", c.Spec.ControlPlane.Etcd.Local)
	}
}

func TestSetDefaultsIdempotent(t *testing.T) {
	for _, c := range []*MachineBootstrapConfig{
		minimal(RoleControlPlane, ActionInit), minimal(RoleControlPlane, ActionJoin),
		minimal(RoleWorker, ActionJoin), minimal(RoleWorker, ""),
		{APIVersion: APIVersion, Kind: Kind},
	} {
		SetDefaults(c)
		once, _ := json.Marshal(c)
		SetDefaults(c)
		twice, _ := json.Marshal(c)
		if string(once) != string(twice) {
			t.Errorf("second SetDefaults changed the spec:\n once  %s\n twice %s", once, twice)
		}
	}
}

// TestSetDefaultsSystemdBinaries: the Systemd runtime gets the default
// binary paths (no etcd binary with an external etcd), and a path the user
// gave is kept.
func TestSetDefaultsSystemdBinaries(t *testing.T) {
	c := minimal(RoleControlPlane, ActionInit)
	c.Spec.ControlPlane.Runtime = RuntimeSystemd
	c.Spec.ControlPlane.Binaries = &ControlPlaneBinaries{KubeAPIServer: "/opt/k8s/kube-apiserver"}
	SetDefaults(c)
	want := &ControlPlaneBinaries{
		Etcd:                  "/usr/local/bin/etcd",
		KubeAPIServer:         "/opt/k8s/kube-apiserver",
		KubeControllerManager: "/usr/local/bin/kube-controller-manager",
		KubeScheduler:         "/usr/local/bin/kube-scheduler",
	}
	if got := c.Spec.ControlPlane.Binaries; !reflect.DeepEqual(got, want) {
		t.Errorf("binaries = %#v, want %#v", got, want)
	}

	ext := minimal(RoleControlPlane, ActionJoin)
	ext.Spec.ControlPlane = &ControlPlane{Runtime: RuntimeSystemd, Etcd: Etcd{External: &ExternalEtcd{Endpoints: []string{"https://10.0.0.10:2379"}}}}
	SetDefaults(ext)
	if got := ext.Spec.ControlPlane.Binaries; got == nil || got.Etcd != "" || got.KubeScheduler != "/usr/local/bin/kube-scheduler" {
		t.Errorf("external etcd binaries = %#v, want no etcd binary and the default scheduler", got)
	}
}
