//go:build !windows

package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/machineadm/machineadm/internal/testcontainerd"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/containerd"
)

// processSupervisor stands in for systemd, which does not run as PID 1
// on the test machines: Restart stops the containerd it started before
// and starts the real containerd binary with the config the step wrote,
// then waits until its gRPC socket answers (what Type=notify gives under
// systemd).
type processSupervisor struct {
	t        *testing.T
	bin      string
	config   string
	socket   string
	logPath  string
	mu       sync.Mutex
	cmd      *exec.Cmd
	restarts int
}

func (p *processSupervisor) DaemonReload(ctx context.Context) error { return nil }

func (p *processSupervisor) Restart(ctx context.Context, unit string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if unit != containerd.Unit {
		return fmt.Errorf("unexpected unit %s", unit)
	}
	p.stopLocked()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, "--config", p.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	p.cmd = cmd
	p.restarts++
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("unix", p.socket, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("containerd did not answer on %s within 30s", p.socket)
}

func (p *processSupervisor) stopLocked() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// registryRecorder is a registry endpoint on 127.0.0.1 that answers 404
// to everything and records the requests.
type registryRecorder struct {
	name string
	mu   sync.Mutex
	reqs []string
	log  *[]string
	lmu  *sync.Mutex
}

func (r *registryRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.lmu.Lock()
	*r.log = append(*r.log, r.name+" "+req.Method+" "+req.URL.RequestURI())
	r.lmu.Unlock()
	http.NotFound(w, req)
}

// TestRealContainerd writes containerd's configuration with the
// containerd step for each real containerd (Debian's 1.6, config version
// 2, and the e2e's 2.x, config version 3; internal/testcontainerd), linked
// into the test root where the step looks for it, so the step picks the
// config version from its `containerd --version` and checks the file with
// its own loader; then starts it with that configuration (state, root and
// sockets in a temp directory) and asks it through the CRI what it runs
// with: restrict_oom_score_adj, the runtimes and the systemd cgroup driver
// from CRI Status (and, where the CRI has it, RuntimeConfig); the
// registry hosts by pulling an image, which must go to the configured
// mirror first and then to the configured server (both on 127.0.0.1);
// and the sandbox image from the configuration containerd loaded (and, on
// 1.x, by starting a pod sandbox, which pulls it through the same mirror).
func TestRealContainerd(t *testing.T) {
	bins := testcontainerd.All(t)
	if os.Geteuid() != 0 {
		t.Skip("containerd needs root")
	}
	for _, b := range bins {
		t.Run(b.Name, func(t *testing.T) { testRealContainerd(t, b) })
	}
}

func testRealContainerd(t *testing.T, b testcontainerd.Binary) {
	t.Logf("real containerd: %s", b.Version)
	root := t.TempDir()
	// The step finds, asks and checks the containerd under its root.
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b.Path, filepath.Join(root, "usr/bin/containerd")); err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var reqLog []string
	mirror := httptest.NewServer(&registryRecorder{name: "mirror", log: &reqLog, lmu: &logMu})
	defer mirror.Close()
	server := httptest.NewServer(&registryRecorder{name: "server", log: &reqLog, lmu: &logMu})
	defer server.Close()

	// The image plugin's table is version 2's CRI plugin or version 3's
	// images plugin.
	imagesTable := `plugins."io.containerd.grpc.v1.cri"`
	if b.ConfigVersion == 3 {
		imagesTable = `plugins."io.containerd.cri.v1.images"`
	}
	socket := filepath.Join(root, "run/containerd/containerd.sock")
	patch := fmt.Sprintf(`
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[%s.registry]
  config_path = %q
`, filepath.Join(root, "var/lib/containerd"), filepath.Join(root, "run/containerd"), socket,
		filepath.Join(root, "opt/containerd"), imagesTable, filepath.Join(root, containerd.ConfigPath))
	const sandboxImage = "registry.machineadm.test/pause:3.10"
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Host: machineadm.Host{
		Containerd: &machineadm.Containerd{
			ConfigFile:          "/etc/containerd/config.toml",
			CgroupDriver:        "systemd",
			SandboxImage:        sandboxImage,
			RestrictOOMScoreAdj: true,
			Registries: []machineadm.Registry{{
				Host:    "registry.machineadm.test",
				Server:  server.URL,
				Mirrors: []machineadm.Mirror{{URL: mirror.URL, Capabilities: []string{"pull", "resolve"}}},
			}},
			Runtimes:    []machineadm.Runtime{{Name: "runc", Type: containerd.RuncType, Options: map[string]any{"NoNewKeyring": true}}},
			ConfigPatch: patch,
		},
	}}}
	sup := &processSupervisor{t: t, bin: b.Path, config: filepath.Join(root, "etc/containerd/config.toml"), socket: socket, logPath: filepath.Join(root, "containerd.log")}
	t.Cleanup(func() {
		sup.mu.Lock()
		sup.stopLocked()
		sup.mu.Unlock()
		if t.Failed() {
			log, _ := os.ReadFile(sup.logPath)
			t.Logf("containerd log:\n%s", tail(string(log), 4000))
		}
	})
	var verified []string
	env := &Env{
		Root:     root,
		Services: sup,
		CRIReady: func(ctx context.Context) error { return containerd.WaitCRIReady(ctx, "unix://"+socket, 30*time.Second) },
		// The real loader check, recording that it ran.
		ContainerdVerify: func(ctx context.Context, r string, config []byte) error {
			err := containerd.VerifyConfig(ctx, r, config)
			verified = append(verified, fmt.Sprint(err))
			return err
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	step := stepNamed(t, Steps(cfg), StepContainerd)
	res, err := step.Apply(ctx, env)
	if err != nil {
		t.Fatalf("containerd step: %v", err)
	}
	if !res.Changed || !contains(res.Changes, "restarted containerd.service") || !contains(res.Changes, "waited for containerd's CRI to report RuntimeReady") || sup.restarts != 1 {
		t.Fatalf("first apply: %+v, restarts %d", res, sup.restarts)
	}
	written, err := os.ReadFile(sup.config)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nversion = %d\n", b.ConfigVersion); !strings.Contains(string(written), want) {
		t.Errorf("config.toml for containerd %s lacks %q:\n%s", b.Name, strings.TrimSpace(want), written)
	}
	if len(verified) != 1 || verified[0] != "<nil>" {
		t.Errorf("containerd %s's own loader checked config.toml %d times: %q, want once, accepted", b.Name, len(verified), verified)
	}

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	st, err := rs.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatalf("CRI Status: %v", err)
	}
	var criConfig struct {
		RestrictOOMScoreAdj bool `json:"restrictOOMScoreAdj"`
		Containerd          struct {
			DefaultRuntimeName string `json:"defaultRuntimeName"`
			Runtimes           map[string]struct {
				Type    string         `json:"runtimeType"`
				Options map[string]any `json:"options"`
			} `json:"runtimes"`
		} `json:"containerd"`
	}
	if err := json.Unmarshal([]byte(st.Info["config"]), &criConfig); err != nil {
		t.Fatalf("CRI status config: %v\n%s", err, st.Info["config"])
	}
	runc := criConfig.Containerd.Runtimes["runc"]
	if !criConfig.RestrictOOMScoreAdj || criConfig.Containerd.DefaultRuntimeName != "runc" || runc.Type != containerd.RuncType ||
		runc.Options["SystemdCgroup"] != true || runc.Options["NoNewKeyring"] != true {
		t.Errorf("CRI reports %+v", criConfig)
	}
	t.Logf("CRI reports restrictOOMScoreAdj %v, runc %+v", criConfig.RestrictOOMScoreAdj, runc)
	// containerd 2.x answers the kubelet's question for the cgroup driver
	// (1.6 does not implement RuntimeConfig).
	if rc, err := rs.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{}); b.ConfigVersion == 3 {
		if err != nil || rc.GetLinux().GetCgroupDriver() != runtimeapi.CgroupDriver_SYSTEMD {
			t.Errorf("CRI RuntimeConfig: %v, %v; want cgroup driver SYSTEMD", rc, err)
		}
	}

	// The registry hosts: a pull goes to the mirror, then to the server.
	pullCtx, pullCancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = runtimeapi.NewImageServiceClient(conn).PullImage(pullCtx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.machineadm.test/probe:1"}})
	pullCancel()
	if err == nil {
		t.Fatal("pull from the 404 registry succeeded")
	}
	mirrorFirst(t, &logMu, &reqLog, "/v2/probe/manifests/1")

	// The sandbox image, as containerd's loader read it (`containerd
	// config dump` prints the configuration it runs with, after its own
	// migration of older versions): containerd 1.x's sandbox_image of the
	// CRI plugin, 2.x's pinned sandbox image of the images plugin.
	dump, err := exec.CommandContext(ctx, b.Path, "--config", sup.config, "config", "dump").Output()
	if err != nil {
		t.Fatalf("containerd config dump: %v", err)
	}
	var loaded map[string]any
	if err := toml.Unmarshal(dump, &loaded); err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, dump)
	}
	sandboxPath := []string{"plugins", "io.containerd.grpc.v1.cri", "sandbox_image"}
	if b.ConfigVersion == 3 {
		sandboxPath = []string{"plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox"}
	}
	if got := dig(loaded, sandboxPath...); got != sandboxImage {
		t.Errorf("containerd %s loaded %s = %v, want %s (loaded config version %v)", b.Name, strings.Join(sandboxPath, "."), got, sandboxImage, loaded["version"])
	}
	// Containerd 1.x asks for the sandbox image first when a pod sandbox
	// starts, through the same hosts (the 404 registry: the sandbox fails);
	// 2.x sets up the pod network first, which needs CNI.
	if b.ConfigVersion == 2 {
		sbCtx, sbCancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = rs.RunPodSandbox(sbCtx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "probe", Namespace: "default", Uid: "probe-uid"},
		}})
		sbCancel()
		if err == nil || !strings.Contains(err.Error(), "pause") {
			t.Errorf("pod sandbox without its sandbox image: %v, want the pull of %s to fail", err, sandboxImage)
		}
		mirrorFirst(t, &logMu, &reqLog, "/v2/pause/manifests/3.10")
	}

	// Again: nothing changes, containerd is not restarted, and its loader
	// is not asked again about the same bytes.
	res, err = stepNamed(t, Steps(cfg), StepContainerd).Apply(ctx, env)
	if err != nil || res.Changed || sup.restarts != 1 || len(verified) != 1 {
		t.Errorf("second apply: %+v, %v, restarts %d, loader checks %d", res, err, sup.restarts, len(verified))
	}
}

// dig returns the value at path in a decoded TOML tree, or nil.
func dig(tree map[string]any, path ...string) any {
	var v any = tree
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// mirrorFirst checks the registry requests for a manifest path: the
// mirror (with ns=registry.machineadm.test) was asked before the server.
func mirrorFirst(t *testing.T, mu *sync.Mutex, reqLog *[]string, manifest string) {
	t.Helper()
	mu.Lock()
	got := append([]string(nil), *reqLog...)
	mu.Unlock()
	firstMirror, firstServer := -1, -1
	for i, r := range got {
		if firstMirror < 0 && strings.HasPrefix(r, "mirror ") && strings.Contains(r, manifest) && strings.Contains(r, "ns=registry.machineadm.test") {
			firstMirror = i
		}
		if firstServer < 0 && strings.HasPrefix(r, "server ") && strings.Contains(r, manifest) {
			firstServer = i
		}
	}
	if firstMirror < 0 || firstServer < 0 || firstMirror > firstServer {
		t.Errorf("%s: want the mirror asked (with ns=registry.machineadm.test) before the server; requests %q", manifest, got)
	}
}

func stepNamed(t *testing.T, steps []Step, name string) Step {
	t.Helper()
	for _, s := range steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %s", name)
	return Step{}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
