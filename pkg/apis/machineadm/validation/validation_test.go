package validation

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

type spec = machineadm.MachineBootstrapConfig

// vcase breaks (or bends) one rule of a valid base spec and lists every
// error and warning expected, each by exact field path.
type vcase struct {
	name   string
	base   baseKind
	mutate func(c *spec)
	want   []fe
	warn   []string // warning field paths
	secret string   // must not appear in any message
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base(t, tc.base)
			tc.mutate(c)
			r := Validate(c)
			if got, want := errorSet(r.Errors), wantSet(tc.want); !slices.Equal(got, want) {
				t.Errorf("errors:\n got  %q\n want %q\n messages:\n  %v", got, want, r.Errors)
			}
			var warns []string
			for _, w := range r.Warnings {
				warns = append(warns, w.Field)
			}
			slices.Sort(warns)
			slices.Sort(tc.warn)
			if !slices.Equal(warns, tc.warn) {
				t.Errorf("warnings: got %q, want %q (%v)", warns, tc.warn, r.Warnings)
			}
			if tc.secret != "" {
				all := r.Errors.ToAggregate()
				text := ""
				if all != nil {
					text = all.Error()
				}
				for _, w := range r.Warnings {
					text += "\n" + w.String()
				}
				if strings.Contains(text, tc.secret) {
					t.Errorf("a message reveals the secret value:\n%s", text)
				}
			}
		})
	}
}

func TestValidateTopLevel(t *testing.T) {
	runCases(t, []vcase{
		{name: "role missing", base: worker, mutate: func(c *spec) { c.Spec.Role = "" }, want: []fe{{"spec.role", req}}},
		{name: "role unknown", base: worker, mutate: func(c *spec) { c.Spec.Role = "Master" }, want: []fe{{"spec.role", nsup}}},
		{name: "role unknown, no join: the role alone", base: worker, mutate: func(c *spec) { c.Spec.Role, c.Spec.Join = "Bogus", nil }, want: []fe{{"spec.role", nsup}}},
		{name: "action unknown", base: worker, mutate: func(c *spec) { c.Spec.Action = "Create" }, want: []fe{{"spec.action", nsup}}},
		{name: "Init needs role ControlPlane", base: worker, mutate: func(c *spec) {
			c.Spec.Action, c.Spec.Join = machineadm.ActionInit, nil
		}, want: []fe{{"spec.action", inv}}},
		{name: "Init forbids join", base: cpInit, mutate: func(c *spec) {
			c.Spec.Join = base(t, worker).Spec.Join
		}, want: []fe{{"spec.join", forb}}},
		{name: "Join needs join", base: worker, mutate: func(c *spec) { c.Spec.Join = nil }, want: []fe{{"spec.join", req}}},
		{name: "worker forbids controlPlane", base: worker, mutate: func(c *spec) {
			c.Spec.ControlPlane = base(t, cpJoin).Spec.ControlPlane
		}, want: []fe{{"spec.controlPlane", forb}}},
		{name: "worker with an empty controlPlane: one error, no follow-ons", base: worker, mutate: func(c *spec) {
			c.Spec.ControlPlane = &machineadm.ControlPlane{}
		}, want: []fe{{"spec.controlPlane", forb}}},
		{name: "every error at once", base: worker, mutate: func(c *spec) {
			c.Spec.Kubernetes.Version = "latest"
			c.Spec.Join.Token.File = "token"
			c.Spec.Host.Files[1].Mode = "4755"
		}, want: []fe{{"spec.kubernetes.version", inv}, {"spec.join.token.file", inv}, {"spec.host.files[1].mode", inv}}},
	})
}

