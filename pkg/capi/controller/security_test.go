//go:build !windows

package controller

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// clusterEncryptionKey is the encryption-at-rest key the tests put in a
// Secret (base64 of 32 bytes).
var clusterEncryptionKey = base64.StdEncoding.EncodeToString([]byte("machineadm-e2e-cluster-key-32byt"))

func profileEncryption(secret string) *bootstrapv1.Encryption {
	return &bootstrapv1.Encryption{Resources: []bootstrapv1.EncryptionResource{{
		Resources: []string{"secrets"},
		Providers: []bootstrapv1.EncryptionProvider{
			{AESCBC: &bootstrapv1.EncryptionKeys{Keys: []bootstrapv1.EncryptionKey{{Name: "k1",
				SecretFrom: &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: secret, Key: "key"}}}}}},
			{Identity: &bootstrapv1.IdentityProvider{}},
		},
	}}}
}

// A control-plane config under a profile renders a machine spec that
// carries the profile, its waivers and the typed API-server settings, the
// encryption key read from its Secret and sealed (never in the clear, in
// the data Secret or the log); a worker's carries the profile too.
func TestProfileConfigRendersSecurity(t *testing.T) {
	f := newFixture(t)
	var logs logBuffer
	f.ctx = logr.NewContext(f.ctx, logs.logger())
	_, c := f.machine("cp1", true)
	c.Spec.Security = &bootstrapv1.Security{Profile: "cis-1.12", Waivers: []bootstrapv1.Waiver{{ID: "1.1.9", Reason: "the CNI installer owns its files"}}}
	c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{APIServer: bootstrapv1.APIServer{
		Component:  bootstrapv1.Component{ExtraVolumes: []bootstrapv1.HostPathMount{{Name: "admission", HostPath: "/etc/kubernetes/admission", MountPath: "/etc/kubernetes/admission", ReadOnly: true}}},
		Encryption: profileEncryption("cluster-encryption"),
		Audit:      &bootstrapv1.Audit{Policy: jsonObject(`{"rules":[{"level":"Metadata"}]}`), Log: &bootstrapv1.AuditLog{MaxAge: ptr(int32(7))}},
	}}
	f.must(k8s.Update(f.ctx, c))
	// The key's Secret missing: a condition naming the field.
	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+"/cluster-encryption", "spec.controlPlane.apiServer.encryption.resources[0].providers[0].aescbc.keys[0].secretFrom") {
		t.Fatalf("message %q", got.Message)
	}
	f.secret("cluster-encryption", map[string][]byte{"key": []byte(clusterEncryptionKey + "\n")})
	done := f.reconcile("cp1")
	wantCond(t, done, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("cp1")
	f.noLeak(ds, []byte(clusterEncryptionKey))
	clear, items := f.opened(ds.Data["value"])
	if strings.Contains(clear, clusterEncryptionKey) || !contains(clear, "profile: cis-1.12", "1.1.9", "extraVolumes", "/etc/kubernetes/admission") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	const keyPath = "spec.controlPlane.apiServer.encryption.resources[0].providers[0].aescbc.keys[0].secret"
	if strings.TrimSpace(string(items[keyPath])) != clusterEncryptionKey {
		t.Fatalf("sealed items %v: want the key at %s", keys(items), keyPath)
	}
	cfg, _ := f.unsealed(ds.Data["value"])
	s := cfg.Spec
	if s.Security == nil || s.Security.Profile != "cis-1.12" || len(s.Security.Waivers) != 1 || s.Security.Waivers[0].ID != "1.1.9" {
		t.Fatalf("security %+v", s.Security)
	}
	a := s.ControlPlane.APIServer
	if a.Encryption == nil || strings.TrimSpace(a.Encryption.Resources[0].Providers[0].AESCBC.Keys[0].Secret.Value) != clusterEncryptionKey || a.Encryption.Resources[0].Providers[1].Identity == nil {
		t.Fatalf("the machine would encrypt with %+v", a.Encryption)
	}
	if a.Audit == nil || a.Audit.Log == nil || a.Audit.Log.MaxAge == nil || *a.Audit.Log.MaxAge != 7 || len(a.ExtraVolumes) != 1 {
		t.Fatalf("audit %+v, extraVolumes %+v", a.Audit, a.ExtraVolumes)
	}
	noSecretIn(t, done, logs.String(), clusterEncryptionKey)

	f.initialized()
	_, w := f.machine("w1", false)
	w.Spec.Security = &bootstrapv1.Security{Profile: "stig"}
	f.must(k8s.Update(f.ctx, w))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if clear, _ := f.opened(f.dataSecret("w1").Data["value"]); !contains(clear, "profile: stig") {
		t.Fatalf("worker clear spec:\n%s", clear)
	}
}

