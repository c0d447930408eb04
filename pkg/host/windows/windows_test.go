package windows

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update):\n%s", name, got)
	}
}

func TestContainerdConfig(t *testing.T) {
	c := &machineadm.Containerd{
		SandboxImage: "registry.k8s.io/pause:3.10",
		Runtimes:     []machineadm.Runtime{{Name: "runhcs-wcow-hypervisor", Type: RunhcsType, Options: map[string]any{"SandboxIsolation": float64(1)}}},
		ConfigPatch:  "[debug]\nlevel = 'info'\n",
	}
	for _, v := range []int{2, 3} {
		data, err := ContainerdConfig(c, v)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "config-v"+string(rune('0'+v))+".toml", data)
		var tree map[string]any
		if err := toml.Unmarshal(data, &tree); err != nil {
			t.Fatalf("v%d does not parse: %v", v, err)
		}
		if tree["grpc"].(map[string]any)["address"] != `\\.\pipe\containerd-containerd` {
			t.Errorf("v%d grpc address %v", v, tree["grpc"])
		}
		if strings.Contains(string(data), "SystemdCgroup") || strings.Contains(string(data), "runc") {
			t.Errorf("v%d carries Linux settings:\n%s", v, data)
		}
	}
	if _, err := ContainerdConfig(c, 1); err == nil {
		t.Error("version 1 accepted")
	}
}

func TestFeatures(t *testing.T) {
	out := []byte("Feature Name : Containers\r\nState : Disabled\r\n")
	st, err := FeatureState(out)
	if err != nil || st != "Disabled" {
		t.Fatalf("%q %v", st, err)
	}
	if _, err := FeatureState([]byte("Error: 87\n")); err == nil {
		t.Error("no State line accepted")
	}
	err = CheckFeature("Containers", st)
	if c, h := errclass.Of(err); c != errclass.HostPreparationFailed || !strings.Contains(h, "Install-WindowsFeature -Name Containers") {
		t.Errorf("disabled: %v %q", err, h)
	}
	if c, _ := errclass.Of(CheckFeature("Containers", "Enable Pending")); c != errclass.RebootRequired {
		t.Errorf("pending: %v", c)
	}
	if CheckFeature("Containers", "Enabled") != nil {
		t.Error("enabled refused")
	}
}

func TestKubeletServiceAndCommand(t *testing.T) {
	d := KubeletService(`C:\Program Files\machineadm\machineadm.exe`, "")
	want := `"C:\Program Files\machineadm\machineadm.exe" kubelet-service --kubelet C:\k\kubelet.exe`
	if got := d.CommandLine(); got != want {
		t.Errorf("CommandLine = %s, want %s", got, want)
	}
	if d.Name != "kubelet" || !d.AutoStart || !slices.Equal(d.Dependencies, []string{"containerd"}) || d.RestartDelay == 0 {
		t.Errorf("service %+v", d)
	}
	flags, err := ParseKubeadmFlags([]byte("KUBELET_KUBEADM_ARGS=\"--hostname-override=win-1 --node-labels=pool=win --register-with-taints=os=windows:NoSchedule\"\n"))
	if err != nil || len(flags) != 3 {
		t.Fatalf("flags %q %v", flags, err)
	}
	if _, err := ParseKubeadmFlags([]byte("OTHER=1\n")); err == nil {
		t.Error("a file without KUBELET_KUBEADM_ARGS accepted")
	}
	if f, err := ParseKubeadmFlags([]byte(`KUBELET_KUBEADM_ARGS=""`)); err != nil || len(f) != 0 {
		t.Errorf("empty flags: %q %v", f, err)
	}
	cmd := KubeletCommand(DefaultKubeletPath, flags)
	golden(t, "kubelet-command.txt", []byte(strings.Join(cmd, "\n")+"\n"))
	if cmd[len(cmd)-1] != "--register-with-taints=os=windows:NoSchedule" {
		t.Error("kubeadm's flags must come last (they win)")
	}
}

