package upgrade

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// cp returns a small control-plane spec at version v.
func cp(v string) *machineadm.MachineBootstrapConfig {
	c := &machineadm.MachineBootstrapConfig{APIVersion: machineadm.LatestAPIVersion, Kind: machineadm.Kind}
	c.Spec.Role, c.Spec.Action = machineadm.RoleControlPlane, machineadm.ActionInit
	c.Spec.Kubernetes.Version = v
	c.Spec.Kubernetes.ControlPlaneEndpoint = "cp.example:6443"
	c.Spec.ControlPlane = &machineadm.ControlPlane{AdvertiseAddress: "192.0.2.10"}
	c.Spec.ControlPlane.BootstrapTokens = []machineadm.BootstrapToken{{Token: machineadm.SecretSource{Value: "abcdef.0123456789abcdef"}}}
	c.Spec.Node.Name = "cp1"
	c.Spec.Host.Files = []machineadm.File{{Path: "/etc/x", Content: "top-secret-content", Mode: "0600"}}
	return c
}

func plan(t *testing.T, a, b *machineadm.MachineBootstrapConfig) *Plan {
	t.Helper()
	x, err := Snapshot(a, testKey)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Snapshot(b, testKey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compute(x, y, Options{KubeadmVersion: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSameSpecPlansNothing(t *testing.T) {
	p := plan(t, cp("v1.37.2"), cp("v1.37.2"))
	if len(p.Changes) != 0 || !p.Empty() || p.Drain {
		t.Fatalf("same spec: %+v", p)
	}
	var b strings.Builder
	p.Print(&b)
	if !strings.Contains(b.String(), "no change") {
		t.Errorf("plan print: %s", b.String())
	}
}

// TestPlanOrder changes fields of every in-place kind at once and checks
// the phases come in PhaseOrder, control-plane components in kubeadm's
// order, whatever the order of the fields in the spec.
func TestPlanOrder(t *testing.T) {
	a := cp("v1.36.3")
	b := cp("v1.37.2")
	b.Spec.Host.StaticPods = []machineadm.StaticPod{{Name: "x", Manifest: "apiVersion: v1"}}
	b.Spec.ControlPlane.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "v", Value: "2"}}
	b.Spec.ControlPlane.APIServer.ExtraArgs = []machineadm.Arg{{Name: "audit-log-maxage", Value: "3"}}
	b.Spec.ControlPlane.Etcd.Local = &machineadm.LocalEtcd{}
	a.Spec.ControlPlane.Etcd.Local = &machineadm.LocalEtcd{}
	b.Spec.ControlPlane.Etcd.Local.ExtraArgs = []machineadm.Arg{{Name: "snapshot-count", Value: "1000"}}
	b.Spec.Host.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
	b.Spec.Host.Containerd = &machineadm.Containerd{SandboxImage: "pause:3.10"}
	b.Spec.Host.Files[0].Content = "other"
	b.Spec.Host.KernelModules = []string{"overlay"}
	p := plan(t, a, b)
	if r := p.Refused(); len(r) != 0 {
		t.Fatalf("refused: %+v", r)
	}
	var got []string
	for _, s := range p.Steps {
		got = append(got, s.Phase)
	}
	want := []string{PhaseDrain, PhaseFiles, PhaseKernelModules, PhaseSysctl, PhaseContainerd, PhaseKubeadm, PhaseControlPlane, PhaseKubelet, PhaseStaticPods, PhaseUncordon}
	if !slices.Equal(got, want) {
		t.Fatalf("phases %v\nwant %v", got, want)
	}
	s, _ := p.Step(PhaseControlPlane)
	if !slices.Equal(s.Components, []string{ComponentEtcd, ComponentAPIServer, ComponentScheduler}) {
		t.Errorf("components %v", s.Components)
	}
	if p.From != "v1.36.3" || p.To != "v1.37.2" {
		t.Errorf("versions %s -> %s", p.From, p.To)
	}
	var out strings.Builder
	p.Print(&out)
	text := out.String()
	if strings.Contains(text, "other") || strings.Contains(text, "top-secret") || strings.Contains(text, "apiVersion: v1") {
		t.Errorf("the plan shows a secret value:\n%s", text)
	}
	for i, ph := range want {
		if !strings.Contains(text, fmt.Sprintf("%d. %s", i+1, ph)) {
			t.Errorf("plan print lacks step %d %s:\n%s", i+1, ph, text)
		}
	}
}

func TestVersionRules(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		refused  string
	}{
		{"v1.36.3", "v1.37.2", ""},
		{"v1.37.0", "v1.37.2", ""},
		{"v1.37.2", "v1.37.1", "does not downgrade"},
		{"v1.36.3", "v1.35.0", "does not downgrade"},
		{"v1.35.3", "v1.37.2", "one minor version at a time"},
		{"v1.36.3", "v1.36.5", "upgrades to v1.37.x only"},
		{"v1.37.0", "v1.37.3", "newer than the embedded kubeadm"},
		{"v1.37.0", "latest", "cannot compare"},
	} {
		p := plan(t, cp(tc.from), cp(tc.to))
		if len(p.Changes) != 1 || p.Changes[0].Path != "spec.kubernetes.version" {
			t.Fatalf("%s -> %s: %+v", tc.from, tc.to, p.Changes)
		}
		c := p.Changes[0]
		if tc.refused == "" {
			if c.Refused || !p.Has(PhaseKubeadm) || !p.Has(PhaseKubelet) || !p.Drain {
				t.Errorf("%s -> %s: %+v steps %+v", tc.from, tc.to, c, p.Steps)
			}
			continue
		}
		if !c.Refused || !strings.Contains(c.Reason(), tc.refused) || len(p.Steps) != 0 {
			t.Errorf("%s -> %s: refused %v (%s), want %q", tc.from, tc.to, c.Refused, c.Reason(), tc.refused)
		}
		if errs := p.Errors(); len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), "spec.kubernetes.version") {
			t.Errorf("%s -> %s: errors %v", tc.from, tc.to, errs)
		}
	}
}