func TestValidateKubernetes(t *testing.T) {
	set := func(f func(k *machineadm.Kubernetes)) func(c *spec) {
		return func(c *spec) { f(&c.Spec.Kubernetes) }
	}
	runCases(t, []vcase{
		{name: "version missing", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Version = "" }), want: []fe{{"spec.kubernetes.version", req}}},
		{name: "version without v", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Version = "1.37.2" }), want: []fe{{"spec.kubernetes.version", inv}}},
		{name: "version without patch", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Version = "v1.37" }), want: []fe{{"spec.kubernetes.version", inv}}},
		{name: "version pre-release ok", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Version = "v1.38.0-alpha.1" })},
		{name: "endpoint port 0", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "cp.example:0" }), want: []fe{{"spec.kubernetes.controlPlaneEndpoint", inv}}},
		{name: "endpoint empty port", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "cp.example:" }), want: []fe{{"spec.kubernetes.controlPlaneEndpoint", inv}}},
		{name: "endpoint bad host", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "cp_1.example:6443" }), want: []fe{{"spec.kubernetes.controlPlaneEndpoint", inv}}},
		{name: "endpoint without port ok", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "cp.example" })},
		{name: "endpoint IPv6 ok", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "[fd00::1]:6443" })},
		{name: "endpoint bracketed IPv6 without port ok", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "[fd00::1]" })},
		{name: "endpoint bare IPv6 ok", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ControlPlaneEndpoint = "fd00::1" })},
		{name: "clusterName not DNS", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.ClusterName = "Demo_Cluster" }), want: []fe{{"spec.kubernetes.clusterName", inv}}},
		{name: "podSubnet not CIDR", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.PodSubnet = "10.244.0.0" }), want: []fe{{"spec.kubernetes.networking.podSubnet", inv}}},
		{name: "podSubnet dual stack ok", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.PodSubnet = "10.244.0.0/16, fd00:10:244::/56" })},
		{name: "podSubnet with host bits", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.PodSubnet = "10.244.1.0/16" }), want: []fe{{"spec.kubernetes.networking.podSubnet", inv}}},
		{name: "IPv6 podSubnet with host bits", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.PodSubnet = "10.244.0.0/16,fd00:10:244::1/56" }), want: []fe{{"spec.kubernetes.networking.podSubnet", inv}}},
		{name: "serviceSubnet with host bits", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.ServiceSubnet = "10.96.0.10/12" }), want: []fe{{"spec.kubernetes.networking.serviceSubnet", inv}}},
		{name: "podSubnet two IPv4", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.PodSubnet = "10.244.0.0/16,10.245.0.0/16" }), want: []fe{{"spec.kubernetes.networking.podSubnet", inv}}},
		{name: "serviceSubnet three CIDRs", base: worker, mutate: set(func(k *machineadm.Kubernetes) {
			k.Networking.ServiceSubnet = "10.96.0.0/12,fd00::/108,10.97.0.0/16"
		}), want: []fe{{"spec.kubernetes.networking.serviceSubnet", inv}}},
		{name: "dnsDomain not DNS", base: worker, mutate: set(func(k *machineadm.Kubernetes) { k.Networking.DNSDomain = "Cluster_Local" }), want: []fe{{"spec.kubernetes.networking.dnsDomain", inv}}},
	})
}

