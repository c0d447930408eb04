//go:build !windows

package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/spec"
)

// recordingLoader stands in for modprobe, which cannot load modules on the
// test machines (their kernel has no loadable-module support): it records
// the call and makes the module visible in the fake /sys/module.
type recordingLoader struct {
	mu     sync.Mutex
	sys    string
	loaded []string
	err    error
}

func (l *recordingLoader) Load(ctx context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.loaded = append(l.loaded, name)
	return os.MkdirAll(filepath.Join(l.sys, "module", name), 0o755)
}

// testHost is a temporary machine root with the databases and a sysctl
// tree the steps read: /etc/passwd and /etc/group with a user "etcd", a
// /proc/sys with the keys used below (as files, so values can be read
// back), /proc/modules (modules supported) and overlay in /sys/module.
type testHost struct {
	root     string
	services *service.Recorder
	loader   *recordingLoader
	payload  []byte
	server   *httptest.Server
}

func newTestHost(t *testing.T) *testHost {
	t.Helper()
	root := t.TempDir()
	write := func(p, content string) {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/passwd", "root:x:0:0:root:/root:/bin/bash\netcd:x:1234:1234::/var/lib/etcd:/usr/sbin/nologin\n")
	write("etc/group", "root:x:0:\netcd:x:1234:\n")
	write("etc/hosts", "127.0.0.1 localhost\n")
	write("proc/sys/net/ipv4/ip_forward", "0\n")
	write("proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n")
	write("proc/sys/vm/max_map_count", "65530\n")
	write("proc/modules", "")
	if err := os.MkdirAll(filepath.Join(root, "sys/module/overlay"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &testHost{root: root, services: &service.Recorder{}, payload: []byte("remote payload\x00\x01\n")}
	h.loader = &recordingLoader{sys: filepath.Join(root, "sys")}
	// br_netfilter's keys appear once it is "loaded".
	h.loader.err = nil
	h.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/payload" {
			w.Write(h.payload)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(h.server.Close)
	return h
}

// env returns a fresh Env for the host (a new Env is a new run).
func (h *testHost) env(out *bytes.Buffer) *Env {
	e := &Env{
		Root:     h.root,
		Services: h.services,
		Modules:  &bridgeLoader{h.loader, h.root},
		ContainerdVersion: func(context.Context, string) (string, error) {
			return "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7\n", nil
		},
		HTTPClient: &http.Client{Timeout: 5 * time.Second},
	}
	if out != nil {
		e.Out = out
	}
	return e
}

// bridgeLoader also creates br_netfilter's sysctl keys when it loads it,
// as the kernel does.
type bridgeLoader struct {
	*recordingLoader
	root string
}

func (b *bridgeLoader) Load(ctx context.Context, name string) error {
	if err := b.recordingLoader.Load(ctx, name); err != nil {
		return err
	}
	if name == "br_netfilter" {
		p := filepath.Join(b.root, "proc/sys/net/bridge/bridge-nf-call-iptables")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte("0\n"), 0o644)
	}
	return nil
}

func gzipB64(t *testing.T, b []byte) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// indent indents every line of s by n spaces, for YAML block scalars.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// tricky is content that YAML, templating and line-ending handling would
// mangle: it travels base64-encoded in the spec and must land byte-exact.
const tricky = "---\n# comment \"quoted\" 'single' {{ .Template }}\r\nkey: value\r\n"

// fullSpec is a control-plane spec that uses every host step.
func (h *testHost) fullSpec(t *testing.T, mutate func(string) string) *machineadm.MachineBootstrapConfig {
	t.Helper()
	gz := []byte("gzip payload\x00\xff\xfe binary")
	doc := fmt.Sprintf(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  host:
    sysctl:
      net.ipv4.ip_forward: "1"
      net.ipv4.ip_local_port_range: "20000 60999"
      net.bridge.bridge-nf-call-iptables: "1"
    kernelModules: [overlay]
    files:
    - path: /etc/machineadm/tricky.yaml
      encoding: base64
      content: %s
    - path: /etc/machineadm/blob.bin
      encoding: gzip+base64
      content: %s
      mode: "0600"
      owner: etcd
      group: "1234"
    - path: /etc/hosts
      append: true
      content: "10.0.0.10 api.example.internal\n"
    - path: /opt/remote.bin
      source: {url: %q, sha256: %s}
    - path: /etc/machineadm/plain.conf
      content: |
        a = "b" # hash
        {{ not a template }}
    containerd:
      sandboxImage: registry.k8s.io/pause:3.10
      restrictOOMScoreAdj: true
      registries:
      - host: docker.io
        mirrors:
        - url: https://mirror.example.com
          clientCert: |
%s
          clientKey: |
%s
      proxy: {httpsProxy: "http://proxy.example.com:3128", noProxy: "10.0.0.0/8"}
      runtimes:
      - name: runc
        options: {NoNewKeyring: true}
    staticPods:
    - name: audit-forwarder
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: audit-forwarder, namespace: kube-system}
        spec:
          containers:
          - {name: fwd, image: "registry.example.com/fwd:1"}
`, base64.StdEncoding.EncodeToString([]byte(tricky)), gzipB64(t, gz), h.server.URL+"/payload", sha(h.payload),
		indent(testCertPEM, 12), indent(testKeyPEM, 12))
	if mutate != nil {
		doc = mutate(doc)
	}
	l, err := spec.Load([]byte(doc), "test")
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return l.Config
}

const testCertPEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQnV0IG5vdCBhIHJlYWwgY2VydDAKBggqhkjOPQQDAjAA\n-----END CERTIFICATE-----"
const testKeyPEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBRlc3Qga2V5IG5vdCByZWFsIGJ1dCBQRU0gc2hhcGVk\n-----END EC PRIVATE KEY-----"

// runAll checks then applies every step, like `machineadm prepare`.
func runAll(t *testing.T, cfg *machineadm.MachineBootstrapConfig, env *Env) []Result {
	t.Helper()
	ctx := context.Background()
	steps := Steps(cfg)
	if err := Check(ctx, env, steps); err != nil {
		t.Fatalf("check: %v", err)
	}
	var out []Result
	for _, s := range steps {
		res, err := s.Apply(ctx, env)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		out = append(out, res)
	}
	return out
}

// fileInfo is what a snapshot keeps of one file.
type fileInfo struct {
	content  string
	mode     fs.FileMode
	uid, gid uint32
	mtime    time.Time
}

// snapshot records every regular file under root.
func snapshot(t *testing.T, root string) map[string]fileInfo {
	t.Helper()
	out := map[string]fileInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(root, p)
		out["/"+rel] = fileInfo{string(b), fi.Mode(), st.Uid, st.Gid, fi.ModTime()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnapshots(a, b map[string]fileInfo) []string {
	var out []string
	for p, x := range a {
		y, ok := b[p]
		switch {
		case !ok:
			out = append(out, "removed "+p)
		case x != y:
			out = append(out, "changed "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, "added "+p)
		}
	}
	return out
}

func newTextLogger(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
