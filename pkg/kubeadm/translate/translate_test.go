package translate_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/spec"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestTranslateGolden translates every example and compares with
// testdata/<example>.kubeadm.yaml; Translate also ran kubeadm's own
// validation on the documents.
func TestTranslateGolden(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	for _, name := range []string{"control-plane-init.yaml", "control-plane-join.yaml", "worker.yaml", "control-plane-secured.yaml"} {
		t.Run(name, func(t *testing.T) {
			cfg := kubeadmtest.LoadExample(t, name)
			docs, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg))
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
		got, err := translate.ConfigAPIVersion(tc.version)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ConfigAPIVersion(%q) = %q, %v; want %q, error %v", tc.version, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestTranslateKubeadmRejects shows kubeadm's own validation running:
// v1.35 is inside machineadm's v1beta4 range but below what kubeadm 1.37
// deploys, and a bad token shape is refused.
func TestTranslateKubeadmRejects(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-init.yaml")
	cfg.Spec.Kubernetes.Version = "v1.35.0"
	if _, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg)); err == nil || !strings.Contains(err.Error(), "kubeadm rejected") {
		t.Errorf("v1.35.0: got %v, want kubeadm's refusal", err)
	}

	w := kubeadmtest.LoadExample(t, "worker.yaml")
	in := kubeadmtest.Inputs(w)
	in.JoinToken = "not-a-token"
	_, err := translate.Translate(w, in)
	if err == nil {
		t.Fatal("bad join token accepted")
	}
	if strings.Contains(err.Error(), "not-a-token") {
		t.Errorf("error echoes the token: %v", err)
	}
}

func TestTranslateMapping(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "worker.yaml")
	empty := []machineadm.Taint{}
	cfg.Spec.Node.Taints = &empty
	cfg.Spec.Node.Kubelet.ExtraArgs = []machineadm.Arg{{Name: "max-pods", Value: "50"}}
	docs, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg))
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
	cfg := kubeadmtest.LoadExample(t, "worker.yaml")
	dir := t.TempDir()
	ok, err := translate.WriteKubeletPatch(cfg, dir)
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
	if ok, err := translate.WriteKubeletPatch(cfg, t.TempDir()); ok || err != nil {
		t.Errorf("no config: got %v, %v", ok, err)
	}

	// containerd's cgroup driver reaches the kubelet unless the kubelet
	// config names one.
	cfg.Spec.Host.Containerd = &machineadm.Containerd{CgroupDriver: "cgroupfs"}
	if kc := translate.KubeletConfig(cfg); kc["cgroupDriver"] != "cgroupfs" {
		t.Errorf("KubeletConfig = %v, want cgroupDriver cgroupfs", kc)
	}
	cfg.Spec.Node.Kubelet.Config = map[string]any{"cgroupDriver": "systemd", "maxPods": 20}
	if kc := translate.KubeletConfig(cfg); kc["cgroupDriver"] != "systemd" || kc["maxPods"] != 20 {
		t.Errorf("explicit kubelet cgroupDriver overridden: %v", kc)
	}
}

// BenchmarkLoadTranslate measures spec load + validate + translate
// (including kubeadm's own validation) of the control-plane-init example.
func BenchmarkLoadTranslate(b *testing.B) {
	kubeadmtest.RequireStamped(b)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "examples", "control-plane-init.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := spec.Load(data, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := translate.Translate(l.Config, kubeadmtest.Inputs(l.Config)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadOnly is the baseline: spec load + validate without the
// translation.
func BenchmarkLoadOnly(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "examples", "control-plane-init.yaml"))
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

// TestControllerManagerDefaults: an Init's ClusterConfiguration carries
// machineadm's controller-manager flags for a fast first join; a flag the
// spec names keeps the spec's value, once, and the spec's other flags
// follow.
func TestControllerManagerDefaults(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-init.yaml")
	cfg.Spec.ControlPlane.ControllerManager.ExtraArgs = nil
	docs, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range translate.ControllerManagerDefaultArgs {
		if !strings.Contains(string(docs.YAML), "  - name: "+a.Name+"\n    value: ") {
			t.Errorf("default %s missing:\n%s", a.Name, docs.YAML)
		}
	}
	cfg.Spec.ControlPlane.ControllerManager.ExtraArgs = []machineadm.Arg{{Name: "kube-api-qps", Value: "50"}, {Name: "v", Value: "2"}}
	got := translate.WithDefaultArgs(cfg.Spec.ControlPlane.ControllerManager.ExtraArgs, translate.ControllerManagerDefaultArgs)
	want := []machineadm.Arg{{Name: "kube-api-burst", Value: "300"}, {Name: "leader-elect-retry-period", Value: "500ms"}, {Name: "kube-api-qps", Value: "50"}, {Name: "v", Value: "2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	docs, err = translate.Translate(cfg, kubeadmtest.Inputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if y := string(docs.YAML); strings.Count(y, "name: kube-api-qps") != 1 || !strings.Contains(y, "name: kube-api-qps\n    value: \"50\"") {
		t.Errorf("the spec's kube-api-qps does not replace the default:\n%s", y)
	}
}

// TestTranslateDryRunDiscovery: a join's dry run points kubeadm's
// discovery at the stand-in; the pins get the stand-in's only when its CA
// was made for the dry run.
func TestTranslateDryRunDiscovery(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "worker.yaml")
	in := kubeadmtest.Inputs(cfg)
	in.DryRun = true
	in.DryRunDiscovery = &translate.DryRunDiscovery{Endpoint: "127.0.0.1:40001", CACertHash: "sha256:" + strings.Repeat("ab", 32)}
	docs, err := translate.Translate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	if y := string(docs.YAML); !strings.Contains(y, "apiServerEndpoint: 127.0.0.1:40001") || strings.Contains(y, "abababab") {
		t.Errorf("spec CA: %s", y)
	}
	in.DryRunDiscovery.MadeCA = true
	if docs, err = translate.Translate(cfg, in); err != nil || !strings.Contains(string(docs.YAML), "- sha256:"+strings.Repeat("ab", 32)) || !strings.Contains(string(docs.YAML), cfg.Spec.Join.CACertHashes[0]) {
		t.Errorf("made CA: %v\n%s", err, docs.YAML)
	}
	if cfg.Spec.Join.APIServerEndpoint != "cp.demo.example:6443" || len(cfg.Spec.Join.CACertHashes) != 1 {
		t.Errorf("the spec was changed: %+v", cfg.Spec.Join)
	}
}

// TestTranslateOutOfRangeVersionNamesTheRoleRange: a version outside every
// kubeadm configuration API range is refused with the range of the
// spec's role, as one inside it is. It said "machineadm configures v1.31
// to v1.37", and a worker moved to v1.31 was then refused as too old.
func TestTranslateOutOfRangeVersionNamesTheRoleRange(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	for _, c := range []struct{ example, version, want string }{
		{"worker.yaml", "v1.30.0", "at least v1.34.0"},
		{"worker.yaml", "v1.38.0", "newer than the embedded kubeadm"},
		{"control-plane-init.yaml", "v1.29.3", "at least v1.36.0"},
	} {
		cfg := kubeadmtest.LoadExample(t, c.example)
		cfg.Spec.Kubernetes.Version = c.version
		_, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "machineadm configures") {
			t.Errorf("%s at %s: %v, want an error saying %q", c.example, c.version, err, c.want)
		}
	}
}