func TestValidateControlPlane(t *testing.T) {
	cp := func(f func(cp *machineadm.ControlPlane)) func(c *spec) {
		return func(c *spec) { f(c.Spec.ControlPlane) }
	}
	const p = "spec.controlPlane."
	runCases(t, []vcase{
		{name: "advertiseAddress not IP", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.AdvertiseAddress = "cp1.example" }), want: []fe{{p + "advertiseAddress", inv}}},
		{name: "bindPort too big", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.BindPort = 70000 }), want: []fe{{p + "bindPort", inv}}},
		{name: "extraArgs with dashes", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.APIServer.ExtraArgs = []machineadm.Arg{{Name: "audit-log-maxage", Value: "3"}, {Name: "--audit", Value: "x"}}
			cp.ControllerManager.ExtraArgs = []machineadm.Arg{{Name: "Bind"}}
			cp.Scheduler.ExtraArgs = []machineadm.Arg{{Name: ""}}
		}), want: []fe{{p + "apiServer.extraArgs[1].name", inv}, {p + "controllerManager.extraArgs[0].name", inv}, {p + "scheduler.extraArgs[0].name", inv}}},
		{name: "extraArgs value with a line break", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.APIServer.ExtraArgs = []machineadm.Arg{{Name: "v", Value: "1\nExecStartPre=/bin/sh -c secret-x1"}}
			cp.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "name", Value: "a\x1b]0;t\x07"}}
		}), want: []fe{{p + "apiServer.extraArgs[0].value", inv}, {p + "scheduler.extraArgs[0].value", inv}}, secret: "secret-x1"},
		{name: "certSAN not DNS", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.APIServer.CertSANs = append(cp.APIServer.CertSANs, "bad_san") }), want: []fe{{p + "apiServer.certSANs[3]", inv}}},
		{name: "etcd local and external", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd.External = &machineadm.ExternalEtcd{Endpoints: []string{"http://192.0.2.1:2379"}}
		}), want: []fe{{p + "etcd", forb}}},
		{name: "etcd local fields", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd.Local.DataDir = "var/lib/etcd"
			cp.Etcd.Local.ExtraArgs = []machineadm.Arg{{Name: "--quota"}}
			cp.Etcd.Local.ServerCertSANs = []string{"etcd.example", "not a name"}
			cp.Etcd.Local.PeerCertSANs = []string{"-bad-"}
		}), want: []fe{{p + "etcd.local.dataDir", inv}, {p + "etcd.local.extraArgs[0].name", inv}, {p + "etcd.local.serverCertSANs[1]", inv}, {p + "etcd.local.peerCertSANs[0]", inv}}},
		{name: "external etcd without endpoints", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{}}
		}), want: []fe{{p + "etcd.external.endpoints", req}}},
		{name: "external etcd endpoint not URL", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{Endpoints: []string{"http://192.0.2.1:2379", "192.0.2.2:2379", "https:///x"}}}
		}), want: []fe{{p + "etcd.external.endpoints[1]", inv}, {p + "etcd.external.endpoints[2]", inv}}},
		// kube-apiserver's --etcd-servers is the endpoints joined by
		// commas: one with a comma in it is several, and its second half
		// escapes the https-only rule.
		{name: "external etcd endpoint with a comma", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{Endpoints: []string{"https://192.0.2.1:2379/,http://192.0.2.2:2379", "https://a,b:2379"}, CAFile: "/e/ca.crt", CertFile: "/e/c.crt", KeyFile: "/e/c.key"}}
		}), want: []fe{{p + "etcd.external.endpoints[0]", inv}, {p + "etcd.external.endpoints[1]", inv}}},
		{name: "external etcd TLS files come as a set", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{Endpoints: []string{"https://192.0.2.1:2379"}, CertFile: "/etc/etcd/client.crt"}}
		}), want: []fe{{p + "etcd.external.caFile", req}, {p + "etcd.external.keyFile", req}}},
		{name: "external etcd TLS needs https", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{Endpoints: []string{"http://192.0.2.1:2379"}, CAFile: "/e/ca.crt", CertFile: "/e/c.crt", KeyFile: "relative.key"}}
		}), want: []fe{{p + "etcd.external.endpoints[0]", inv}, {p + "etcd.external.keyFile", inv}}},
		{name: "external etcd files the root directory", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{Endpoints: []string{"https://192.0.2.1:2379"}, CAFile: "/", CertFile: "/", KeyFile: "/"}}
		}), want: []fe{{p + "etcd.external.caFile", inv}, {p + "etcd.external.certFile", inv}, {p + "etcd.external.keyFile", inv}}},
		{name: "certificateKey file the root directory", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.CertificateKey = &machineadm.SecretSource{File: "/"}
		}), want: []fe{{p + "certificateKey.file", inv}}},
		{name: "pki paths", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.PKI.Dir = "/etc/machineadm/../pki"
			cp.PKI.CertificatesDir = "/etc/kubernetes/pki/"
		}), want: []fe{{p + "pki.dir", inv}, {p + "pki.certificatesDir", inv}}},
		{name: "certificatesDir missing", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.PKI.CertificatesDir = "" }), want: []fe{{p + "pki.certificatesDir", req}}},
		{name: "renewBefore not a duration", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.PKI.RenewBefore = "30d" }), want: []fe{{p + "pki.renewBefore", inv}}},
		{name: "renewBefore negative", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.PKI.RenewBefore = "-1h" }), want: []fe{{p + "pki.renewBefore", inv}}},
		{name: "renewBefore the certificates' lifetime", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.PKI.RenewBefore = "8760h" }), want: []fe{{p + "pki.renewBefore", inv}}},
		{name: "renewBefore a century", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.PKI.RenewBefore = "876000h" }), want: []fe{{p + "pki.renewBefore", inv}}},
		{name: "encryptionAlgorithm unknown", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.PKI.EncryptionAlgorithm = "RSA-1024" }), want: []fe{{p + "pki.encryptionAlgorithm", nsup}}},
		{name: "certificateKey value and file", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.CertificateKey = &machineadm.SecretSource{Value: validCertKey, File: "/k"}
		}), want: []fe{{p + "certificateKey", forb}}, secret: validCertKey},
		{name: "certificateKey empty", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.CertificateKey = &machineadm.SecretSource{} }), want: []fe{{p + "certificateKey", req}}},
		{name: "certificateKey bad value is not echoed", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.CertificateKey = &machineadm.SecretSource{Value: "NOT-HEX-SECRET-0123"}
		}), want: []fe{{p + "certificateKey.value", inv}}, secret: "NOT-HEX-SECRET-0123"},
		{name: "certificateKey file relative", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.CertificateKey = &machineadm.SecretSource{File: "certificate-key"}
		}), want: []fe{{p + "certificateKey.file", inv}}},
		{name: "certificateKey given as the file is not echoed", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.CertificateKey = &machineadm.SecretSource{File: validCertKey}
		}), want: []fe{{p + "certificateKey.file", inv}}, secret: validCertKey},
		{name: "certificateKey inline warns", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.CertificateKey = &machineadm.SecretSource{Value: validCertKey} }), warn: []string{p + "certificateKey.value"}, secret: validCertKey},
		{name: "control-plane Join needs certificateKey or pki.dir", base: cpJoin, mutate: cp(func(cp *machineadm.ControlPlane) { cp.CertificateKey = nil }), want: []fe{{p + "certificateKey", req}}},
		{name: "control-plane Join with pki.dir ok", base: cpJoin, mutate: cp(func(cp *machineadm.ControlPlane) { cp.CertificateKey, cp.PKI.Dir = nil, "/etc/machineadm/pki" })},
		{name: "control-plane Join forbids bootstrapTokens", base: cpJoin, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.BootstrapTokens = []machineadm.BootstrapToken{{Token: machineadm.SecretSource{File: "/t"}, TTL: "1h"}}
		}), want: []fe{{p + "bootstrapTokens", forb}}},
		{name: "Init without endpoint warns", base: cpInit, mutate: func(c *spec) { c.Spec.Kubernetes.ControlPlaneEndpoint = "" }, warn: []string{"spec.kubernetes.controlPlaneEndpoint"}},
		{name: "bootstrap token fields", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			tok := &cp.BootstrapTokens[0]
			tok.Token = machineadm.SecretSource{Value: "ABCDEF.0123456789ABCDEF"}
			tok.TTL = "1d"
			tok.Groups = []string{"system:bootstrappers:kubeadm:default-node-token", "system:masters"}
			tok.Usages = []string{"signing", "admin"}
		}), want: []fe{{p + "bootstrapTokens[0].token.value", inv}, {p + "bootstrapTokens[0].ttl", inv}, {p + "bootstrapTokens[0].groups[1]", inv}, {p + "bootstrapTokens[0].usages[1]", nsup}}, secret: "0123456789ABCDEF"},
		{name: "bootstrap token negative ttl", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.BootstrapTokens[0].TTL = "-1h" }), want: []fe{{p + "bootstrapTokens[0].ttl", inv}}},
		{name: "bootstrap token inline warns", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.BootstrapTokens[0].Token = machineadm.SecretSource{Value: validToken}
		}), warn: []string{p + "bootstrapTokens[0].token.value"}, secret: validToken},
		{name: "runtime unknown", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.Runtime = "Podman" }), want: []fe{{p + "runtime", nsup}}},
		{name: "binaries need Systemd", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) { cp.Binaries = &systemdBinaries }), want: []fe{{p + "binaries", forb}}},
		{name: "Systemd without binaries", base: cpInit, mutate: func(c *spec) { toSystemd(c, nil) }, want: []fe{{p + "binaries", req}}},
		{name: "Systemd valid", base: cpInit, mutate: func(c *spec) { toSystemd(c, &systemdBinaries) }},
		{name: "Systemd binary paths", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.Etcd, b.KubeScheduler = "", "bin/kube-scheduler"
			toSystemd(c, &b)
		}, want: []fe{{p + "binaries.etcd", req}, {p + "binaries.kubeScheduler", inv}}},
		{name: "Systemd one binary for two components", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.KubeScheduler, b.KubeControllerManager = b.KubeAPIServer, b.Etcd
			toSystemd(c, &b)
		}, want: []fe{{p + "binaries.kubeControllerManager", inv}, {p + "binaries.kubeScheduler", inv}}},
		{name: "Systemd runs no static pods", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			c.Spec.Host.StaticPods = base(t, cpInit).Spec.Host.StaticPods
			c.Spec.Node.Kubelet.Config = map[string]any{"staticPodPath": "/etc/kubernetes/manifests"}
		}, want: []fe{{"spec.host.staticPods", forb}, {"spec.node.kubelet.config.staticPodPath", forb}}},
		{name: "Systemd external etcd has no etcd binary", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			c.Spec.ControlPlane.Etcd = machineadm.Etcd{External: &machineadm.ExternalEtcd{Endpoints: []string{"https://10.0.0.10:2379"}}}
		}, want: []fe{{p + "binaries.etcd", forb}}},
		{name: "Systemd binary from host.files must be executable", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			c.Spec.Host.Files = []machineadm.File{
				{Path: systemdBinaries.KubeAPIServer, Mode: "0644", Owner: "0", Group: "0",
					Source: &machineadm.RemoteSource{URL: "https://files.example/kube-apiserver", SHA256: strings.Repeat("a", 64)}},
				{Path: systemdBinaries.KubeScheduler, Mode: "0755", Owner: "0", Group: "0", Content: "#!/bin/sh\n", Append: true},
				{Path: systemdBinaries.Etcd, Mode: "0755", Owner: "0", Group: "0",
					Source: &machineadm.RemoteSource{URL: "https://files.example/etcd", SHA256: strings.Repeat("b", 64)}},
			}
		}, want: []fe{{"spec.host.files[0].mode", inv}, {"spec.host.files[1].append", inv}}},
		// PrivateTmp=yes and ProtectHome=yes hide these from the units.
		{name: "Systemd paths its sandbox hides", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.KubeAPIServer, b.KubeScheduler = "/home/ops/bin/kube-apiserver", "/var/tmp/kube-scheduler"
			toSystemd(c, &b)
			cp := c.Spec.ControlPlane
			cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/root/etcd", ExtraArgs: []machineadm.Arg{{Name: "wal-dir", Value: "/tmp/etcd-wal/"}, {Name: "snapshot-count", Value: "1000"}}}
			cp.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}, Log: &machineadm.AuditLog{Path: "/run/user/0/audit/audit.log"}}
			cp.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
				{KMS: &machineadm.KMSProvider{Name: "k", APIVersion: machineadm.DefaultKMSAPIVersion, Endpoint: "unix:///tmp/kms/plugin.sock"}}, {Identity: &machineadm.IdentityProvider{}},
			}}}}
		}, want: []fe{
			{p + "binaries.kubeAPIServer", inv}, {p + "binaries.kubeScheduler", inv},
			{p + "etcd.local.dataDir", inv}, {p + "etcd.local.extraArgs[0].value", inv},
			{p + "apiServer.audit.log.path", inv}, {p + "apiServer.encryption.resources[0].providers[0].kms.endpoint", inv},
		}},
		// /var/run is /run's other name (a symbolic link to it): the unit
		// resolves /var/run/user to the /run/user ProtectHome=yes empties.
		{name: "Systemd KMS socket under /var/run/user", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			c.Spec.ControlPlane.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
				{KMS: &machineadm.KMSProvider{Name: "k", APIVersion: machineadm.DefaultKMSAPIVersion, Endpoint: "unix:///var/run/user/1000/kms/plugin.sock"}}, {Identity: &machineadm.IdentityProvider{}},
			}}}}
		}, want: []fe{{p + "apiServer.encryption.resources[0].providers[0].kms.endpoint", inv}}},
		// A file an extraArgs flag names is opened by the process itself,
		// in its sandbox, unless the flag is one systemd hands over as a
		// credential (read outside the sandbox) with a clean path.
		{name: "Systemd extraArgs paths its sandbox hides", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			cp := c.Spec.ControlPlane
			cp.APIServer.ExtraArgs = []machineadm.Arg{
				{Name: "tls-sni-cert-key", Value: "/etc/k8s/sni.crt,/home/ops/sni.key:api.example"},
				{Name: "service-account-key-file", Value: "/home/ops/sa-old.pub"},
				{Name: "oidc-ca-file", Value: "/root/./oidc-ca.crt"},
			}
			cp.ControllerManager.ExtraArgs = []machineadm.Arg{{Name: "flex-volume-plugin-dir", Value: "/tmp/flex"}}
			cp.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "config", Value: "/var/tmp/scheduler.yaml"}, {Name: "cert-dir", Value: "/var/lib/etcd/scheduler-certs"}}
			cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/var/lib/etcd", ExtraArgs: []machineadm.Arg{{Name: "client-crl-file", Value: "/run/user/0/crl.pem"}, {Name: "log-outputs", Value: "/var/run/user/0/etcd.log"}}}
		}, want: []fe{
			{p + "apiServer.extraArgs[0].value", inv}, {p + "apiServer.extraArgs[2].value", inv},
			{p + "controllerManager.extraArgs[0].value", inv}, {p + "scheduler.extraArgs[1].value", inv},
			{p + "etcd.local.extraArgs[1].value", inv},
		}},
		// A path the process creates itself (self-signed certificates)
		// lands in the unit's private /tmp, which works; /home does not.
		{name: "Systemd extraArgs scratch paths", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			cp := c.Spec.ControlPlane
			cp.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "cert-dir", Value: "/tmp/kube-scheduler"}}
			cp.ControllerManager.ExtraArgs = []machineadm.Arg{{Name: "cert-dir", Value: "/home/kcm"}}
		}, want: []fe{{p + "controllerManager.extraArgs[0].value", inv}}},
		// The same paths are fine with static pods (hostPath mounts), and a
		// name that only starts like a hidden directory is not in it.
		{name: "Systemd paths beside the hidden directories", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.KubeAPIServer = "/homes/bin/kube-apiserver"
			toSystemd(c, &b)
			c.Spec.ControlPlane.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
				{KMS: &machineadm.KMSProvider{Name: "k", APIVersion: machineadm.DefaultKMSAPIVersion, Endpoint: "unix:///tmpfs/kms/plugin.sock"}}, {Identity: &machineadm.IdentityProvider{}},
			}}}}
		}},
		// The etcd data and WAL directories are etcd's alone (0700 etcd,
		// and InaccessiblePaths= for the other units), the audit log's
		// directory the API server's alone (0700 kube-apiserver): another
		// unit's path inside one cannot be reached.
		{name: "Systemd paths in another unit's private directory", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.KubeScheduler, b.KubeControllerManager = "/var/lib/etcd/bin/kube-scheduler", "/opt/k8s/bin/kube-controller-manager"
			toSystemd(c, &b)
			cp := c.Spec.ControlPlane
			cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/var/lib/etcd", ExtraArgs: []machineadm.Arg{{Name: "wal-dir", Value: "/srv/etcd-wal"}}}
			cp.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}, Log: &machineadm.AuditLog{Path: "/opt/k8s/audit.log"}}
			cp.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
				{KMS: &machineadm.KMSProvider{Name: "k", APIVersion: machineadm.DefaultKMSAPIVersion, Endpoint: "unix:///srv/etcd-wal/kms/plugin.sock"}}, {Identity: &machineadm.IdentityProvider{}},
			}}}}
		}, want: []fe{
			{p + "binaries.kubeControllerManager", inv}, {p + "binaries.kubeScheduler", inv},
			{p + "apiServer.encryption.resources[0].providers[0].kms.endpoint", inv},
		}},
		{name: "Systemd etcd data directory in the audit log's directory", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			cp := c.Spec.ControlPlane
			cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/srv/k8s/etcd"}
			cp.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}, Log: &machineadm.AuditLog{Path: "/srv/k8s/audit.log"}}
		}, want: []fe{{p + "etcd.local.dataDir", inv}}},
		// The same with the audit log set by an extraArgs --audit-log-path.
		{name: "Systemd binary in an extraArgs audit log's directory", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.KubeScheduler = "/opt/k8s/bin/kube-scheduler"
			toSystemd(c, &b)
			c.Spec.ControlPlane.APIServer.ExtraArgs = []machineadm.Arg{{Name: "audit-log-path", Value: "/opt/k8s/audit.log"}}
		}, want: []fe{{p + "binaries.kubeScheduler", inv}}},
		{name: "Systemd audit log in the etcd data directory", base: cpInit, mutate: func(c *spec) {
			toSystemd(c, &systemdBinaries)
			cp := c.Spec.ControlPlane
			cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/var/lib/etcd"}
			cp.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}, Log: &machineadm.AuditLog{Path: "/var/lib/etcd/audit/audit.log"}}
		}, want: []fe{{p + "apiServer.audit.log.path", inv}}},
		// A unit's own paths may share its private directory, and a
		// directory beside another's is not in it.
		{name: "Systemd paths in the unit's own directory", base: cpInit, mutate: func(c *spec) {
			b := systemdBinaries
			b.Etcd, b.KubeAPIServer = "/var/lib/etcd-bin/etcd", "/var/log/kube-apiserver/bin/kube-apiserver"
			toSystemd(c, &b)
			cp := c.Spec.ControlPlane
			cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/var/lib/etcd", ExtraArgs: []machineadm.Arg{{Name: "wal-dir", Value: "/var/lib/etcd/wal"}}}
			cp.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}, Log: &machineadm.AuditLog{Path: "/var/log/kube-apiserver/audit.log"}}
			cp.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
				{KMS: &machineadm.KMSProvider{Name: "k", APIVersion: machineadm.DefaultKMSAPIVersion, Endpoint: "unix:///var/log/kube-apiserver/kms.sock"}}, {Identity: &machineadm.IdentityProvider{}},
			}}}}
		}},
		{name: "StaticPods KMS socket under /tmp", base: cpInit, mutate: cp(func(cp *machineadm.ControlPlane) {
			cp.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
				{KMS: &machineadm.KMSProvider{Name: "k", APIVersion: machineadm.DefaultKMSAPIVersion, Endpoint: "unix:///tmp/kms/plugin.sock"}}, {Identity: &machineadm.IdentityProvider{}},
			}}}}
		})},
	})
}

