package kubeadm

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/version"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// testInputs are fixed, obviously fake secrets of valid shape.
func testInputs(cfg *machineadm.MachineBootstrapConfig) Inputs {
	in := Inputs{}
	if cfg.Spec.Join != nil {
		in.JoinToken = "abcdef.0123456789abcdef"
	}
	if cp := cfg.Spec.ControlPlane; cp != nil {
		if cp.CertificateKey != nil {
			in.CertificateKey = strings.Repeat("ab", 32)
		}
		for range cp.BootstrapTokens {
			in.BootstrapTokens = append(in.BootstrapTokens, "ghijkl.0123456789ghijkl")
		}
	}
	if KubeletConfig(cfg) != nil {
		in.PatchesDir = "/var/lib/machineadm/patches"
	}
	return in
}

func loadExample(t testing.TB, name string) *machineadm.MachineBootstrapConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

func requireStamped(t testing.TB) {
	t.Helper()
	if err := version.CheckStamped(); err != nil {
		t.Fatalf("%v (run `make test`)", err)
	}
}

// TestTranslateGolden translates every example and compares with
// testdata/<example>.kubeadm.yaml; Translate also ran kubeadm's own
// validation on the documents.
func TestTranslateGolden(t *testing.T) {
	requireStamped(t)
	for _, name := range []string{"control-plane-init.yaml", "control-plane-join.yaml", "worker.yaml"} {
		t.Run(name, func(t *testing.T) {
			cfg := loadExample(t, name)
			docs, err := Translate(cfg, testInputs(cfg))
			if err != nil {
				t.Fatal(err)
			}
			if docs.APIVersion != "kubeadm.k8s.io/v1beta4" {
				t.Errorf("APIVersion = %q", docs.APIVersion)
			}
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".yaml")+".kubeadm.yaml")
			if *update {
				if err := os.WriteFile(golden, docs.YAML, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(docs.YAML, want) {
				t.Errorf("translation differs from %s (run go test -update to accept):\n%s", golden, docs.YAML)
			}
		})
	}
}