// A control-plane Machine under a profile without encryption is refused
// with the field path: every control plane needs the Cluster's one key,
// which the agent cannot make and Cluster API's CA Secrets do not carry.
func TestProfileControlPlaneNeedsEncryption(t *testing.T) {
	f := newFixture(t)
	_, c := f.machine("cp1", true)
	c.Spec.Security = &bootstrapv1.Security{Profile: "cis-1.12"}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !contains(got.Message, "spec.controlPlane.apiServer.encryption", "machineadm pki encryption-key") {
		t.Fatalf("message %q", got.Message)
	}
}

// Bad compliance and API-server security values are refused at admission,
// each error naming its field.
func TestSecurityConfigsRefusedWithFieldPath(t *testing.T) {
	f := newFixture(t)
	withAPIServer := func(edit func(a *bootstrapv1.APIServer)) func(*bootstrapv1.MachineadmConfigSpec) {
		return func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
			edit(&s.ControlPlane.APIServer)
		}
	}
	ref := &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "s", Key: "k"}}
	refusedWithPath(t, f, map[string]admissionCase{
		"unknown profile": {func(s *bootstrapv1.MachineadmConfigSpec) { s.Security = &bootstrapv1.Security{Profile: "cis-9"} }, "spec.security.profile"},
		"waiver without reason": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Security = &bootstrapv1.Security{Profile: "stig", Waivers: []bootstrapv1.Waiver{{ID: "V-242390"}}}
		}, "spec.security.waivers[0].reason"},
		"waiver id": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Security = &bootstrapv1.Security{Profile: "stig", Waivers: []bootstrapv1.Waiver{{ID: "all", Reason: "r"}}}
		}, "spec.security.waivers[0].id"},
		"extraVolumes of the host's /run": {withAPIServer(func(a *bootstrapv1.APIServer) {
			a.ExtraVolumes = []bootstrapv1.HostPathMount{{Name: "run", HostPath: "/run", MountPath: "/host-run", ReadOnly: true}}
		}), "spec.controlPlane.apiServer.extraVolumes[0].hostPath"},
		"waiver reason of spaces only": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Security = &bootstrapv1.Security{Profile: "stig", Waivers: []bootstrapv1.Waiver{{ID: "V-242390", Reason: "   "}}}
		}, "spec.security.waivers[0].reason"},
		"waiver reason with a tab": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Security = &bootstrapv1.Security{Profile: "stig", Waivers: []bootstrapv1.Waiver{{ID: "V-242390", Reason: "accepted\tby the owner"}}}
		}, "spec.security.waivers[0].reason"},
		"two providers in one": {withAPIServer(func(a *bootstrapv1.APIServer) {
			e := profileEncryption("s")
			e.Resources[0].Providers[1].AESGCM = &bootstrapv1.EncryptionKeys{Keys: []bootstrapv1.EncryptionKey{{Name: "g", SecretFrom: ref}}}
			a.Encryption = e
		}), "spec.controlPlane.apiServer.encryption.resources[0].providers[1]"},
		"key without its Secret": {withAPIServer(func(a *bootstrapv1.APIServer) {
			e := profileEncryption("s")
			e.Resources[0].Providers[0].AESCBC.Keys[0].SecretFrom = nil
			a.Encryption = e
		}), "spec.controlPlane.apiServer.encryption.resources[0].providers[0].aescbc.keys[0].secretFrom"},
		"kms endpoint not unix": {withAPIServer(func(a *bootstrapv1.APIServer) {
			a.Encryption = &bootstrapv1.Encryption{Resources: []bootstrapv1.EncryptionResource{{Resources: []string{"secrets"},
				Providers: []bootstrapv1.EncryptionProvider{{KMS: &bootstrapv1.KMSProvider{Name: "k", Endpoint: "tcp://10.0.0.1:80"}}}}}}
		}), "spec.controlPlane.apiServer.encryption.resources[0].providers[0].kms.endpoint"},
		"audit webhook mode": {withAPIServer(func(a *bootstrapv1.APIServer) {
			a.Audit = &bootstrapv1.Audit{Policy: jsonObject(`{"rules":[{"level":"Metadata"}]}`), Webhook: &bootstrapv1.AuditWebhook{KubeConfigFrom: ref, Mode: "sometimes"}}
		}), "spec.controlPlane.apiServer.audit.webhook.mode"},
		"webhook authorizer without webhook": {withAPIServer(func(a *bootstrapv1.APIServer) {
			a.Authorization = &bootstrapv1.Authorization{Authorizers: []bootstrapv1.Authorizer{{Type: "Node"}, {Type: "RBAC"}, {Type: "Webhook", Name: "w"}}}
		}), "spec.controlPlane.apiServer.authorization.authorizers[2]"},
		"anonymous path not absolute": {withAPIServer(func(a *bootstrapv1.APIServer) {
			a.Authentication = &bootstrapv1.Authentication{Anonymous: &bootstrapv1.AnonymousAuthentication{Enabled: true, Conditions: []bootstrapv1.AnonymousCondition{{Path: "livez"}}}}
		}), "spec.controlPlane.apiServer.authentication.anonymous.conditions[0].path"},
	})
}

