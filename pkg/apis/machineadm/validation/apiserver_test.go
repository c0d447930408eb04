package validation

import (
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

const (
	testAESKey     = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyEhISE=" // 32 bytes
	testKubeConfig = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://webhook.example:8443'}}]\n" +
		"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nusers: [{name: u, user: {token: t}}]\n"
)

// secured returns the cpInit base with every typed security setting of
// the API server, valid.
func secured(t *testing.T) *machineadm.MachineBootstrapConfig {
	t.Helper()
	c := base(t, cpInit)
	a := &c.Spec.ControlPlane.APIServer
	a.Audit = &machineadm.Audit{
		Policy:  map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}},
		Webhook: &machineadm.AuditWebhook{KubeConfig: machineadm.SecretSource{File: "/etc/machineadm/secrets/audit.kubeconfig"}},
		Log:     &machineadm.AuditLog{},
	}
	a.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{
		Resources: []string{"secrets"},
		Providers: []machineadm.EncryptionProvider{
			{KMS: &machineadm.KMSProvider{Name: "fake-kms", Endpoint: "unix:///var/run/kms/plugin.sock"}},
			{AESCBC: &machineadm.EncryptionKeys{Keys: []machineadm.EncryptionKey{{Name: "k1", Secret: machineadm.SecretSource{File: "/etc/machineadm/secrets/k1"}}}}},
			{Identity: &machineadm.IdentityProvider{}},
		},
	}}}
	a.Authentication = &machineadm.Authentication{
		Anonymous: &machineadm.AnonymousAuthentication{Enabled: true, Conditions: []machineadm.AnonymousCondition{{Path: "/livez"}}},
		JWT: []map[string]any{{
			"issuer":        map[string]any{"url": "https://issuer.example", "audiences": []any{"k8s"}},
			"claimMappings": map[string]any{"username": map[string]any{"claim": "sub", "prefix": "oidc:"}},
		}},
		Webhook: &machineadm.AuthenticationWebhook{KubeConfig: machineadm.SecretSource{Value: testKubeConfig}},
	}
	a.Authorization = &machineadm.Authorization{Authorizers: []machineadm.Authorizer{
		{Type: "Node"}, {Type: "RBAC"},
		{Type: "Webhook", Name: "opa", Webhook: &machineadm.AuthorizationWebhook{
			KubeConfig: machineadm.SecretSource{File: "/etc/machineadm/secrets/opa.kubeconfig"},
			Timeout:    "3s", SubjectAccessReviewVersion: "v1", MatchConditionSubjectAccessReviewVersion: "v1", FailurePolicy: "NoOpinion",
			MatchConditions: []machineadm.WebhookMatchCondition{{Expression: "has(request.resourceAttributes)"}},
		}},
	}}
	a.ExtraVolumes = []machineadm.HostPathMount{{Name: "extra-ca", HostPath: "/etc/extra-ca", MountPath: "/etc/extra-ca", ReadOnly: true, PathType: "Directory"}}
	a.ExtraArgs = []machineadm.Arg{{Name: "client-ca-file", Value: "/etc/kubernetes/pki/ca.crt"}, {Name: "oidc-x", Value: "/etc/extra-ca/x.pem"}}
	machineadm.SetDefaults(c)
	return c
}

func TestSecuredSpecIsValid(t *testing.T) {
	r := Validate(secured(t))
	if len(r.Errors) > 0 {
		t.Fatalf("errors:\n  %s", strings.Join(errorSet(r.Errors), "\n  "))
	}
}

