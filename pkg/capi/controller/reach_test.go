//go:build !windows

package controller

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/spec"
)

// The tests below cover what issue 26 brings to the provider's API: the
// systemd control plane with its binaries' sources, the domain join with
// its secret from a Secret, Windows Machines and the payload endpoint for
// data over the user-data limit. Each has its admission refusals, by field
// path, here too.

// cloudConfigFile returns the content of the write_files entry at path of
// cloud-config bootstrap data, decoded.
func cloudConfigFile(t testing.TB, data []byte, path string) []byte {
	t.Helper()
	var cc struct {
		WriteFiles []struct{ Path, Encoding, Content string } `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	for _, w := range cc.WriteFiles {
		if w.Path == path {
			return gunzipBase64(t, w.Content)
		}
	}
	t.Fatalf("no %s in the bootstrap data", path)
	return nil
}

func gunzipBase64(t testing.TB, s string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// psSpecRE finds the spec the PowerShell stub carries.
var psSpecRE = regexp.MustCompile(`\[string\]\$SpecGzipBase64 = '([A-Za-z0-9+/=\s]+)'`)

// powerShellSpec returns the sealed spec file a PowerShell stub carries.
func powerShellSpec(t testing.TB, data []byte) []byte {
	t.Helper()
	m := psSpecRE.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no -SpecGzipBase64 in the PowerShell data:\n%.400s", data)
	}
	return gunzipBase64(t, strings.Join(strings.Fields(string(m[1])), ""))
}

// unsealFile opens a sealed spec file the way the machine does and
// returns the clear spec and the spec with the sealed values put back.
func (f *fixture) unsealFile(file []byte) (string, *machineadm.MachineBootstrapConfig) {
	f.t.Helper()
	clear, env, err := seal.Split(file)
	f.must(err)
	if env == nil {
		f.t.Fatal("the spec carries no SealedSecrets document")
	}
	l, err := spec.Load(clear, "clear spec")
	f.must(err)
	_, err = sealspec.Unseal(l.Config, env, sealspec.UnsealOptions{Identities: []seal.Identity{f.identity}, NodeName: "any-host", ClearSpec: clear})
	f.must(err)
	return string(clear), l.Config
}

// logBuffer is a logger that keeps every line, for tests that look for
// secrets in the controller's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// noSecretIn fails when a secret is in the config's status (conditions,
// outcome) or in the log.
func noSecretIn(t *testing.T, c *bootstrapv1.MachineadmConfig, log string, secrets ...string) {
	t.Helper()
	st, err := yaml.Marshal(c.Status)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(st), s) {
			t.Fatalf("the status holds a secret:\n%s", st)
		}
		if strings.Contains(log, s) {
			t.Fatalf("the log holds a secret:\n%s", log)
		}
	}
}

func TestWindowsNodeName(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{
		"w1", "win-0123456789a", "win-workers-7d9f8-x2k4q", "win-workers-7d9f8-x2k4r",
		"a.b", "machine.example.com", "x-------------------y", "0123456789012345678", "12345", "0",
	} {
		got := WindowsNodeName(name)
		if again := WindowsNodeName(name); again != got {
			t.Fatalf("%s: %q then %q", name, got, again)
		}
		if len(got) > MaxWindowsNameLen || strings.Contains(got, ".") {
			t.Errorf("%s → %q: longer than %d or with a dot", name, got, MaxWindowsNameLen)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("%s → %q is no Node name: %v", name, got, errs)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("%s and %s both map to %q", prev, name, got)
		}
		seen[got] = name
		if strings.Trim(got, "0123456789") == "" {
			t.Errorf("%s → %q: Windows refuses a computer name of digits only", name, got)
		} else if len(name) <= MaxWindowsNameLen && !strings.Contains(name, ".") && strings.Trim(name, "0123456789") != "" && got != name {
			t.Errorf("%s fits and must be kept, got %q", name, got)
		}
	}
	if got := WindowsNodeName("win-workers-7d9f8-x2k4q"); !strings.HasPrefix(got, "win-worke-") {
		t.Errorf("the mapped name keeps the Machine name's start: %q", got)
	}
}

func TestSystemdControlPlane(t *testing.T) {
	f := newFixture(t)
	_, c := f.machine("cp1", true)
	api := &bootstrapv1.RemoteSource{URL: "https://dl.example.invalid/v1.37.2/kube-apiserver", SHA256: strings.Repeat("a", 64)}
	etcd := &bootstrapv1.RemoteSource{URL: "https://dl.example.invalid/etcd", SHA256: strings.Repeat("b", 64)}
	c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{
		Runtime:       "Systemd",
		Binaries:      &bootstrapv1.ControlPlaneBinaries{KubeScheduler: "/opt/k8s/kube-scheduler"},
		BinarySources: &bootstrapv1.ControlPlaneBinarySources{KubeAPIServer: api, Etcd: etcd},
	}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	cfg, _ := f.unsealed(f.dataSecret("cp1").Data["value"])
	cp := cfg.Spec.ControlPlane
	if cp.Runtime != machineadm.RuntimeSystemd || cp.Binaries == nil {
		t.Fatalf("runtime %q binaries %+v", cp.Runtime, cp.Binaries)
	}
	want := machineadm.ControlPlaneBinaries{Etcd: "/usr/local/bin/etcd", KubeAPIServer: "/usr/local/bin/kube-apiserver",
		KubeControllerManager: "/usr/local/bin/kube-controller-manager", KubeScheduler: "/opt/k8s/kube-scheduler"}
	if *cp.Binaries != want {
		t.Fatalf("binaries %+v, want %+v", *cp.Binaries, want)
	}
	files := map[string]machineadm.File{}
	for _, x := range cfg.Spec.Host.Files {
		files[x.Path] = x
	}
	for path, src := range map[string]*bootstrapv1.RemoteSource{"/usr/local/bin/kube-apiserver": api, "/usr/local/bin/etcd": etcd} {
		got, ok := files[path]
		if !ok || got.Source == nil || got.Source.URL != src.URL || got.Source.SHA256 != src.SHA256 || got.Mode != "0755" {
			t.Errorf("%s: host file %+v, want source %+v mode 0755", path, got, src)
		}
	}
	if _, ok := files["/opt/k8s/kube-scheduler"]; ok {
		t.Errorf("a binary without a source is taken from the image, not delivered")
	}

	// A config file on a delivered binary's path is refused by field.
	f2 := newFixture(t)
	_, c2 := f2.machine("cp1", true)
	c2.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd", BinarySources: &bootstrapv1.ControlPlaneBinarySources{KubeAPIServer: api}}
	c2.Spec.Host.Files = []bootstrapv1.File{{Path: "/usr/local/bin/kube-apiserver", Content: "x", Mode: "0755"}}
	f2.must(k8s.Update(f2.ctx, c2))
	got := wantCond(t, f2.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !contains(got.Message, "spec.host.files[0].path", "binarySources.kubeAPIServer") {
		t.Fatalf("message %q", got.Message)
	}
}

func TestSystemdControlPlaneRefusedWithFieldPath(t *testing.T) {
	f := newFixture(t)
	src := &bootstrapv1.RemoteSource{URL: "https://dl.example.invalid/x", SHA256: agentSHA}
	ext := &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.20:2379"}}}
	cases := map[string]admissionCase{
		"unknown runtime": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Podman"}
		}, "spec.controlPlane.runtime"},
		"binaries with static pods": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Binaries: &bootstrapv1.ControlPlaneBinaries{KubeAPIServer: "/opt/x"}}
		}, "spec.controlPlane.binaries"},
		"sources with static pods": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "StaticPods", BinarySources: &bootstrapv1.ControlPlaneBinarySources{KubeAPIServer: src}}
		}, "spec.controlPlane.binarySources"},
		"relative binary path": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd", Binaries: &bootstrapv1.ControlPlaneBinaries{KubeScheduler: "bin/kube-scheduler"}}
		}, "spec.controlPlane.binaries.kubeScheduler"},
		"source without digest": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd", BinarySources: &bootstrapv1.ControlPlaneBinarySources{
				KubeControllerManager: &bootstrapv1.RemoteSource{URL: "https://dl.example.invalid/x", SHA256: "nothex"}}}
		}, "spec.controlPlane.binarySources.kubeControllerManager.sha256"},
		"etcd source with an external etcd": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd", Etcd: ext, BinarySources: &bootstrapv1.ControlPlaneBinarySources{Etcd: src}}
		}, "spec.controlPlane.binarySources.etcd"},
		"etcd binary with an external etcd": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd", Etcd: ext, Binaries: &bootstrapv1.ControlPlaneBinaries{Etcd: "/opt/etcd"}}
		}, "spec.controlPlane.binaries.etcd"},
		"static pods with systemd": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd"}
			s.Host.StaticPods = []bootstrapv1.StaticPod{{Name: "x", Manifest: "apiVersion: v1\nkind: Pod\n"}}
		}, "spec.host.staticPods"},
	}
	refusedWithPath(t, f, cases)
}

// domainJoinSecret is a Secret holding a domain password and an offline
// join blob.
const (
	domainPassword = "Tr0ub4dor&3-domain-admin"
	offlineBlob    = "ARAIAMzMzMzYAQAAAAAAAAAAAgABAAAAAQAAAAQAAgABAAAAAQAAAAxAAAAAAAAAB"
)

func TestDomainJoinFromSecret(t *testing.T) {
	f := newFixture(t)
	var logs logBuffer
	f.ctx = logr.NewContext(f.ctx, logs.logger())
	f.initialized()
	_, c := f.machine("w1", false)
	c.Spec.Host.DomainJoin = &bootstrapv1.DomainJoin{
		Domain: "samdom.example.com", DomainController: "dc1.samdom.example.com",
		Credentials: &bootstrapv1.DomainCredentials{Username: "Administrator",
			PasswordFrom: bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad-join", Key: "password"}}},
		Linux: &bootstrapv1.LinuxDomainJoin{WriteKrb5Conf: true},
	}
	f.must(k8s.Update(f.ctx, c))
	// Missing first: the condition names the field and no value.
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, f.ns+"/ad-join", "spec.host.domainJoin.credentials.passwordFrom.secret") {
		t.Fatalf("message %q", got.Message)
	}
	f.secret("ad-join", map[string][]byte{"password": []byte(domainPassword + "\n")})
	done := f.reconcile("w1")
	wantCond(t, done, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("w1")
	f.noLeak(ds, []byte(domainPassword))
	clear, items := f.opened(ds.Data["value"])
	if strings.Contains(clear, domainPassword) || !contains(clear, "samdom.example.com", "username: Administrator") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	if string(items["spec.host.domainJoin.credentials.password"]) != domainPassword {
		t.Fatalf("sealed items %v", keys(items))
	}
	cfg, _ := f.unsealed(ds.Data["value"])
	dj := cfg.Spec.Host.DomainJoin
	if dj == nil || dj.Credentials.Password.Value != domainPassword || dj.Linux == nil || !dj.Linux.WriteKrb5Conf || dj.DomainController != "dc1.samdom.example.com" {
		t.Fatalf("the machine would join with %+v", dj)
	}
	noSecretIn(t, done, logs.String(), domainPassword)
	if !strings.Contains(logs.String(), "wrote bootstrap data") {
		t.Fatalf("the log was not captured:\n%s", logs.String())
	}
}

func TestWindowsWorker(t *testing.T) {
	f := newFixture(t)
	var logs logBuffer
	f.ctx = logr.NewContext(f.ctx, logs.logger())
	f.initialized()
	f.secret("djoin", map[string][]byte{"blob": []byte(offlineBlob)})
	const long = "win-workers-7d9f8-x2k4q"
	_, c := f.machine(long, false)
	c.Spec.OS = bootstrapv1.OSWindows
	c.Spec.Host = bootstrapv1.HostSpec{
		Files: []bootstrapv1.File{{Path: `C:\ProgramData\app\app.conf`, Content: "x=1\n"}},
		DomainJoin: &bootstrapv1.DomainJoin{Domain: "samdom.example.com",
			OfflineJoinBlobFrom: &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "djoin", Key: "blob"}}},
	}
	f.must(k8s.Update(f.ctx, c))
	done := f.reconcile(long)
	wantCond(t, done, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	noSecretIn(t, done, logs.String(), offlineBlob)
	ds := f.dataSecret(long)
	name := WindowsNodeName(long)
	if string(ds.Data["format"]) != "powershell" || ds.Annotations[NodeNameAnnotation] != name || len(name) > 15 {
		t.Fatalf("format %q, node name annotation %q (want %q)", ds.Data["format"], ds.Annotations[NodeNameAnnotation], name)
	}
	f.noLeak(ds, []byte(offlineBlob))
	clear, cfg := f.unsealFile(powerShellSpec(t, ds.Data["value"]))
	if strings.Contains(clear, offlineBlob) {
		t.Fatalf("clear spec holds the blob:\n%s", clear)
	}
	if cfg.Spec.OS != machineadm.OSWindows || cfg.Spec.Node.Name != name || cfg.Spec.Host.DomainJoin.OfflineJoinBlob.Value != offlineBlob {
		t.Fatalf("os %q node %q domain join %+v", cfg.Spec.OS, cfg.Spec.Node.Name, cfg.Spec.Host.DomainJoin)
	}

	// The answer file, and a short name kept as it is.
	_, c2 := f.machine("win2", false)
	c2.Spec.OS, c2.Spec.Format, c2.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.FormatUnattend, bootstrapv1.HostSpec{}
	f.must(k8s.Update(f.ctx, c2))
	wantCond(t, f.reconcile("win2"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds2 := f.dataSecret("win2")
	if string(ds2.Data["format"]) != "unattend" || !bytes.Contains(ds2.Data["value"], []byte("<unattend")) || ds2.Annotations[NodeNameAnnotation] != "win2" {
		t.Fatalf("format %q annotation %q data %.200s", ds2.Data["format"], ds2.Annotations[NodeNameAnnotation], ds2.Data["value"])
	}

	// cloudbase-init's cloud-config: write_files carries the sealed spec
	// (unsealed here as the machine does) and the PowerShell stub, and
	// runcmd runs the stub.
	_, c3 := f.machine("win3", false)
	c3.Spec.OS, c3.Spec.Format, c3.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.FormatCloudbaseInit, bootstrapv1.HostSpec{}
	f.must(k8s.Update(f.ctx, c3))
	wantCond(t, f.reconcile("win3"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds3 := f.dataSecret("win3")
	if string(ds3.Data["format"]) != "cloudbase-init" || !bytes.HasPrefix(ds3.Data["value"], []byte("#cloud-config\n")) ||
		!bytes.Contains(ds3.Data["value"], []byte(`powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\ProgramData\machineadm\firstboot.ps1"`)) {
		t.Fatalf("format %q data %.300s", ds3.Data["format"], ds3.Data["value"])
	}
	var cbi struct {
		WriteFiles []struct{ Path, Encoding, Content string } `yaml:"write_files"`
	}
	f.must(yaml.Unmarshal(ds3.Data["value"], &cbi))
	var specFile []byte
	for _, wf := range cbi.WriteFiles {
		if wf.Path == `C:\ProgramData\machineadm\spec.yaml` && wf.Encoding == "gz+b64" {
			specFile = gunzipBase64(t, wf.Content)
		}
	}
	if specFile == nil {
		t.Fatalf("no gz+b64 spec in write_files: %+v", cbi.WriteFiles)
	}
	if _, cfg3 := f.unsealFile(specFile); cfg3.Spec.OS != machineadm.OSWindows || cfg3.Spec.Node.Name != "win3" {
		t.Fatalf("os %q node %q", cfg3.Spec.OS, cfg3.Spec.Node.Name)
	}

	// A Windows config on a control-plane Machine: InvalidConfig, spec.os.
	_, cp := f.machine("wincp", true)
	cp.Spec.OS, cp.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.HostSpec{}
	f.must(k8s.Update(f.ctx, cp))
	got := wantCond(t, f.reconcile("wincp"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.os: ") {
		t.Fatalf("message %q", got.Message)
	}
}

func TestWindowsAndDomainJoinRefusedWithFieldPath(t *testing.T) {
	f := newFixture(t)
	pw := bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad", Key: "password"}}
	blob := &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad", Key: "blob"}}
	win := func(s *bootstrapv1.MachineadmConfigSpec) {
		s.OS = bootstrapv1.OSWindows
		s.Host = bootstrapv1.HostSpec{}
	}
	cases := map[string]admissionCase{
		"unknown os": {func(s *bootstrapv1.MachineadmConfigSpec) { s.OS = "plan9" }, "spec.os"},
		"windows control plane": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
		}, "spec.controlPlane"},
		"windows file owner": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Host.Files = []bootstrapv1.File{{Path: `C:\x`, Content: "x", Owner: "1000"}}
		}, "spec.host.files"},
		"windows file group": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Host.Files = []bootstrapv1.File{{Path: `C:\x`, Content: "x", Group: "adm"}}
		}, "spec.host.files"},
		"windows with cloud-config": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Format = bootstrapv1.FormatCloudConfig
		}, "spec.format"},
		"linux with powershell":     {func(s *bootstrapv1.MachineadmConfigSpec) { s.Format = bootstrapv1.FormatPowerShell }, "spec.format"},
		"linux with cloudbase-init": {func(s *bootstrapv1.MachineadmConfigSpec) { s.Format = bootstrapv1.FormatCloudbaseInit }, "spec.format"},
		"windows sysctl": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Host.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
		}, "spec.host.sysctl"},
		"windows kernel modules": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Host.KernelModules = []string{"br_netfilter"}
		}, "spec.host.kernelModules"},
		"linux drive path": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: `C:\x`, Content: "x"}}
		}, "spec.host.files"},
		"domain join without a secret": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com"}
		}, "spec.host.domainJoin"},
		"domain join with both": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", Credentials: &bootstrapv1.DomainCredentials{Username: "a", PasswordFrom: pw}, OfflineJoinBlobFrom: blob}
		}, "spec.host.domainJoin"},
		"offline join on linux": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", OfflineJoinBlobFrom: blob}
		}, "spec.host.domainJoin.offlineJoinBlobFrom"},
		"linux options on windows": {func(s *bootstrapv1.MachineadmConfigSpec) {
			win(s)
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", OfflineJoinBlobFrom: blob, Linux: &bootstrapv1.LinuxDomainJoin{WriteKrb5Conf: true}}
		}, "spec.host.domainJoin.linux"},
		"domain not a DNS name": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "SAMDOM", Credentials: &bootstrapv1.DomainCredentials{Username: "a", PasswordFrom: pw}}
		}, "spec.host.domainJoin.domain"},
		"password key not a key": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", Credentials: &bootstrapv1.DomainCredentials{Username: "a",
				PasswordFrom: bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad", Key: "a/b"}}}}
		}, "spec.host.domainJoin.credentials.passwordFrom.secret.key"},
		"username with a line end": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", Credentials: &bootstrapv1.DomainCredentials{Username: "a\nb", PasswordFrom: pw}}
		}, "spec.host.domainJoin.credentials.username"},
		"user data limit": {func(s *bootstrapv1.MachineadmConfigSpec) { s.UserDataLimit = "gcp" }, "spec.userDataLimit"},
	}
	refusedWithPath(t, f, cases)
	// Valid Windows and domain-join configs are accepted.
	ok := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: f.ns}, Spec: f.spec()}
	win(&ok.Spec)
	ok.Spec.Format = bootstrapv1.FormatUnattend
	ok.Spec.UserDataLimit = "azure"
	ok.Spec.Host.Files = []bootstrapv1.File{{Path: `C:\ProgramData\x`, Content: "x"}}
	ok.Spec.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", OfflineJoinBlobFrom: blob}
	f.must(k8s.Create(f.ctx, ok))
	ok2 := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{Name: "ok2", Namespace: f.ns}, Spec: f.spec()}
	ok2.Spec.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com", Credentials: &bootstrapv1.DomainCredentials{Username: "Administrator", PasswordFrom: pw},
		Linux: &bootstrapv1.LinuxDomainJoin{Keytab: "/etc/krb5.keytab", WriteSSSDConf: true}}
	f.must(k8s.Create(f.ctx, ok2))
	// The template carries the same rules.
	tpl := &bootstrapv1.MachineadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: f.ns},
		Spec: bootstrapv1.MachineadmConfigTemplateSpec{Template: bootstrapv1.MachineadmConfigTemplateResource{Spec: f.spec()}}}
	win(&tpl.Spec.Template.Spec)
	tpl.Spec.Template.Spec.Host.Files = []bootstrapv1.File{{Path: `C:\x`, Owner: "0"}}
	if err := k8s.Create(f.ctx, tpl); err == nil || !strings.Contains(err.Error(), "spec.template.spec.host.files") {
		t.Fatalf("template: %v", err)
	}
}