func TestUnknownFieldIsRefused(t *testing.T) {
	p, err := Compute(json.RawMessage(`{"spec":{"newThing":"a"}}`), json.RawMessage(`{"spec":{"newThing":"b"}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || !p.Changes[0].Refused || !strings.Contains(p.Changes[0].Reason(), "does not know") {
		t.Fatalf("%+v", p.Changes)
	}
}

// TestRecordWithholdsSecrets writes a record and checks the file: mode
// 0600, no secret value in it, and a changed secret still found.
func TestRecordWithholdsSecrets(t *testing.T) {
	dir := t.TempDir()
	c := cp("v1.37.2")
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecord(c, "sha256:aa", "bootstrap", "v0.1.0", key, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(filepath.Join(dir, "work")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "work", RecordFile)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(p)
	for _, s := range []string{"top-secret-content", "0123456789abcdef"} {
		if strings.Contains(string(data), s) {
			t.Errorf("record holds secret %q:\n%s", s, data)
		}
	}
	if c.Spec.Host.Files[0].Content != "top-secret-content" {
		t.Errorf("Snapshot changed the spec it was given")
	}
	got, err := ReadRecord(filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	if got.SpecDigest != "sha256:aa" || got.KubernetesVersion != "v1.37.2" || got.Key != key {
		t.Errorf("record read back: %+v", got)
	}
	b := cp("v1.37.2")
	b.Spec.Host.Files[0].Content = "new-secret-content"
	snap, err := Snapshot(b, got.Key)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Compute(got.Spec, snap, Options{KubeadmVersion: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) != 1 || pl.Changes[0].Path != "spec.host.files" || !pl.Has(PhaseFiles) {
		t.Fatalf("a changed secret file content: %+v", pl.Changes)
	}
	same, _ := Snapshot(cp("v1.37.2"), got.Key)
	if pl, _ := Compute(got.Spec, same, Options{}); len(pl.Changes) != 0 {
		t.Errorf("the recorded spec differs from itself: %+v", pl.Changes)
	}
	if _, err := ReadRecord(t.TempDir()); err == nil || !strings.Contains(err.Error(), ErrNoRecord.Error()) {
		t.Errorf("missing record: %v", err)
	}
}

// TestSystemdVersionChangeReplacesUnits: on a Systemd control plane a
// version change brings every component into the control-plane step
// (the units' upgrade), in order; on static pods it does not.
func TestSystemdVersionChangeReplacesUnits(t *testing.T) {
	a, b := cp("v1.36.3"), cp("v1.37.2")
	a.Spec.ControlPlane.Runtime, b.Spec.ControlPlane.Runtime = machineadm.RuntimeSystemd, machineadm.RuntimeSystemd
	p := plan(t, a, b)
	s, ok := p.Step(PhaseControlPlane)
	if !ok || !slices.Equal(s.Components, ControlPlaneComponents) || !slices.Contains(s.Paths, "spec.kubernetes.version") {
		t.Fatalf("systemd: %+v", p.Steps)
	}
	if p := plan(t, cp("v1.36.3"), cp("v1.37.2")); p.Has(PhaseControlPlane) {
		t.Errorf("static pods: a version change alone planned control-plane: %+v", p.Steps)
	}
}

// TestOnlyANewKubeletBinaryRestartsTheKubelet: a changed file plans the
// files phase alone; a changed kubelet binary (a digest-pinned source)
// also the kubelet's restart.
func TestOnlyANewKubeletBinaryRestartsTheKubelet(t *testing.T) {
	a, b := cp("v1.37.2"), cp("v1.37.2")
	b.Spec.Host.Files[0].Content = "changed"
	if p := plan(t, a, b); !p.Has(PhaseFiles) || p.Has(PhaseKubelet) {
		t.Errorf("a changed file: %+v", p.Steps)
	}
	kubelet := func(sum string) machineadm.File {
		return machineadm.File{Path: "/usr/local/bin/kubelet", Mode: "0755", Source: &machineadm.RemoteSource{URL: "https://dl.example/kubelet", SHA256: sum}}
	}
	a.Spec.Host.Files = append(a.Spec.Host.Files, kubelet(strings.Repeat("a", 64)))
	b = cp("v1.37.2")
	b.Spec.Host.Files = append(b.Spec.Host.Files, kubelet(strings.Repeat("b", 64)))
	if p := plan(t, a, b); !p.Has(PhaseFiles) || !p.Has(PhaseKubelet) {
		t.Errorf("a new kubelet binary: %+v", p.Steps)
	}
}

// TestTypedSecurityPlan: a new audit policy (U11), a changed audit rule
// and a new API server flag on a running control plane write the API
// server's security files first, then regenerate the API server alone;
// nothing is drained and nothing is refused.
func TestTypedSecurityPlan(t *testing.T) {
	a := cp("v1.37.2")
	b := cp("v1.37.2")
	b.Spec.ControlPlane.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}}
	b.Spec.ControlPlane.APIServer.ExtraArgs = []machineadm.Arg{{Name: "request-timeout", Value: "2m"}}
	for name, p := range map[string]*Plan{
		"added": plan(t, a, b),
		"policy changed": func() *Plan {
			c := cp("v1.37.2")
			c.Spec.ControlPlane.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "RequestResponse"}}}}
			c.Spec.ControlPlane.APIServer.ExtraArgs = b.Spec.ControlPlane.APIServer.ExtraArgs
			return plan(t, b, c)
		}(),
	} {
		if r := p.Refused(); len(r) != 0 {
			t.Fatalf("%s: refused %+v", name, r)
		}
		var got []string
		for _, s := range p.Steps {
			got = append(got, s.Phase)
		}
		if want := []string{PhaseAPIServerConfig, PhaseControlPlane}; !slices.Equal(got, want) {
			t.Errorf("%s: phases %v, want %v", name, got, want)
		}
		if s, _ := p.Step(PhaseControlPlane); !slices.Equal(s.Components, []string{ComponentAPIServer}) {
			t.Errorf("%s: components %v, want the API server alone", name, s.Components)
		}
		if p.Drain {
			t.Errorf("%s: an API server setting drains the node", name)
		}
	}
	// The rerun: the same spec plans nothing.
	if p := plan(t, b, b); !p.Empty() {
		t.Errorf("rerun plans %+v", p.Steps)
	}
}

// TestProfilePlan: a profile change re-runs the compliance evidence after
// the node is uncordoned and before the spec is recorded; the flags and
// kubelet settings the profile defaults change in their own phases.
func TestProfilePlan(t *testing.T) {
	a := cp("v1.37.2")
	b := cp("v1.37.2")
	b.Spec.Security = &machineadm.Security{Profile: "cis-1.12"}
	b.Spec.ControlPlane.APIServer.ExtraArgs = []machineadm.Arg{{Name: "profiling", Value: "false"}}
	b.Spec.Node.Kubelet.Config = map[string]any{"eventRecordQPS": 5}
	p := plan(t, a, b)
	var got []string
	for _, s := range p.Steps {
		got = append(got, s.Phase)
	}
	want := []string{PhaseDrain, PhaseControlPlane, PhaseKubelet, PhaseUncordon, PhaseCompliance}
	if !slices.Equal(got, want) {
		t.Fatalf("phases %v\nwant %v", got, want)
	}
	if s, _ := p.Step(PhaseCompliance); !slices.Equal(s.Paths, []string{"spec.security"}) {
		t.Errorf("compliance step brought in by %v", s.Paths)
	}
}

// TestFalseAndZeroSettingsAreChanges: a free-form map of the spec (the
// kubelet configuration patch) that gains a key with a false or zero
// value changes the node (the kubelet's defaults are often true or
// non-zero), and so does one that loses it; a struct's zero values stay
// equal to their absence.
func TestFalseAndZeroSettingsAreChanges(t *testing.T) {
	a := cp("v1.37.2")
	b := cp("v1.37.2")
	b.Spec.Node.Kubelet.Config = map[string]any{"serializeImagePulls": false, "readOnlyPort": 0}
	for name, p := range map[string]*Plan{"added": plan(t, a, b), "removed": plan(t, b, a)} {
		if !p.Has(PhaseKubelet) || len(p.Changes) != 1 || p.Changes[0].Path != "spec.node.kubelet.config" {
			t.Errorf("%s: plan %+v", name, p.Changes)
		}
	}
	c := cp("v1.37.2")
	c.Spec.Node.Kubelet.Config = map[string]any{}
	if p := plan(t, a, c); !p.Empty() {
		t.Errorf("an empty kubelet configuration patch planned %+v", p.Changes)
	}
	if !freeFormPaths()["spec.node.kubelet.config"] || freeFormPaths()["spec.node.kubelet"] {
		t.Errorf("free-form paths %v", freeFormPaths())
	}
}

// TestRemovingTheWritingEncryptionKeyIsRefused: objects are encrypted
// with the recorded spec's first provider of their resources; a new spec
// that drops that provider or its key (encryption removed, the key
// replaced, a new secret under the same name) would leave them unreadable
// and is refused, naming the resource. Adding a key, making identity or
// a new key first while the old one stays readable, and removing a key
// that was no longer first (the rotation's last step) are applied.
func TestRemovingTheWritingEncryptionKeyIsRefused(t *testing.T) {
	key := func(name, secret string) machineadm.EncryptionKey {
		return machineadm.EncryptionKey{Name: name, Secret: machineadm.SecretSource{Value: secret}}
	}
	aescbc := func(keys ...machineadm.EncryptionKey) machineadm.EncryptionProvider {
		return machineadm.EncryptionProvider{AESCBC: &machineadm.EncryptionKeys{Keys: keys}}
	}
	identity := machineadm.EncryptionProvider{Identity: &machineadm.IdentityProvider{}}
	with := func(res []string, providers ...machineadm.EncryptionProvider) *machineadm.MachineBootstrapConfig {
		c := cp("v1.37.2")
		if providers != nil {
			c.Spec.ControlPlane.APIServer.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{{Resources: res, Providers: providers}}}
		}
		return c
	}
	k1, k2 := key("k1", "c2VjcmV0LWtleS1vbmUtMzItYnl0ZXMtbG9uZy0hIQ=="), key("k2", "c2VjcmV0LWtleS10d28tMzItYnl0ZXMtbG9uZy0hISE=")
	old := with([]string{"secrets"}, aescbc(k1), identity)
	for name, tc := range map[string]struct {
		a, b    *machineadm.MachineBootstrapConfig
		refused bool
	}{
		"encryption removed":           {old, with(nil), true},
		"key replaced":                 {old, with([]string{"secrets"}, aescbc(k2), identity), true},
		"same name, new secret":        {old, with([]string{"secrets"}, aescbc(key("k1", k2.Secret.Value)), identity), true},
		"identity only":                {old, with([]string{"secrets"}, identity), true},
		"resource dropped":             {old, with([]string{"configmaps"}, aescbc(k1), identity), true},
		"new key added second":         {old, with([]string{"secrets"}, aescbc(k1, k2), identity), false},
		"new key made first":           {with([]string{"secrets"}, aescbc(k1, k2), identity), with([]string{"secrets"}, aescbc(k2, k1), identity), false},
		"old key removed after":        {with([]string{"secrets"}, aescbc(k2, k1), identity), with([]string{"secrets"}, aescbc(k2), identity), false},
		"identity made first":          {old, with([]string{"secrets"}, identity, aescbc(k1)), false},
		"removed after identity first": {with([]string{"secrets"}, identity, aescbc(k1)), with(nil), false},
		"wildcard keeps it":            {old, with([]string{"*.*"}, aescbc(k1), identity), false},
	} {
		p := plan(t, tc.a, tc.b)
		r := p.Refused()
		if got := len(r) != 0; got != tc.refused {
			t.Errorf("%s: refused %v, want %v (%+v)", name, got, tc.refused, p.Changes)
			continue
		}
		if tc.refused && (r[0].Path != "spec.controlPlane.apiServer.encryption" || !strings.Contains(r[0].Reason(), "secrets") || strings.Contains(r[0].Reason(), k1.Secret.Value)) {
			t.Errorf("%s: refusal %s: %s", name, r[0].Path, r[0].Reason())
		}
	}
}

// TestTypedSecuritySettingsOfZeroValuesAreChanges: a typed API-server
// security setting is there or not, whatever its values: anonymous
// authentication turned off (enabled: false, all zero values) is a
// change that rewrites the files and restarts the API server, and so is
// its removal (anonymous requests allowed again).
func TestTypedSecuritySettingsOfZeroValuesAreChanges(t *testing.T) {
	a := cp("v1.37.2")
	b := cp("v1.37.2")
	b.Spec.ControlPlane.APIServer.Authentication = &machineadm.Authentication{Anonymous: &machineadm.AnonymousAuthentication{Enabled: false}}
	for name, p := range map[string]*Plan{"added": plan(t, a, b), "removed": plan(t, b, a)} {
		if len(p.Changes) != 1 || p.Changes[0].Path != "spec.controlPlane.apiServer.authentication" || !p.Has(PhaseAPIServerConfig) || !p.Has(PhaseControlPlane) {
			t.Errorf("%s: changes %+v, steps %+v", name, p.Changes, p.Steps)
		}
	}
	if p := plan(t, b, b); !p.Empty() {
		t.Errorf("the same setting again planned %+v", p.Changes)
	}
}

// TestChangedKeysShowOnlyWhatEachSideHas: a map compared whole (labels)
// shows on each side only the keys that side has and that differ. A key
// only the other side had was shown as "key=", which reads as a label
// with an empty value: {pool: general} -> {a: b} printed
// "a=, pool=general" -> "a=b, pool=".
func TestChangedKeysShowOnlyWhatEachSideHas(t *testing.T) {
	a, b := cp("v1.37.2"), cp("v1.37.2")
	a.Spec.Node.Labels = map[string]string{"pool": "general", "zone": "z1"}
	b.Spec.Node.Labels = map[string]string{"a": "b", "zone": "z1"}
	p := plan(t, a, b)
	i := slices.IndexFunc(p.Changes, func(c Change) bool { return c.Path == "spec.node.labels" })
	if i < 0 {
		t.Fatalf("no change of spec.node.labels: %+v", p.Changes)
	}
	if c := p.Changes[i]; c.Old != "pool=general" || c.New != "a=b" {
		t.Errorf("spec.node.labels: %q -> %q, want \"pool=general\" -> \"a=b\"", c.Old, c.New)
	}
	// A label with an empty value added: shown on the new side only (it
	// was shown on neither, "" -> "").
	b.Spec.Node.Labels = map[string]string{"pool": "general", "zone": "z1", "a": ""}
	a.Spec.Node.Labels = map[string]string{"pool": "general", "zone": "z1"}
	p = plan(t, a, b)
	i = slices.IndexFunc(p.Changes, func(c Change) bool { return c.Path == "spec.node.labels" })
	if i < 0 || !p.Changes[i].Refused {
		t.Fatalf("no refused change of spec.node.labels: %+v", p.Changes)
	}
	if c := p.Changes[i]; c.Old != "" || c.New != "a=" {
		t.Errorf("spec.node.labels: %q -> %q, want \"\" -> \"a=\"", c.Old, c.New)
	}
}