func TestValidateJoin(t *testing.T) {
	j := func(f func(j *machineadm.Join)) func(c *spec) {
		return func(c *spec) { f(c.Spec.Join) }
	}
	const p = "spec.join."
	runCases(t, []vcase{
		{name: "endpoint missing", base: worker, mutate: j(func(j *machineadm.Join) { j.APIServerEndpoint = "" }), want: []fe{{p + "apiServerEndpoint", req}}},
		{name: "endpoint without port", base: worker, mutate: j(func(j *machineadm.Join) { j.APIServerEndpoint = "cp.example" }), want: []fe{{p + "apiServerEndpoint", inv}}},
		{name: "endpoint empty port", base: worker, mutate: j(func(j *machineadm.Join) { j.APIServerEndpoint = "cp.example:" }), want: []fe{{p + "apiServerEndpoint", inv}}},
		{name: "endpoint IPv6", base: worker, mutate: j(func(j *machineadm.Join) { j.APIServerEndpoint = "[2001:db8::1]:6443" })},
		{name: "token missing", base: worker, mutate: j(func(j *machineadm.Join) { j.Token = machineadm.SecretSource{} }), want: []fe{{p + "token", req}}},
		{name: "token given as the file is not echoed", base: worker, mutate: j(func(j *machineadm.Join) { j.Token = machineadm.SecretSource{File: validToken} }), want: []fe{{p + "token.file", inv}}, secret: validToken},
		{name: "token file the root directory", base: worker, mutate: j(func(j *machineadm.Join) { j.Token = machineadm.SecretSource{File: "/"} }), want: []fe{{p + "token.file", inv}}},
		{name: "token given as the file after a slash is not echoed", base: worker, mutate: j(func(j *machineadm.Join) { j.Token = machineadm.SecretSource{File: "/" + validToken + "/"} }), want: []fe{{p + "token.file", inv}}, secret: validToken},
		{name: "token malformed is not echoed", base: worker, mutate: j(func(j *machineadm.Join) { j.Token = machineadm.SecretSource{Value: "abcdef.short"} }), want: []fe{{p + "token.value", inv}}, secret: "abcdef.short"},
		{name: "token inline warns", base: worker, mutate: j(func(j *machineadm.Join) { j.Token = machineadm.SecretSource{Value: validToken} }), warn: []string{p + "token.value"}, secret: validToken},
		{name: "caCertHashes missing", base: worker, mutate: j(func(j *machineadm.Join) { j.CACertHashes = nil }), want: []fe{{p + "caCertHashes", req}}},
		{name: "caCertHash malformed", base: worker, mutate: j(func(j *machineadm.Join) { j.CACertHashes = append(j.CACertHashes, "sha1:abc") }), want: []fe{{p + "caCertHashes[1]", inv}}},
		{name: "unsafeSkipCAVerification warns", base: worker, mutate: j(func(j *machineadm.Join) { j.CACertHashes, j.UnsafeSkipCAVerification = nil, true }), warn: []string{p + "unsafeSkipCAVerification"}},
		{name: "timeout zero", base: worker, mutate: j(func(j *machineadm.Join) { j.Timeout = "0s" }), want: []fe{{p + "timeout", inv}}},
		{name: "timeout not a duration", base: worker, mutate: j(func(j *machineadm.Join) { j.Timeout = "soon" }), want: []fe{{p + "timeout", inv}}},
	})
}