func TestQuoteArg(t *testing.T) {
	for in, want := range map[string]string{
		`C:\k\kubelet.exe`:            `C:\k\kubelet.exe`,
		`C:\Program Files\x.exe`:      `"C:\Program Files\x.exe"`,
		``:                            `""`,
		`a"b`:                         `"a\"b"`,
		`C:\dir with space\`:          `"C:\dir with space\\"`,
		`--enforce-node-allocatable=`: `--enforce-node-allocatable=`,
		`x\"y z`:                      `"x\\\"y z"`,
	} {
		if got := QuoteArg(in); got != want {
			t.Errorf("QuoteArg(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestStepsWithFakes(t *testing.T) {
	ctx := context.Background()
	run := &fakeRunner{containers: "Enabled", rules: map[string]bool{"machineadm NodePort UDP": true}}
	svcs := &fakeServices{services: map[string]ServiceState{}}
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.Host.Containerd = &machineadm.Containerd{ConfigFile: "C:/Program Files/containerd/config.toml", SandboxImage: "registry.k8s.io/pause:3.10"}
	o := Options{Runner: run, Services: svcs, MachineadmPath: `C:\Program Files\machineadm\machineadm.exe`}
	root := t.TempDir()
	names := func(s []host.Step) []string { return host.Names(s) }
	steps := Steps(cfg, o)
	if got := names(steps); !slices.Equal(got, []string{StepFeatures, StepContainerd, StepKubeletService, StepFirewall}) {
		t.Fatalf("steps %q", got)
	}
	apply := func(env *host.Env) []host.Result {
		t.Helper()
		var out []host.Result
		for _, s := range Steps(cfg, o) {
			if err := s.Check(ctx, env); err != nil {
				t.Fatalf("%s check: %v", s.Name, err)
			}
			r, err := s.Apply(ctx, env)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			out = append(out, r)
		}
		return out
	}
	// A dry run changes nothing.
	var dry bytes.Buffer
	for i, r := range apply(&host.Env{Root: root, DryRun: true, Out: &dry}) {
		if i > 0 && !r.Changed {
			t.Errorf("dry run step %d: %+v", i, r)
		}
	}
	if len(svcs.services) != 0 || len(run.rules) != 1 || !strings.Contains(dry.String(), "would register service kubelet") {
		t.Fatalf("the dry run changed the host or said nothing:\n%s", dry.String())
	}
	// First run: writes, registers, adds two rules, restarts containerd.
	res := apply(&host.Env{Root: root})
	for i, r := range res[1:] {
		if !r.Changed {
			t.Errorf("run 1 step %d unchanged: %+v", i+1, r)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "Program Files/containerd/config.toml")); err != nil {
		t.Error(err)
	}
	if !slices.Equal(svcs.restarts, []string{"containerd"}) || !run.rules["machineadm kubelet"] {
		t.Errorf("restarts %q rules %v", svcs.restarts, run.rules)
	}
	// Second run: unchanged.
	for i, r := range apply(&host.Env{Root: root}) {
		if r.Changed {
			t.Errorf("run 2 step %d changed: %+v", i, r)
		}
	}
	// A changed command line is corrected.
	s := svcs.services["kubelet"]
	s.CommandLine = `C:\old\kubelet.exe`
	svcs.services["kubelet"] = s
	r, err := EnsureService(&host.Env{}, svcs, KubeletService(o.MachineadmPath, ""))
	if err != nil || !r.Changed || !strings.HasPrefix(r.Changes[0], "updated service kubelet") {
		t.Errorf("update: %+v %v", r, err)
	}
	// With a domain join, domain-join comes first.
	cfg.Spec.Host.DomainJoin = &machineadm.DomainJoin{Domain: "corp.example.com", OfflineJoinBlob: &machineadm.SecretSource{Value: "AAAA"}}
	if got := names(Steps(cfg, o)); got[0] != "domain-join" || len(got) != 5 {
		t.Errorf("steps with a domain join: %q", got)
	}
	cfg.Spec.Host.DomainJoin = nil
	// The Containers feature missing stops the run with a hint.
	run.containers = "Disabled"
	_, err = Steps(cfg, o)[0].Apply(ctx, &host.Env{Root: root})
	if c, _ := errclass.Of(err); c != errclass.HostPreparationFailed || !strings.Contains(err.Error(), "Containers is disabled") {
		t.Errorf("feature missing: %v", err)
	}
}

// silentDISM is a Runner whose dism.exe succeeds and prints nothing, as
// wine's stub does.
type silentDISM struct{}

func (silentDISM) Run(context.Context, string, ...string) ([]byte, error) { return nil, nil }

// TestFeaturesWithoutState: DISM output without a State line is a host
// preparation failure with a hint, not an unclassified one.
func TestFeaturesWithoutState(t *testing.T) {
	_, err := features(context.Background(), Options{Runner: silentDISM{}})
	if c, h := errclass.Of(err); c != errclass.HostPreparationFailed || !strings.Contains(h, "dism /Online /English /Get-FeatureInfo /FeatureName:Containers") {
		t.Fatalf("class %s, hint %q: %v", c, h, err)
	}
}
