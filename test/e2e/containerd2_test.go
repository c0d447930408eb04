//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// mirroredHost is the registry host of scenario 6's pod image. It never
// resolves (.invalid, and the machines have no DNS): the image can only
// come through the mirror that spec.host.containerd.registries names.
const mirroredHost = "upstream.e2e.invalid"

// containerd2Patch is scenario 6's spec.host.containerd.configPatch, in
// config version 3's images plugin: containerd 2.x must load it.
const containerd2Patch = "[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = 2\n"

// mirrorRegistry is an OCI distribution registry (go-containerregistry's,
// in memory) on the harness bridge address only, recording the manifest
// requests it answers.
type mirrorRegistry struct {
	srv  *http.Server
	host string // 10.213.0.1:PORT

	mu        sync.Mutex
	manifests []string // "GET /v2/e2e/netcheck/manifests/v1?ns=…"
}

func startMirrorRegistry() (*mirrorRegistry, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(bridgeIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("mirror registry: %w", err)
	}
	r := &mirrorRegistry{host: ln.Addr().String()}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/manifests/") {
			r.mu.Lock()
			r.manifests = append(r.manifests, req.Method+" "+req.URL.RequestURI())
			r.mu.Unlock()
		}
		reg.ServeHTTP(w, req)
	})
	r.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// push uploads a docker-archive tarball's image as repo:tag.
func (r *mirrorRegistry) push(tarPath, repoTag string) error {
	img, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(r.host+"/"+repoTag, name.Insecure)
	if err != nil {
		return err
	}
	return remote.Write(ref, img)
}

// pulls returns the manifest requests that named ns (the host a pull
// was for, containerd's ?ns= parameter to a mirror).
func (r *mirrorRegistry) pulls(ns string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.manifests {
		if strings.Contains(m, "ns="+ns) {
			out = append(out, m)
		}
	}
	return out
}

func (r *mirrorRegistry) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

// scenarioContainerd2: w9 runs containerd 2.x (the e2e cache's
// containerd2 with its runc shim and ctr, in place of Debian's 1.6) and
// joins c's cluster with registry mirrors and a configPatch. machineadm
// must pick config version 3 from `containerd --version`, containerd 2.x
// must load it with the patch, and a pod whose image exists only behind
// the mirror (its own host never resolves) must run on w9.
func scenarioContainerd2(ctx context.Context, t *testing.T, e *env, c *cluster) {
	bins := map[string]string{
		"containerd2":              "/usr/bin/containerd",
		"containerd2-shim-runc-v2": "/usr/bin/containerd-shim-runc-v2",
		"containerd2-ctr":          "/usr/bin/ctr",
	}
	for b := range bins {
		if _, err := os.Stat(e.binPath(b)); err != nil {
			fatalf(t, "%s: %v (make e2e-prepare builds it)", b, err)
		}
	}
	reg, err := startMirrorRegistry()
	if err != nil {
		fatalln(t, err)
	}
	defer reg.close()
	const repoTag = "e2e/netcheck:v1"
	if err := reg.push(e.imagePath("netcheck"), repoTag); err != nil {
		fatalf(t, "push the netcheck image to the mirror: %v", err)
	}
	start := time.Now()
	m := e.bootMachinesWith(ctx, t, bootOptions{prepare: func(m *Machine) error {
		for b, dst := range bins {
			m.BindRO = append(m.BindRO, e.binPath(b)+":"+dst)
		}
		return nil
	}}, w9)[0]
	timing(t, "w9-boot", time.Since(start))
	defer func() {
		if err := e.stopMachine(m); err != nil {
			errorln(t, err)
		}
	}()
	spec := workerSpec(w9, c.secrets.caHash)
	cd := spec.Spec.Host.Containerd
	cd.Registries = []machineadm.Registry{{
		Host:    mirroredHost,
		Server:  "https://" + mirroredHost,
		Mirrors: []machineadm.Mirror{{URL: "http://" + reg.host, Capabilities: []string{"pull", "resolve"}}},
	}}
	cd.ConfigPatch = containerd2Patch
	if err := deliver(m, spec, c.secrets); err != nil {
		fatalln(t, err)
	}
	bStart := mustBootstrap(ctx, t, m, workerJoinPhases, true)

	// containerd 2.x runs the configuration machineadm wrote for it.
	res, err := m.Exec(ctx, nil, "containerd", "--version")
	if err != nil || !strings.Contains(res.Stdout, "containerd/v2 v2.") {
		errorf(t, "w9's containerd --version: %q, %v; want containerd 2.x", res.Stdout, err)
	}
	t.Logf("w9: %s", strings.TrimSpace(res.Stdout))
	written, err := m.ReadFile("/etc/containerd/config.toml")
	if err != nil {
		fatalln(t, err)
	}
	if !strings.Contains(string(written), "\nversion = 3\n") {
		errorf(t, "w9's config.toml is not config version 3:\n%s", written)
	}
	res, err = m.Exec(ctx, nil, "containerd", "config", "dump")
	if err != nil || !strings.Contains(res.Stdout, "max_concurrent_downloads = 2") || !strings.Contains(res.Stdout, "config_path = '/etc/containerd/certs.d'") {
		errorf(t, "containerd 2.x's loaded configuration lacks the patch or config_path (%v):\n%s", err, tail(res.Stdout, 80))
	}
	hosts, err := m.ReadFile("/etc/containerd/certs.d/" + mirroredHost + "/hosts.toml")
	if err != nil || !strings.Contains(string(hosts), reg.host) {
		errorf(t, "hosts.toml for %s: %v\n%s", mirroredHost, err, hosts)
	}

	ready, err := waitNodesReady(ctx, c.cs, readyTimeout, w9.Name)
	if err != nil {
		dumpDiagnostics(ctx, t, m)
		fatalln(t, err)
	}
	timing(t, "w9-bootstrap-start-to-node-ready", ready[w9.Name].Sub(bStart))

	// A pod whose image only the mirror has.
	pStart := time.Now()
	image := mirroredHost + "/" + repoTag
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-mirrored-" + w9.Name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": w9.Name},
			Containers: []corev1.Container{{
				Name: "echo", Image: image, ImagePullPolicy: corev1.PullAlways,
				Args:           []string{"serve", "-addr", ":8080"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := c.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fatalln(t, err)
	}
	defer func() {
		_ = c.cs.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	}()
	var got *corev1.Pod
	deadline := time.Now().Add(podTimeout)
	for ; time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if got, err = c.cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); err == nil && got.Status.Phase == corev1.PodRunning && podReady(got) {
			break
		}
	}
	if got == nil || got.Status.Phase != corev1.PodRunning || !podReady(got) {
		dumpDiagnostics(ctx, t, m)
		fatalf(t, "pod with %s not running on w9 within %s: %s; mirror requests %q", image, podTimeout, podState(got), reg.pulls(mirroredHost))
	}
	timing(t, "w9-mirrored-pod-running", time.Since(pStart))
	pulls := reg.pulls(mirroredHost)
	if len(pulls) == 0 || !strings.Contains(pulls[0], "/v2/e2e/netcheck/manifests/v1") {
		errorf(t, "the mirror saw no manifest request for %s: %q", image, pulls)
	}
	t.Logf("pod %s runs %s on w9 (image ID %s), pulled through the mirror: %q", got.Name, image, got.Status.ContainerStatuses[0].ImageID, pulls)
}
