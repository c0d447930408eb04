//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The settings a kubelet 1.37 needs in these machines, written here by hand
// (not by machineadm) so a failure of this test points at the machines, a
// failure of the scenarios at machineadm. The scenarios express the same
// settings through the spec (see spec.go).
const (
	smokeContainerdConfig = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + pauseImage + `"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      NoNewKeyring = true
      SystemdCgroup = false
`
	smokeKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
staticPodPath: /etc/kubernetes/manifests
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`
	smokePod = `apiVersion: v1
kind: Pod
metadata: {name: smoke, namespace: default}
spec:
  hostNetwork: true
  containers:
  - {name: pause, image: ` + pauseImage + `, imagePullPolicy: Never}
`
)

// TestMachine proves the machine layer on its own: systemd reaches running,
// containerd and runc run containers from imported images, and a kubelet
// 1.37 started without a cluster runs a static pod.
func TestMachine(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	m := e.bootMachines(ctx, t, hostsEntry{IP: "10.213.0.30", Name: "smoke"})[0]
	timing(t, "smoke-boot", time.Since(start))
	defer func() {
		if err := e.stopMachine(m); err != nil {
			errorln(t, err)
			return
		}
		// A stopped machine's state is pruned (the run's disk), its logs
		// stay; MACHINEADM_E2E_KEEP=1 keeps it all.
		for _, d := range prunedDirs {
			if _, err := os.Stat(filepath.Join(m.Dir, d)); os.IsNotExist(err) == e.keep {
				errorf(t, "smoke stopped (keep %v): %s pruned %v (%v)", e.keep, d, os.IsNotExist(err), err)
			}
		}
		if _, err := os.Stat(filepath.Join(m.Dir, "console.log")); err != nil {
			errorf(t, "smoke stopped: console.log: %v", err)
		}
	}()
	for path, content := range map[string]string{
		"/etc/containerd/config.toml":          smokeContainerdConfig,
		"/etc/kubernetes/smoke-kubelet.yaml":   smokeKubeletConfig,
		"/etc/kubernetes/manifests/smoke.yaml": smokePod,
	} {
		if err := m.WriteFile(path, []byte(content), 0o644); err != nil {
			fatalln(t, err)
		}
	}
	for _, args := range [][]string{
		{"systemctl", "restart", "containerd"},
		// A transient unit, so systemd (not this test) supervises it.
		{"systemd-run", "--unit=smoke-kubelet", "/usr/bin/kubelet", "--config=/etc/kubernetes/smoke-kubelet.yaml"},
	} {
		if res, err := m.Exec(ctx, nil, args...); err != nil {
			fatalf(t, "%v: %s", err, res.Stderr)
		}
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		res, _ := m.Exec(ctx, nil, "ctr", "-n", "k8s.io", "tasks", "ls")
		last = res.Stdout + res.Stderr
		return strings.Count(res.Stdout, "RUNNING") >= 2, nil // sandbox + container
	})
	if err != nil {
		res, _ := m.Exec(ctx, nil, "journalctl", "--no-pager", "-n", "40", "-u", "smoke-kubelet", "-u", "containerd")
		fatalf(t, "static pod not running: %v\nctr tasks:\n%s\njournal:\n%s", err, last, res.Stdout)
	}
	timing(t, "smoke-static-pod-running", time.Since(start))
	t.Logf("static pod running:\n%s", last)
}

// TestStopJobs: the kill message of a machine that did not power off names
// the units systemd's console said shutdown was waiting for, once each,
// through the progress display's escape sequences and carriage returns.
func TestStopJobs(t *testing.T) {
	dir := t.TempDir()
	console := "[  OK  ] Stopped kubelet.service.\r\n" +
		"\x1b[0;1;31m[ ***  ]\x1b[0m A stop job is running for Kubernetes API Server (12s / 1min)\r" +
		"\x1b[K[  *** ] A stop job is running for Kubernetes API Server (13s / 1min)\r" +
		"[ ***  ] A stop job is running for etcd (1min 3s / 1min 30s)\r\n" +
		"\x1bM\r\n[ ***  ] Job kube-apiserver.service/stop running (58s / 1min)\r\n\x1bM\r\n" +
		"[**    ] Job kube-apiserver.service/stop running (59s / 1min)\r\n"
	p := filepath.Join(dir, "console.log")
	if err := os.WriteFile(p, []byte(console), 0o600); err != nil {
		fatalln(t, err)
	}
	got := stopJobsNote(p)
	want := "; its console says shutdown was waiting for: Kubernetes API Server, etcd, kube-apiserver.service (last shown: kube-apiserver.service)"
	if got != want {
		fatalf(t, "stopJobsNote = %q, want %q", got, want)
	}
	// The unit still waited for is the last one shown, though another
	// appeared first: listing them alone would blame the first.
	if err := os.WriteFile(p, []byte("[ ***  ] A stop job is running for etcd (3s / 1min)\r\n[  OK  ] Stopped etcd.\r\n"+
		"[ ***  ] A stop job is running for Kubernetes API Server (59s / 1min)\r\n"), 0o600); err != nil {
		fatalln(t, err)
	}
	if got, want := stopJobsNote(p), "; its console says shutdown was waiting for: etcd, Kubernetes API Server (last shown: Kubernetes API Server)"; got != want {
		fatalf(t, "stopJobsNote = %q, want %q", got, want)
	}
	// Without a progress line, the console's last lines (at most 8),
	// escape sequences removed.
	if err := os.WriteFile(p, []byte("\x1b[0;32m[  OK  ]\x1b[0m Stopped etcd.\r\n\x1bM\r\n[  OK  ] Reached target Power-Off.\n"), 0o600); err != nil {
		fatalln(t, err)
	}
	if got, want := stopJobsNote(p), "; its console ends:\n\t[  OK  ] Stopped etcd.\n\t[  OK  ] Reached target Power-Off."; got != want {
		fatalf(t, "stopJobsNote of a console without stop jobs = %q, want %q", got, want)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		fatalln(t, err)
	}
	if got := stopJobsNote(p); got != "" {
		fatalf(t, "stopJobsNote of an empty console = %q, want none", got)
	}
	if got := stopJobsNote(filepath.Join(dir, "missing")); got != "" {
		fatalf(t, "stopJobsNote of a missing console = %q", got)
	}
}