// Two Windows Machines whose Node names meet after the 15-character
// mapping (a Machine named like another's mapped name) would be one Node
// with two kubelets: the second config waits, reason NodeNameTaken, with
// no data, whichever came first; it goes on once the other is gone.
func TestWindowsNodeNameCollision(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	windows := func(name string) {
		_, c := f.machine(name, false)
		c.Spec.OS, c.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.HostSpec{}
		f.must(k8s.Update(f.ctx, c))
	}
	// The long one first: the Machine named its mapped name waits.
	const long = "win-workers-7d9f8-x2k4q"
	windows(long)
	wantCond(t, f.reconcile(long), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	short := WindowsNodeName(long)
	windows(short)
	got := wantCond(t, f.reconcile(short), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonNodeNameTaken)
	if !strings.Contains(got.Message, long) {
		t.Fatalf("message %q does not name the other Machine's Secret", got.Message)
	}
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: short}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a data Secret was written for the colliding Machine: %v", err)
	}
	// The short one first: the long one whose mapped name it is waits.
	const long2 = "win-workers-7d9f8-zz9zz"
	short2 := WindowsNodeName(long2)
	windows(short2)
	wantCond(t, f.reconcile(short2), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	windows(long2)
	got = wantCond(t, f.reconcile(long2), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonNodeNameTaken)
	if !strings.Contains(got.Message, "Machine "+f.ns+"/"+short2) {
		t.Fatalf("message %q does not name the Machine", got.Message)
	}
	// The first one gone: the second goes on.
	f.must(k8s.Delete(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: long}}))
	wantCond(t, f.reconcile(short), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
}