// TestAPIServerSecurityRefusals: every rule of the typed security
// settings refuses its bad value under its own field path, and never
// echoes a secret.
func TestAPIServerSecurityRefusals(t *testing.T) {
	const ap = "spec.controlPlane.apiServer"
	cases := []struct {
		name   string
		change func(c *machineadm.MachineBootstrapConfig)
		want   []fe
	}{
		{"owned flag in extraArgs", func(c *machineadm.MachineBootstrapConfig) {
			a := &c.Spec.ControlPlane.APIServer
			a.ExtraArgs = append(a.ExtraArgs, machineadm.Arg{Name: "audit-log-path", Value: "/var/log/x.log"},
				machineadm.Arg{Name: "encryption-provider-config", Value: "/etc/kubernetes/pki/enc.yaml"},
				machineadm.Arg{Name: "anonymous-auth", Value: "false"}, machineadm.Arg{Name: "authorization-mode", Value: "RBAC"})
		}, []fe{{ap + ".extraArgs[2].name", forb}, {ap + ".extraArgs[3].name", forb}, {ap + ".extraArgs[4].name", forb}, {ap + ".extraArgs[5].name", forb}}},
		{"unknown policy level", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Audit.Policy = map[string]any{"rules": []any{map[string]any{"level": "Everything"}}}
		}, []fe{{ap + ".audit.policy.rules[0].level", nsup}}},
		{"unknown policy field", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Audit.Policy = map[string]any{"rulez": []any{}}
		}, []fe{{ap + ".audit.policy", inv}}},
		{"policy of another kind", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Audit.Policy["apiVersion"] = "audit.k8s.io/v1beta1"
		}, []fe{{ap + ".audit.policy.apiVersion", nsup}}},
		{"empty policy", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Audit.Policy = map[string]any{"omitStages": []any{"RequestReceived"}}
		}, []fe{{ap + ".audit.policy.rules", req}}},
		{"audit log paths", func(c *machineadm.MachineBootstrapConfig) {
			l := c.Spec.ControlPlane.APIServer.Audit.Log
			l.Path = "/etc/kubernetes/apiserver/audit.log"
			n := int32(-1)
			l.MaxAge = &n
		}, []fe{{ap + ".audit.log.path", inv}, {ap + ".audit.log.maxAge", inv}}},
		{"audit log in the root", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Audit.Log.Path = "/audit.log"
		}, []fe{{ap + ".audit.log.path", inv}}},
		{"audit webhook", func(c *machineadm.MachineBootstrapConfig) {
			w := c.Spec.ControlPlane.APIServer.Audit.Webhook
			w.Mode = "fast"
			w.KubeConfig = machineadm.SecretSource{Value: "not: [a kubeconfig"}
		}, []fe{{ap + ".audit.webhook.mode", nsup}, {ap + ".audit.webhook.kubeConfig.value", inv}}},
		{"encryption key shapes", func(c *machineadm.MachineBootstrapConfig) {
			p := c.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers
			p[1].AESCBC.Keys = append(p[1].AESCBC.Keys,
				machineadm.EncryptionKey{Name: "k2", Secret: machineadm.SecretSource{Value: "dG9vIHNob3J0"}},
				machineadm.EncryptionKey{Name: "k3", Secret: machineadm.SecretSource{File: "relative/k3"}},
				machineadm.EncryptionKey{Name: "k4"})
		}, []fe{{ap + ".encryption.resources[0].providers[1].aescbc.keys[1].secret.value", inv},
			{ap + ".encryption.resources[0].providers[1].aescbc.keys[2].secret.file", inv},
			{ap + ".encryption.resources[0].providers[1].aescbc.keys[3].secret", req}}},
		{"secretbox key of 16 bytes (upstream)", func(c *machineadm.MachineBootstrapConfig) {
			p := c.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers
			p[1].AESCBC = nil
			p[1].Secretbox = &machineadm.EncryptionKeys{Keys: []machineadm.EncryptionKey{{Name: "k1", Secret: machineadm.SecretSource{Value: "MDEyMzQ1Njc4OWFiY2RlZg=="}}}}
		}, []fe{{ap + ".encryption.resources[0].providers[1].secretbox.keys[0].secret", inv}}},
		{"kms endpoint and version", func(c *machineadm.MachineBootstrapConfig) {
			k := c.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers[0].KMS
			k.Endpoint, k.APIVersion = "tcp://10.0.0.1:8080", "v1"
		}, []fe{{ap + ".encryption.resources[0].providers[0].kms.endpoint", inv}, {ap + ".encryption.resources[0].providers[0].kms.apiVersion", nsup}}},
		{"kms socket in the root", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers[0].KMS.Endpoint = "unix:///kms.sock"
		}, []fe{{ap + ".encryption.resources[0].providers[0].kms.endpoint", inv}}},
		{"two providers in one entry, none in another (upstream)", func(c *machineadm.MachineBootstrapConfig) {
			p := c.Spec.ControlPlane.APIServer.Encryption.Resources[0].Providers
			p[2].AESCBC = p[1].AESCBC
		}, []fe{{ap + ".encryption.resources[0].providers[2]", inv}}},
		{"no encryption resources", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Encryption.Resources = nil
		}, []fe{{ap + ".encryption.resources", req}}},
		{"jwt unknown field", func(c *machineadm.MachineBootstrapConfig) {
			a := c.Spec.ControlPlane.APIServer.Authentication
			a.JWT[0]["issuer"].(map[string]any)["urll"] = "x"
		}, []fe{{ap + ".authentication.jwt[0]", inv}}},
		{"jwt bad CEL (upstream)", func(c *machineadm.MachineBootstrapConfig) {
			a := c.Spec.ControlPlane.APIServer.Authentication
			a.JWT = append(a.JWT, map[string]any{
				"issuer":               map[string]any{"url": "https://other.example", "audiences": []any{"k8s"}},
				"claimMappings":        map[string]any{"username": map[string]any{"expression": "claims.sub +"}},
				"claimValidationRules": []any{},
			})
		}, []fe{{ap + ".authentication.jwt[1].claimMappings.username.expression", inv}}},
		{"anonymous conditions without enabled (upstream)", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Authentication.Anonymous.Enabled = false
		}, []fe{{ap + ".authentication.anonymous.conditions", inv}}},
		{"authentication webhook", func(c *machineadm.MachineBootstrapConfig) {
			w := c.Spec.ControlPlane.APIServer.Authentication.Webhook
			w.Version, w.CacheTTL = "v2", "soon"
			w.KubeConfig = machineadm.SecretSource{}
		}, []fe{{ap + ".authentication.webhook.version", nsup}, {ap + ".authentication.webhook.cacheTTL", inv}, {ap + ".authentication.webhook.kubeConfig", req}}},
		{"authorization without RBAC, unknown type, bad webhook", func(c *machineadm.MachineBootstrapConfig) {
			z := c.Spec.ControlPlane.APIServer.Authorization
			z.Authorizers[1].Type = "Magic"
			w := z.Authorizers[2].Webhook
			w.Timeout, w.FailurePolicy = "1m", "Allow"
		}, []fe{{ap + ".authorization.authorizers[1].type", nsup}, {ap + ".authorization.authorizers", req},
			{ap + ".authorization.authorizers[2].timeout", inv}, {ap + ".authorization.authorizers[2].failurePolicy", nsup}}},
		{"extraVolumes", func(c *machineadm.MachineBootstrapConfig) {
			a := &c.Spec.ControlPlane.APIServer
			a.ExtraVolumes = append(a.ExtraVolumes,
				machineadm.HostPathMount{Name: "k8s-certs", HostPath: "/x", MountPath: "/x"},
				machineadm.HostPathMount{Name: "machineadm-audit-log", HostPath: "/y", MountPath: "/y"},
				machineadm.HostPathMount{Name: "Bad_Name", HostPath: "rel", MountPath: "/z", PathType: "Pipe"},
				machineadm.HostPathMount{Name: "extra-ca", HostPath: "/w", MountPath: "/w/../v"})
		}, []fe{{ap + ".extraVolumes[1].name", inv}, {ap + ".extraVolumes[2].name", inv}, {ap + ".extraVolumes[3].name", inv},
			{ap + ".extraVolumes[3].hostPath", inv}, {ap + ".extraVolumes[3].pathType", nsup},
			{ap + ".extraVolumes[4].name", dup}, {ap + ".extraVolumes[4].mountPath", inv}}},
		{"extraVolumes mounted where kubeadm, machineadm or another entry mounts", func(c *machineadm.MachineBootstrapConfig) {
			cp := c.Spec.ControlPlane
			cp.APIServer.ExtraVolumes = append(cp.APIServer.ExtraVolumes,
				machineadm.HostPathMount{Name: "pki", HostPath: "/srv/pki", MountPath: "/etc/kubernetes/pki"},
				machineadm.HostPathMount{Name: "cfg", HostPath: "/srv/cfg", MountPath: machineadm.APIServerConfigDir},
				machineadm.HostPathMount{Name: "kms", HostPath: "/srv/kms", MountPath: "/var/run/kms"},
				machineadm.HostPathMount{Name: "ca", HostPath: "/srv/ca", MountPath: "/etc/kubernetes/pki/ca.crt"},
				machineadm.HostPathMount{Name: "again", HostPath: "/srv/again", MountPath: "/etc/extra-ca"},
				machineadm.HostPathMount{Name: "fine", HostPath: "/srv/fine", MountPath: "/etc/kubernetes"})
			cp.Scheduler.ExtraVolumes = []machineadm.HostPathMount{{Name: "conf", HostPath: "/srv/s.conf", MountPath: "/etc/kubernetes/scheduler.conf", PathType: "File"}}
		}, []fe{{ap + ".extraVolumes[1].mountPath", inv}, {ap + ".extraVolumes[2].mountPath", inv}, {ap + ".extraVolumes[3].mountPath", inv},
			{ap + ".extraVolumes[4].mountPath", inv}, {ap + ".extraVolumes[5].mountPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[0].mountPath", inv}}},
		{"machineadm's volumes where kubeadm mounts", func(c *machineadm.MachineBootstrapConfig) {
			a := &c.Spec.ControlPlane.APIServer
			a.Audit.Log.Path = "/etc/ssl/certs/audit.log"
			a.Encryption.Resources[0].Providers[0].KMS.Endpoint = "unix:///etc/ca-certificates/kms.sock"
		}, []fe{{ap + ".audit.log.path", inv}, {ap + ".encryption", inv}}},
		{"an owned flag in another spelling", func(c *machineadm.MachineBootstrapConfig) {
			a := &c.Spec.ControlPlane.APIServer
			a.ExtraArgs = append(a.ExtraArgs, machineadm.Arg{Name: "audit_policy_file", Value: "x"},
				machineadm.Arg{Name: "--encryption-provider-config", Value: "x"}, machineadm.Arg{Name: "Authorization-Mode=Node", Value: "RBAC"})
		}, []fe{{ap + ".extraArgs[2].name", inv}, {ap + ".extraArgs[2].name", forb}, {ap + ".extraArgs[3].name", inv}, {ap + ".extraArgs[3].name", forb},
			{ap + ".extraArgs[4].name", inv}, {ap + ".extraArgs[4].name", forb}}},
		{"audit log and KMS socket in one directory", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.ControlPlane.APIServer.Audit.Log.Path = "/var/run/kms/audit.log"
		}, []fe{{ap + ".encryption", inv}}},
		{"flag paths are judged inside the pod (mountPath), not on the host (hostPath)", func(c *machineadm.MachineBootstrapConfig) {
			a := &c.Spec.ControlPlane.APIServer
			a.ExtraVolumes = append(a.ExtraVolumes, machineadm.HostPathMount{Name: "adm", HostPath: "/srv/admission", MountPath: "/etc/admission", ReadOnly: true})
			a.ExtraArgs = append(a.ExtraArgs, machineadm.Arg{Name: "admission-control-config-file", Value: "/etc/admission/config.yaml"},
				machineadm.Arg{Name: "egress-selector-config-file", Value: "/srv/admission/egress.yaml"})
		}, []fe{{ap + ".extraArgs[3].value", inv}}},
		{"audit log or KMS socket directly in a host system directory", func(c *machineadm.MachineBootstrapConfig) {
			a := &c.Spec.ControlPlane.APIServer
			a.Audit.Log.Path = "/var/log/kube-apiserver-audit.log"
			a.Encryption.Resources[0].Providers[0].KMS.Endpoint = "unix:///run/kms.sock"
		}, []fe{{ap + ".audit.log.path", inv}, {ap + ".encryption.resources[0].providers[0].kms.endpoint", inv}}},
		{"extraVolumes of the host itself", func(c *machineadm.MachineBootstrapConfig) {
			cp := c.Spec.ControlPlane
			cp.APIServer.ExtraVolumes = append(cp.APIServer.ExtraVolumes,
				machineadm.HostPathMount{Name: "root", HostPath: "/", MountPath: "/host", ReadOnly: true},
				machineadm.HostPathMount{Name: "run", HostPath: "/run", MountPath: "/host-run", ReadOnly: true})
			cp.ControllerManager.ExtraVolumes = []machineadm.HostPathMount{{Name: "dev", HostPath: "/dev", MountPath: "/host-dev"},
				// Below /proc, /sys and /dev as well: /proc/1/root is the
				// host's root, /dev/vda its disk. /run/kms (a KMS plugin's
				// directory) and /var/lib/sysconfig stay allowed.
				{Name: "init-root", HostPath: "/proc/1/root", MountPath: "/host-root", ReadOnly: true},
				{Name: "disk", HostPath: "/dev/vda", MountPath: "/disk"},
				{Name: "cgroups", HostPath: "/sys/fs/cgroup", MountPath: "/cg"},
				{Name: "kms", HostPath: "/run/kms", MountPath: "/run/kms"},
				{Name: "sysconfig", HostPath: "/var/lib/sysconfig", MountPath: "/sysconfig"},
				{Name: "devices", HostPath: "/devices", MountPath: "/devices"}}
			// A daemon's socket directory in /run or /var/run, and the
			// kubelet's directory: the container runtime (or systemd)
			// runs anything as root. /run/containerd-notes and
			// /var/lib/kubelet-extra are other directories.
			cp.Scheduler.ExtraVolumes = []machineadm.HostPathMount{
				{Name: "containerd", HostPath: "/run/containerd", MountPath: "/c1", ReadOnly: true},
				{Name: "containerd-sock", HostPath: "/var/run/containerd/containerd.sock", MountPath: "/c2", ReadOnly: true},
				{Name: "docker", HostPath: "/var/run/docker.sock", MountPath: "/c3"},
				{Name: "systemd", HostPath: "/run/systemd/private", MountPath: "/c4"},
				{Name: "dbus", HostPath: "/run/dbus", MountPath: "/c5"},
				{Name: "kubelet", HostPath: "/var/lib/kubelet/pki", MountPath: "/c6"},
				{Name: "notes", HostPath: "/run/containerd-notes", MountPath: "/c7"},
				{Name: "extra", HostPath: "/var/lib/kubelet-extra", MountPath: "/c8"}}
		}, []fe{{ap + ".extraVolumes[1].hostPath", inv}, {ap + ".extraVolumes[2].hostPath", inv},
			{"spec.controlPlane.controllerManager.extraVolumes[0].hostPath", inv},
			{"spec.controlPlane.controllerManager.extraVolumes[1].hostPath", inv},
			{"spec.controlPlane.controllerManager.extraVolumes[2].hostPath", inv},
			{"spec.controlPlane.controllerManager.extraVolumes[3].hostPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[0].hostPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[1].hostPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[2].hostPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[3].hostPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[4].hostPath", inv},
			{"spec.controlPlane.scheduler.extraVolumes[5].hostPath", inv}}},
		{"a path the static pod does not mount", func(c *machineadm.MachineBootstrapConfig) {
			cp := c.Spec.ControlPlane
			cp.APIServer.ExtraArgs = append(cp.APIServer.ExtraArgs, machineadm.Arg{Name: "admission-control-config-file", Value: "/etc/kubernetes/admission.yaml"})
			cp.ControllerManager.ExtraArgs = append(cp.ControllerManager.ExtraArgs, machineadm.Arg{Name: "cluster-signing-cert-file", Value: "/srv/ca.crt"})
			cp.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "config", Value: "/etc/kubernetes/scheduler-config.yaml"}}
		}, []fe{{ap + ".extraArgs[2].value", inv}, {"spec.controlPlane.controllerManager.extraArgs[0].value", inv},
			{"spec.controlPlane.scheduler.extraArgs[0].value", inv}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := secured(t)
			tc.change(c)
			r := Validate(c)
			got, want := errorSet(r.Errors), wantSet(tc.want)
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n got  %s\n want %s\n%v", strings.Join(got, "\n      "), strings.Join(want, "\n      "), r.Errors)
			}
			for _, e := range r.Errors {
				for _, secret := range []string{"dG9vIHNob3J0", "MDEyMzQ1Njc4OWFiY2RlZg==", "not: [a kubeconfig"} {
					if strings.Contains(e.Error(), secret) {
						t.Errorf("error quotes a secret: %v", e)
					}
				}
			}
		})
	}
}