// systemdBinaries are valid binary paths of the Systemd runtime.
var systemdBinaries = machineadm.ControlPlaneBinaries{
	Etcd:                  "/usr/local/bin/etcd",
	KubeAPIServer:         "/usr/local/bin/kube-apiserver",
	KubeControllerManager: "/usr/local/bin/kube-controller-manager",
	KubeScheduler:         "/usr/local/bin/kube-scheduler",
}

// toSystemd switches a control-plane spec to the Systemd runtime with
// binaries b, dropping its extra static pods (which Systemd refuses).
func toSystemd(c *spec, b *machineadm.ControlPlaneBinaries) {
	c.Spec.ControlPlane.Runtime, c.Spec.ControlPlane.Binaries = machineadm.RuntimeSystemd, b
	c.Spec.Host.StaticPods = nil
}

// TestValidateCIDRHostBitsNamesNetwork: the error for a prefix with host
// bits set says which network address the prefix has.
func TestValidateCIDRHostBitsNamesNetwork(t *testing.T) {
	c := base(t, worker)
	c.Spec.Kubernetes.Networking.PodSubnet = "10.244.1.0/16"
	msg := Validate(c).Errors.ToAggregate().Error()
	if !strings.Contains(msg, "spec.kubernetes.networking.podSubnet") || !strings.Contains(msg, "network address of that prefix is 10.244.0.0/16") {
		t.Errorf("error %q does not name the field and the network address", msg)
	}
}