// A domain join Secret whose value is only white space (an empty file
// made into a Secret) is MissingSecret naming the config's field; it was
// InvalidConfig naming the machine spec's spec.host.domainJoin.*.password,
// a field the config does not have.
func TestDomainJoinBlankSecret(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.secret("ad", map[string][]byte{"password": []byte(" \n"), "blob": {}})
	_, c := f.machine("w1", false)
	c.Spec.Host.DomainJoin = &bootstrapv1.DomainJoin{Domain: "samdom.example.com",
		Credentials: &bootstrapv1.DomainCredentials{Username: "Administrator",
			PasswordFrom: bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad", Key: "password"}}}}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, "spec.host.domainJoin.credentials.passwordFrom.secret", "white space") {
		t.Fatalf("message %q", got.Message)
	}
	_, w := f.machine("win1", false)
	w.Spec.OS, w.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.HostSpec{DomainJoin: &bootstrapv1.DomainJoin{Domain: "samdom.example.com",
		OfflineJoinBlobFrom: &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad", Key: "blob"}}}}
	f.must(k8s.Update(f.ctx, w))
	got = wantCond(t, f.reconcile("win1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, "spec.host.domainJoin.offlineJoinBlobFrom.secret") {
		t.Fatalf("message %q", got.Message)
	}
	// A blob that is no djoin output (a password pasted by mistake): the
	// config's field too, and never the value.
	const notBlob = "Pa$$w0rd!-not-a-blob"
	f.secret("ad2", map[string][]byte{"blob": []byte(notBlob)})
	_, w2 := f.machine("win2", false)
	w2.Spec.OS, w2.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.HostSpec{DomainJoin: &bootstrapv1.DomainJoin{Domain: "samdom.example.com",
		OfflineJoinBlobFrom: &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "ad2", Key: "blob"}}}}
	f.must(k8s.Update(f.ctx, w2))
	got = wantCond(t, f.reconcile("win2"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingSecret)
	if !contains(got.Message, "spec.host.domainJoin.offlineJoinBlobFrom.secret", "djoin") || strings.Contains(got.Message, notBlob) {
		t.Fatalf("message %q", got.Message)
	}
}

// A binarySources URL carrying a credential is InvalidConfig naming the
// config's field; it was refused at render, naming the spec.host.files
// entry the controller made from it.
func TestSystemdBinarySourceCredentialNamesField(t *testing.T) {
	f := newFixture(t)
	_, c := f.machine("cp1", true)
	c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd", BinarySources: &bootstrapv1.ControlPlaneBinarySources{
		KubeScheduler: &bootstrapv1.RemoteSource{URL: "https://dl.example.invalid/raw/ghp_0123456789abcdefghijklmnopqrstuvwxyz/kube-scheduler", SHA256: strings.Repeat("a", 64)}}}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.controlPlane.binarySources.kubeScheduler.url: ") || strings.Contains(got.Message, "ghp_") {
		t.Fatalf("message %q", got.Message)
	}
}