// A host path is refused at admission in every spelling of a refused
// one, and below /proc, /sys and /dev (the host's root through
// /proc/1/root, its disk); a KMS plugin's directory below /run and names
// that only look alike are admitted, as are reasons with spaces inside.
func TestHostPathsAndReasonsAtAdmission(t *testing.T) {
	f := newFixture(t)
	volume := func(hp string) func(*bootstrapv1.MachineadmConfigSpec) {
		return func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
			s.ControlPlane.APIServer.ExtraVolumes = []bootstrapv1.HostPathMount{{Name: "v", HostPath: hp, MountPath: "/v", ReadOnly: true}}
		}
	}
	refused := map[string]admissionCase{}
	for _, hp := range []string{"/run/", "//run", "/var//run", "/proc/", "/proc/1/root", "/dev/vda", "/sys/fs/cgroup", "/etc/../proc", "/./run", "/srv/.", "/srv/a\x7f",
		"/run/containerd", "/var/run/containerd/containerd.sock", "/run/docker.sock", "/var/run/crio", "/run/systemd/private", "/run/dbus", "/var/lib/kubelet", "/var/lib/kubelet/pki"} {
		refused["hostPath "+hp] = admissionCase{volume(hp), "spec.controlPlane.apiServer.extraVolumes[0].hostPath"}
	}
	refusedWithPath(t, f, refused)
	admitted := map[string]func(*bootstrapv1.MachineadmConfigSpec){}
	for _, hp := range []string{"/run/kms", "/etc/kubernetes/.audit", "/srv/proc", "/devices", "/srv/..data", "/run/containerd-notes", "/var/lib/kubelet-extra"} {
		admitted["hostPath "+hp] = volume(hp)
	}
	for _, r := range []string{"accepted by the owner", " a leading space", "ünïcode"} {
		admitted["reason "+r] = func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Security = &bootstrapv1.Security{Profile: "stig", Waivers: []bootstrapv1.Waiver{{ID: "V-242390", Reason: r}}}
		}
	}
	for name, edit := range admitted {
		c := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{GenerateName: "ok-", Namespace: f.ns}, Spec: f.spec()}
		edit(&c.Spec)
		if err := k8s.Create(f.ctx, c); err != nil {
			t.Errorf("%s refused: %v", name, err)
		}
	}
}

// A waiver's reason gets one verdict from the CRD at admission and from
// the agent's validation the controller runs: a reason the API server
// admits and the agent refuses fails only at reconcile (or, rendered by
// another tool, on the machine), one the API server refuses and the agent
// takes cannot be given at all. Unicode spaces, zero-width characters, C1
// controls, U+2028 and a bound counted in bytes or characters are where
// the two parted.
func TestWaiverReasonAdmissionAgreesWithAgent(t *testing.T) {
	for _, tc := range []struct {
		reason string
		ok     bool
	}{
		{"accepted by the owner", true},
		{"accepted\u00a0by the AO, ünïcode", true},
		{strings.Repeat("é", 1024), true},
		{strings.Repeat("é", 1025), false},
		{"\u00a0\u00a0", false},
		{"\u3000", false},
		{"\u200b\u200e", false},
		{"a\u0085ExecStart=x", false},
		{"a\u2028second line", false},
		{"a\u2029b", false},
		{"a\x7fb", false},
	} {
		// A first control plane: a worker waits for it before its spec
		// is validated.
		f := newFixture(t)
		const name = "cp1"
		_, c := f.machine(name, true)
		f.secret("good", map[string][]byte{"key": []byte(clusterEncryptionKey)})
		c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
		c.Spec.ControlPlane.APIServer.Encryption = profileEncryption("good")
		c.Spec.Security = &bootstrapv1.Security{Profile: "cis-1.12", Waivers: []bootstrapv1.Waiver{{ID: "1.1.12", Reason: tc.reason}}}
		err := k8s.Update(f.ctx, c)
		admitted := err == nil
		if !admitted && !strings.Contains(err.Error(), "spec.security.waivers[0].reason") {
			t.Fatalf("reason %q: refused without the field path: %v", tc.reason, err)
		}
		agentOK := false
		if admitted {
			got := cond(f.reconcile(name), DataSecretAvailableCondition)
			agentOK = got.Reason != ReasonInvalidConfig
			if !agentOK && !strings.Contains(got.Message, "spec.security.waivers[0].reason") {
				t.Fatalf("reason %q: the spec is refused for another field: %s", tc.reason, got.Message)
			}
		}
		switch {
		case admitted && !agentOK:
			t.Errorf("reason %.40q: admitted by the CRD, refused by the agent", tc.reason)
		case admitted != tc.ok:
			t.Errorf("reason %.40q: admitted %v, want %v (%v)", tc.reason, admitted, tc.ok, err)
		}
	}
}

// jsonObject is a free-form JSON value of the provider's API.
func jsonObject(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