// TestExtraVolumesOnlyWithStaticPods: the Systemd runtime refuses
// extraVolumes of every component, and does not judge flag paths against
// pod mounts (units read the host's files).
func TestExtraVolumesOnlyWithStaticPods(t *testing.T) {
	c := secured(t)
	cp := c.Spec.ControlPlane
	cp.Runtime = machineadm.RuntimeSystemd
	c.Spec.Host.StaticPods = nil
	cp.Scheduler.ExtraVolumes = []machineadm.HostPathMount{{Name: "cfg", HostPath: "/srv/cfg", MountPath: "/srv/cfg"}}
	cp.APIServer.ExtraArgs = append(cp.APIServer.ExtraArgs, machineadm.Arg{Name: "admission-control-config-file", Value: "/srv/admission.yaml"})
	machineadm.SetDefaults(c)
	r := Validate(c)
	got := errorSet(r.Errors)
	want := wantSet([]fe{{"spec.controlPlane.apiServer.extraVolumes", forb}, {"spec.controlPlane.scheduler.extraVolumes", forb}})
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n got  %v\n want %v", got, want)
	}
}

func TestSecretShapeProblemNewFormats(t *testing.T) {
	for _, tc := range []struct {
		format, v string
		ok        bool
	}{
		{machineadm.SecretFormatEncryptionKey, testAESKey, true},
		{machineadm.SecretFormatEncryptionKey, "MDEyMzQ1Njc4OWFiY2RlZg==", true}, // 16 bytes: aesgcm
		{machineadm.SecretFormatEncryptionKey, "dG9vIHNob3J0", false},
		{machineadm.SecretFormatEncryptionKey, "%%%", false},
		{machineadm.SecretFormatKubeConfig, testKubeConfig, true},
		{machineadm.SecretFormatKubeConfig, "apiVersion: v1\nkind: Config\n", false},
		{machineadm.SecretFormatKubeConfig, "{{", false},
	} {
		if got := SecretShapeProblem(tc.format, tc.v); (got == "") != tc.ok {
			t.Errorf("SecretShapeProblem(%s, %.12q) = %q, want ok=%v", tc.format, tc.v, got, tc.ok)
		}
	}
}