func TestConfigAPIVersion(t *testing.T) {
	for _, tc := range []struct {
		version, want string
		wantErr       bool
	}{
		{"v1.31.0", "kubeadm.k8s.io/v1beta4", false},
		{"v1.37.2", "kubeadm.k8s.io/v1beta4", false},
		{"v1.30.9", "", true},
		{"v1.38.0", "", true},
		{"v2.0.0", "", true},
		{"1.37.2", "", true},
	} {
		got, err := ConfigAPIVersion(tc.version)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ConfigAPIVersion(%q) = %q, %v; want %q, error %v", tc.version, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestTranslateKubeadmRejects shows kubeadm's own validation running:
// v1.35 is inside machineadm's v1beta4 range but below what kubeadm 1.37
// deploys, and a bad token shape is refused.
func TestTranslateKubeadmRejects(t *testing.T) {
	requireStamped(t)
	cfg := loadExample(t, "control-plane-init.yaml")
	cfg.Spec.Kubernetes.Version = "v1.35.0"
	if _, err := Translate(cfg, testInputs(cfg)); err == nil || !strings.Contains(err.Error(), "kubeadm rejected") {
		t.Errorf("v1.35.0: got %v, want kubeadm's refusal", err)
	}

	w := loadExample(t, "worker.yaml")
	in := testInputs(w)
	in.JoinToken = "not-a-token"
	_, err := Translate(w, in)
	if err == nil {
		t.Fatal("bad join token accepted")
	}
	if strings.Contains(err.Error(), "not-a-token") {
		t.Errorf("error echoes the token: %v", err)
	}
}

func TestTranslateMapping(t *testing.T) {
	requireStamped(t)
	cfg := loadExample(t, "worker.yaml")
	empty := []machineadm.Taint{}
	cfg.Spec.Node.Taints = &empty
	cfg.Spec.Node.Kubelet.ExtraArgs = []machineadm.Arg{{Name: "max-pods", Value: "50"}}
	docs, err := Translate(cfg, testInputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	y := string(docs.YAML)
	for _, want := range []string{
		"kind: JoinConfiguration",
		"apiServerEndpoint: cp.demo.example:6443",
		"- sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10",
		"taints: []",
		"value: example.com/pool=general",
		"name: max-pods",
		"discovery: 5m0s",
		"directory: /var/lib/machineadm/patches",
	} {
		if !strings.Contains(y, want) {
			t.Errorf("JoinConfiguration lacks %q:\n%s", want, y)
		}
	}
	if strings.Contains(y, "controlPlane:") {
		t.Errorf("worker join has a controlPlane section:\n%s", y)
	}
}

func TestKubeletPatch(t *testing.T) {
	cfg := loadExample(t, "worker.yaml")
	dir := t.TempDir()
	ok, err := WriteKubeletPatch(cfg, dir)
	if err != nil || !ok {
		t.Fatalf("WriteKubeletPatch = %v, %v", ok, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kubeletconfiguration+merge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"failCgroupV1":false}` {
		t.Errorf("patch = %s", b)
	}
	cfg.Spec.Node.Kubelet.Config = nil
	if ok, err := WriteKubeletPatch(cfg, t.TempDir()); ok || err != nil {
		t.Errorf("no config: got %v, %v", ok, err)
	}

	// containerd's cgroup driver reaches the kubelet unless the kubelet
	// config names one.
	cfg.Spec.Host.Containerd = &machineadm.Containerd{CgroupDriver: "cgroupfs"}
	if kc := KubeletConfig(cfg); kc["cgroupDriver"] != "cgroupfs" {
		t.Errorf("KubeletConfig = %v, want cgroupDriver cgroupfs", kc)
	}
	cfg.Spec.Node.Kubelet.Config = map[string]any{"cgroupDriver": "systemd", "maxPods": 20}
	if kc := KubeletConfig(cfg); kc["cgroupDriver"] != "systemd" || kc["maxPods"] != 20 {
		t.Errorf("explicit kubelet cgroupDriver overridden: %v", kc)
	}
}

// BenchmarkLoadTranslate measures spec load + validate + translate
// (including kubeadm's own validation) of the control-plane-init example.
func BenchmarkLoadTranslate(b *testing.B) {
	requireStamped(b)
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "control-plane-init.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := spec.Load(data, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Translate(l.Config, testInputs(l.Config)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadOnly is the baseline: spec load + validate without the
// translation.
func BenchmarkLoadOnly(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "control-plane-init.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := spec.Load(data, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecoverJoinDoneMessageReraises: only the known panic of kubeadm's
// join command is absorbed; a panic anywhere else goes on.
func TestRecoverJoinDoneMessageReraises(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a foreign nil dereference was swallowed")
		}
	}()
	var err error
	func() {
		defer recoverJoinDoneMessage(nil, &err)
		var p *Inputs
		_ = p.JoinToken // nil dereference outside kubeadm's join command
	}()
	t.Error("not reached: the panic must propagate")
}

// TestControllerManagerDefaults: an Init's ClusterConfiguration carries
// machineadm's controller-manager flags for a fast first join; a flag the
// spec names keeps the spec's value, once, and the spec's other flags
// follow.
func TestControllerManagerDefaults(t *testing.T) {
	requireStamped(t)
	cfg := loadExample(t, "control-plane-init.yaml")
	cfg.Spec.ControlPlane.ControllerManager.ExtraArgs = nil
	docs, err := Translate(cfg, testInputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ControllerManagerDefaultArgs {
		if !strings.Contains(string(docs.YAML), "  - name: "+a.Name+"\n    value: ") {
			t.Errorf("default %s missing:\n%s", a.Name, docs.YAML)
		}
	}
	cfg.Spec.ControlPlane.ControllerManager.ExtraArgs = []machineadm.Arg{{Name: "kube-api-qps", Value: "50"}, {Name: "v", Value: "2"}}
	got := withDefaultArgs(cfg.Spec.ControlPlane.ControllerManager.ExtraArgs, ControllerManagerDefaultArgs)
	want := []machineadm.Arg{{Name: "kube-api-burst", Value: "300"}, {Name: "leader-elect-retry-period", Value: "500ms"}, {Name: "kube-api-qps", Value: "50"}, {Name: "v", Value: "2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	docs, err = Translate(cfg, testInputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if y := string(docs.YAML); strings.Count(y, "name: kube-api-qps") != 1 || !strings.Contains(y, "name: kube-api-qps\n    value: \"50\"") {
		t.Errorf("the spec's kube-api-qps does not replace the default:\n%s", y)
	}
}