// TestVersionOneCheckForEveryRole: a version that is not strict semantic
// versioning is refused at spec.kubernetes.version for every role and
// action alike. A worker took these (kubeadm never parses a join's
// version) while kubeadm refused them for a control plane.
func TestVersionOneCheckForEveryRole(t *testing.T) {
	for _, v := range []string{"v1.037.2", "v01.37.2", "v1.37.02", "v1.37.2-01", "v1.37.2-rc..0", "v1.37.2-rc."} {
		for _, b := range []baseKind{worker, cpInit, cpJoin} {
			c := base(t, b)
			c.Spec.Kubernetes.Version = v
			errs := Validate(c).Errors
			if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == "spec.kubernetes.version" }) {
				t.Errorf("%s: version %q accepted: %v", b, v, errs)
			}
		}
	}
	for _, v := range []string{"v1.37.2", "v1.37.0-rc.0", "v1.37.0-alpha.1.23", "v1.37.0-ci"} {
		if _, _, _, err := ParseVersion(v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
}

// A secret pasted into a field that is not one (the token into
// apiServerEndpoint, a private key into a name) is never quoted by the
// error about that field's shape.
func TestValidateNeverQuotesASecretPastedIntoAField(t *testing.T) {
	const token = "abcdef.0123456789abcdzz"
	const key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
	runCases(t, []vcase{
		{name: "token as the endpoint", base: worker, mutate: func(c *spec) { c.Spec.Join.APIServerEndpoint = token },
			want: []fe{{"spec.join.apiServerEndpoint", inv}}, secret: "0123456789abcdzz"},
		{name: "key as the node name", base: worker, mutate: func(c *spec) { c.Spec.Node.Name = key },
			want: []fe{{"spec.node.name", inv}}, secret: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
	})
}
