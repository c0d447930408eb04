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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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
// containerd step, starts Debian's containerd with it (state, root and
// sockets in a temp directory), and asks it through the CRI what it runs
// with: the sandbox image and restrict_oom_score_adj from CRI Status, and
// the registry hosts by pulling an image, which must go to the configured
// mirror first and then to the configured server (both on 127.0.0.1).
func TestRealContainerd(t *testing.T) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		if os.Getenv("MACHINEADM_REQUIRE_CONTAINERD") != "" {
			t.Fatal("containerd not installed (apt-get install -y containerd)")
		}
		t.Skip("containerd not installed (apt-get install -y containerd)")
	}
	if os.Geteuid() != 0 {
		t.Skip("containerd needs root")
	}
	root := t.TempDir()
	var logMu sync.Mutex
	var reqLog []string
	mirror := httptest.NewServer(&registryRecorder{name: "mirror", log: &reqLog, lmu: &logMu})
	defer mirror.Close()
	server := httptest.NewServer(&registryRecorder{name: "server", log: &reqLog, lmu: &logMu})
	defer server.Close()

	socket := filepath.Join(root, "run/containerd/containerd.sock")
	patch := fmt.Sprintf(`
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = %q
`, filepath.Join(root, "var/lib/containerd"), filepath.Join(root, "run/containerd"), socket,
		filepath.Join(root, "opt/containerd"), filepath.Join(root, containerd.ConfigPath))
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Host: machineadm.Host{
		Containerd: &machineadm.Containerd{
			ConfigFile:          "/etc/containerd/config.toml",
			CgroupDriver:        "cgroupfs",
			SandboxImage:        "registry.machineadm.test/pause:3.10",
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
	sup := &processSupervisor{t: t, bin: bin, config: filepath.Join(root, "etc/containerd/config.toml"), socket: socket, logPath: filepath.Join(root, "containerd.log")}
	t.Cleanup(func() {
		sup.mu.Lock()
		sup.stopLocked()
		sup.mu.Unlock()
		if t.Failed() {
			log, _ := os.ReadFile(sup.logPath)
			t.Logf("containerd log:\n%s", tail(string(log), 4000))
		}
	})
	env := &Env{
		Root:     root,
		Services: sup,
		CRIReady: func(ctx context.Context) error { return containerd.WaitCRIReady(ctx, "unix://"+socket, 30*time.Second) },
		// The version of the containerd that runs, chosen as on a host.
		ContainerdVersion: func(ctx context.Context, _ string) (string, error) { return containerd.DetectVersion(ctx, "/") },
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
	version, _ := exec.Command(bin, "--version").Output()
	t.Logf("real containerd: %s", strings.TrimSpace(string(version)))

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := runtimeapi.NewRuntimeServiceClient(conn).Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatalf("CRI Status: %v", err)
	}
	var criConfig struct {
		SandboxImage        string `json:"sandboxImage"`
		RestrictOOMScoreAdj bool   `json:"restrictOOMScoreAdj"`
		Registry            struct {
			ConfigPath string `json:"configPath"`
		} `json:"registry"`
		Containerd struct {
			DefaultRuntimeName string `json:"defaultRuntimeName"`
			Runtimes           map[string]struct {
				Type string `json:"runtimeType"`
			} `json:"runtimes"`
		} `json:"containerd"`
	}
	if err := json.Unmarshal([]byte(st.Info["config"]), &criConfig); err != nil {
		t.Fatalf("CRI status config: %v\n%s", err, st.Info["config"])
	}
	if criConfig.SandboxImage != "registry.machineadm.test/pause:3.10" || !criConfig.RestrictOOMScoreAdj ||
		criConfig.Registry.ConfigPath != filepath.Join(root, containerd.ConfigPath) ||
		criConfig.Containerd.DefaultRuntimeName != "runc" || criConfig.Containerd.Runtimes["runc"].Type != containerd.RuncType {
		t.Errorf("CRI reports %+v", criConfig)
	}
	t.Logf("CRI reports sandboxImage %s, restrictOOMScoreAdj %v, registry configPath %s", criConfig.SandboxImage, criConfig.RestrictOOMScoreAdj, criConfig.Registry.ConfigPath)

	// The registry hosts: a pull goes to the mirror, then to the server.
	pullCtx, pullCancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = runtimeapi.NewImageServiceClient(conn).PullImage(pullCtx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.machineadm.test/probe:1"}})
	pullCancel()
	if err == nil {
		t.Fatal("pull from the 404 registry succeeded")
	}
	logMu.Lock()
	got := append([]string(nil), reqLog...)
	logMu.Unlock()
	t.Logf("registry requests: %q", got)
	firstMirror, firstServer := -1, -1
	for i, r := range got {
		if firstMirror < 0 && strings.HasPrefix(r, "mirror ") && strings.Contains(r, "/v2/probe/manifests/1") && strings.Contains(r, "ns=registry.machineadm.test") {
			firstMirror = i
		}
		if firstServer < 0 && strings.HasPrefix(r, "server ") && strings.Contains(r, "/v2/probe/manifests/1") {
			firstServer = i
		}
	}
	if firstMirror < 0 || firstServer < 0 || firstMirror > firstServer {
		t.Errorf("want the mirror asked (with ns=registry.machineadm.test) before the server; requests %q", got)
	}

	// Again: nothing changes and containerd is not restarted.
	res, err = Steps(cfg)[3].Apply(ctx, env)
	if err != nil || res.Changed || sup.restarts != 1 {
		t.Errorf("second apply: %+v, %v, restarts %d", res, err, sup.restarts)
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
