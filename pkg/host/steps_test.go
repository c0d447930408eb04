//go:build !windows

package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

func TestApplyTwiceSecondRunChangesNothing(t *testing.T) {
	h := newTestHost(t)
	cfg := h.fullSpec(t, nil)
	first := runAll(t, cfg, h.env(nil))
	for i, s := range Steps(cfg) {
		if !first[i].Changed || len(first[i].Changes) == 0 {
			t.Errorf("first run: step %s reports no change: %+v", s.Name, first[i])
		}
	}
	if got := h.services.Snapshot(); !slices.Equal(got, []string{"daemon-reload", "restart containerd.service"}) {
		t.Errorf("service calls %q", got)
	}
	if !slices.Equal(h.loader.loaded, []string{"br_netfilter"}) {
		t.Errorf("modules loaded %q, want br_netfilter only (overlay is present)", h.loader.loaded)
	}
	checkLanded(t, h)

	// Make every mtime old so that a rewrite would show.
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	filepath.WalkDir(h.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			os.Chtimes(p, past, past)
		}
		return nil
	})
	before := snapshot(t, h.root)
	second := runAll(t, h.fullSpec(t, nil), h.env(nil))
	for i, s := range Steps(cfg) {
		if second[i].Changed || len(second[i].Changes) > 0 {
			t.Errorf("second run: step %s changed: %+v", s.Name, second[i])
		}
	}
	if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
		t.Errorf("second run touched files: %v", d)
	}
	if got := h.services.Snapshot(); len(got) != 2 {
		t.Errorf("second run called the service manager: %q", got)
	}
	if len(h.loader.loaded) != 1 {
		t.Errorf("second run loaded modules: %q", h.loader.loaded)
	}
}

// checkLanded checks the files and live values of fullSpec.
func checkLanded(t *testing.T, h *testHost) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(h.root, p))
		if err != nil {
			t.Errorf("%v", err)
		}
		return string(b)
	}
	if got := read("/etc/machineadm/tricky.yaml"); got != tricky {
		t.Errorf("tricky content %q, want %q", got, tricky)
	}
	if got := read("/etc/machineadm/blob.bin"); got != "gzip payload\x00\xff\xfe binary" {
		t.Errorf("gzip content %q", got)
	}
	if got := read("/etc/machineadm/plain.conf"); got != "a = \"b\" # hash\n{{ not a template }}\n" {
		t.Errorf("plain content %q", got)
	}
	if got := read("/opt/remote.bin"); got != string(h.payload) {
		t.Errorf("remote content %q", got)
	}
	if got := read("/etc/hosts"); got != "127.0.0.1 localhost\n10.0.0.10 api.example.internal\n" {
		t.Errorf("appended hosts %q", got)
	}
	fi, err := os.Stat(filepath.Join(h.root, "/etc/machineadm/blob.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || st.Uid != 1234 || st.Gid != 1234 {
		t.Errorf("blob.bin mode %o owner %d:%d, want 0600 1234:1234", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	for key, want := range map[string]string{
		"net/ipv4/ip_forward":                "1",
		"net/ipv4/ip_local_port_range":       "20000 60999",
		"net/bridge/bridge-nf-call-iptables": "1",
	} {
		if got := strings.TrimSpace(read("/proc/sys/" + key)); got != want {
			t.Errorf("/proc/sys/%s = %q, want %q", key, got, want)
		}
	}
	if got := read("/etc/sysctl.d/90-machineadm.conf"); !strings.Contains(got, "net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\nnet.ipv4.ip_local_port_range = 20000 60999\n") {
		t.Errorf("sysctl.d file:\n%s", got)
	}
	if got := read("/etc/modules-load.d/machineadm.conf"); !strings.HasSuffix(got, "overlay\nbr_netfilter\n") {
		t.Errorf("modules-load.d file:\n%s", got)
	}
	cfg := read("/etc/containerd/config.toml")
	for _, s := range []string{"version = 3", "sandbox = 'registry.k8s.io/pause:3.10'", "NoNewKeyring = true", "SystemdCgroup = true", "restrict_oom_score_adj = true"} {
		if !strings.Contains(cfg, s) {
			t.Errorf("config.toml lacks %q (containerd 2.x detected: schema 3):\n%s", s, cfg)
		}
	}
	if got := read("/etc/containerd/certs.d/docker.io/hosts.toml"); !strings.Contains(got, "[host.'https://mirror.example.com']") {
		t.Errorf("hosts.toml:\n%s", got)
	}
	if fi, err := os.Stat(filepath.Join(h.root, "/etc/containerd/certs.d/docker.io/mirror-0-client.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key: %v %v", fi, err)
	}
	if got := read("/etc/systemd/system/containerd.service.d/10-machineadm-proxy.conf"); !strings.Contains(got, `Environment="HTTPS_PROXY=http://proxy.example.com:3128"`) {
		t.Errorf("proxy drop-in:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(h.root, restartPending)); !os.IsNotExist(err) {
		t.Errorf("restart marker left after a successful restart: %v", err)
	}
	if got := read("/etc/kubernetes/manifests/audit-forwarder.yaml"); !strings.Contains(got, "name: audit-forwarder") {
		t.Errorf("static pod:\n%s", got)
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(string) string
		field  string
		class  errclass.Class
	}{
		{"unknown sysctl key", func(d string) string {
			return strings.Replace(d, "net.ipv4.ip_forward: \"1\"", "net.ipv4.ip_forward: \"1\"\n      net.ipv4.no_such_key: \"1\"", 1)
		}, "spec.host.sysctl[net.ipv4.no_such_key]", errclass.HostPreparationFailed},
		{"sha256 mismatch", func(d string) string {
			i := strings.Index(d, "sha256: ")
			return d[:i] + "sha256: " + strings.Repeat("a", 64) + d[i+8+64:]
		}, "spec.host.files[3].source.sha256", errclass.VerificationFailed},
		{"unreachable source", func(d string) string {
			return strings.Replace(d, "/payload\"", "/missing\"", 1)
		}, "spec.host.files[3].source.url", errclass.PayloadUnavailable},
		{"unknown owner", func(d string) string {
			return strings.Replace(d, "owner: etcd", "owner: nosuchuser", 1)
		}, "spec.host.files[1].owner", errclass.HostPreparationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHost(t)
			before := snapshot(t, h.root)
			cfg := h.fullSpec(t, tc.mutate)
			err := Check(context.Background(), h.env(nil), Steps(cfg))
			if err == nil {
				t.Fatal("check passed")
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
			if class, _ := errclass.Of(err); class != tc.class {
				t.Errorf("class %s, want %s", class, tc.class)
			}
			if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
				t.Errorf("check changed the host: %v", d)
			}
			// Apply of the step owning the bad field re-checks and refuses,
			// writing nothing either.
			owner := StepFiles
			if strings.Contains(tc.field, "sysctl") {
				owner = StepSysctl
			}
			if _, err := stepNamed(t, Steps(cfg), owner).Apply(context.Background(), h.env(nil)); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s applied despite bad input: %v", owner, err)
			}
			if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
				t.Errorf("apply changed the host: %v", d)
			}
		})
	}
}

// TestGzipBombRefused: content that decodes past
// machineadm.MaxContentBytes (a spec that skipped validation) is refused
// by the files step's check, naming the field; nothing is written.
func TestGzipBombRefused(t *testing.T) {
	h := newTestHost(t)
	before := snapshot(t, h.root)
	cfg := h.fullSpec(t, nil)
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write(make([]byte, machineadm.MaxContentBytes+1)); err != nil {
		t.Fatal(err)
	}
	_ = zw.Close()
	f := &cfg.Spec.Host.Files[0]
	f.Content, f.Encoding = base64.StdEncoding.EncodeToString(b.Bytes()), machineadm.EncodingGzipBase64
	err := Check(context.Background(), h.env(nil), Steps(cfg))
	if err == nil || !strings.Contains(err.Error(), "spec.host.files[0].content") || !errors.Is(err, machineadm.ErrContentTooLarge) {
		t.Fatalf("check of a gzip bomb: err = %v, want ErrContentTooLarge naming spec.host.files[0].content", err)
	}
	if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
		t.Errorf("check changed the host: %v", d)
	}
}

// TestCheckBeforeAnyWrite runs the steps as a runner does (Check all,
// then Apply) and shows that a bad input in a late step stops the run
// before the first step writes.
func TestCheckBeforeAnyWrite(t *testing.T) {
	h := newTestHost(t)
	before := snapshot(t, h.root)
	cfg := h.fullSpec(t, func(d string) string {
		return strings.Replace(d, "net.ipv4.ip_forward: \"1\"", "net.ipv4.ip_forward: \"1\"\n      kernel.no_such_knob: \"1\"", 1)
	})
	if err := Check(context.Background(), h.env(nil), Steps(cfg)); err == nil {
		t.Fatal("check passed")
	}
	if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
		t.Errorf("check changed the host: %v", d)
	}
	if len(h.services.Snapshot()) > 0 || len(h.loader.loaded) > 0 {
		t.Errorf("check touched services %q or modules %q", h.services.Snapshot(), h.loader.loaded)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	h := newTestHost(t)
	before := snapshot(t, h.root)
	var out bytes.Buffer
	results := runAll(t, h.fullSpec(t, nil), func() *Env { e := h.env(&out); e.DryRun = true; return e }())
	for _, r := range results {
		if !r.Changed {
			t.Errorf("dry run result says unchanged: %+v", r)
		}
		for _, c := range r.Changes {
			if !strings.HasPrefix(c, "would ") || strings.HasPrefix(c, "would have") || strings.HasPrefix(c, "would change ") {
				t.Errorf("dry-run change line %q", c)
			}
		}
	}
	if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
		t.Errorf("dry run changed the host: %v", d)
	}
	if len(h.services.Snapshot()) > 0 || len(h.loader.loaded) > 0 {
		t.Errorf("dry run touched services %q or modules %q", h.services.Snapshot(), h.loader.loaded)
	}
	plan := out.String()
	for _, s := range []string{
		"== files: ",
		"--- /dev/null\n+++ b/etc/sysctl.d/90-machineadm.conf\n",
		"+net.ipv4.ip_forward = 1\n",
		"--- a/etc/hosts\n+++ b/etc/hosts\n",
		"+10.0.0.10 api.example.internal\n",
		"/etc/machineadm/blob.bin: content hidden (secret)",
		"/opt/remote.bin: binary content; would create",
		"/etc/containerd/certs.d/docker.io/mirror-0-client.key: content hidden (secret)",
		"would load kernel module br_netfilter",
		"would set net.ipv4.ip_forward = 1 (was 0)",
		"would restart containerd.service",
	} {
		if !strings.Contains(plan, s) {
			t.Errorf("plan lacks %q", s)
		}
	}
	if strings.Contains(plan, "PRIVATE KEY") {
		t.Error("plan shows the client key")
	}
	if t.Failed() {
		t.Logf("plan:\n%s", plan)
	}
}

func TestContainerdRestartFailureIsRetriedNextRun(t *testing.T) {
	h := newTestHost(t)
	cfg := h.fullSpec(t, nil)
	h.services.RestartErr = errors.New(`restarting containerd.service: systemd job result "failed"`)
	step := stepNamed(t, Steps(cfg), StepContainerd)
	_, err := step.Apply(context.Background(), h.env(nil))
	if class, _ := errclass.Of(err); class != errclass.ContainerRuntimeUnavailable {
		t.Fatalf("error %v, class %s; want ContainerRuntimeUnavailable", err, class)
	}
	if _, err := os.Stat(filepath.Join(h.root, restartPending)); err != nil {
		t.Fatalf("restart marker missing after a failed restart: %v", err)
	}
	// The config is already written; the next run must still restart.
	h.services.RestartErr = nil
	res, err := stepNamed(t, Steps(cfg), StepContainerd).Apply(context.Background(), h.env(nil))
	if err != nil || !slices.Equal(res.Changes, []string{"restarted containerd.service"}) {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(h.root, restartPending)); !os.IsNotExist(err) {
		t.Errorf("marker not removed: %v", err)
	}
	res, _ = stepNamed(t, Steps(cfg), StepContainerd).Apply(context.Background(), h.env(nil))
	if res.Changed {
		t.Errorf("third run changed: %+v", res)
	}
}

func TestHostsChangeNeedsNoRestart(t *testing.T) {
	h := newTestHost(t)
	runAll(t, h.fullSpec(t, nil), h.env(nil))
	calls := len(h.services.Snapshot())
	cfg := h.fullSpec(t, func(d string) string {
		return strings.Replace(d, "https://mirror.example.com", "https://mirror2.example.com", 1)
	})
	res, err := stepNamed(t, Steps(cfg), StepContainerd).Apply(context.Background(), h.env(nil))
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	if len(h.services.Snapshot()) != calls {
		t.Errorf("hosts.toml change restarted containerd: %q", h.services.Snapshot())
	}
}

func TestProxyRemovedWhenSpecDropsIt(t *testing.T) {
	h := newTestHost(t)
	runAll(t, h.fullSpec(t, nil), h.env(nil))
	cfg := h.fullSpec(t, func(d string) string {
		return strings.Replace(d, `      proxy: {httpsProxy: "http://proxy.example.com:3128", noProxy: "10.0.0.0/8"}`+"\n", "", 1)
	})
	res, err := stepNamed(t, Steps(cfg), StepContainerd).Apply(context.Background(), h.env(nil))
	if err != nil || !slices.Contains(res.Changes, "removed /etc/systemd/system/containerd.service.d/10-machineadm-proxy.conf") {
		t.Fatalf("%+v %v", res, err)
	}
	calls := h.services.Snapshot()
	if !slices.Equal(calls[len(calls)-2:], []string{"daemon-reload", "restart containerd.service"}) {
		t.Errorf("calls %q", calls)
	}
}

func TestOfflineRootTouchesNothingLive(t *testing.T) {
	h := newTestHost(t)
	env := h.env(nil)
	env.Offline = true
	env.Services = nil
	env.ContainerdVersion = nil // none under the root: version 2 with a warning
	var logs bytes.Buffer
	env.Log = newTextLogger(&logs)
	runAll(t, h.fullSpec(t, nil), env)
	if len(h.loader.loaded) > 0 {
		t.Errorf("offline run loaded %q", h.loader.loaded)
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "proc/sys/net/ipv4/ip_forward")); string(b) != "0\n" {
		t.Errorf("offline run set ip_forward: %q", b)
	}
	b, _ := os.ReadFile(filepath.Join(h.root, "etc/containerd/config.toml"))
	if !strings.Contains(string(b), "version = 2") || !strings.Contains(logs.String(), "containerd not found under the root") {
		t.Errorf("want version 2 and a warning; config:\n%s\nlog:\n%s", b, logs.String())
	}
	if !strings.Contains(logs.String(), "host step done") || !strings.Contains(logs.String(), "duration=") {
		t.Errorf("steps do not log their result and duration:\n%s", logs.String())
	}
}

// A proxy URL with a password makes the drop-in 0600 and hides it from
// dry-run diffs; without credentials it is 0644 again.
func TestProxyDropInWithPasswordIsPrivate(t *testing.T) {
	const password = "s3cr3t-pr0xy-pass"
	withPassword := func(d string) string {
		return strings.Replace(d, `httpsProxy: "http://proxy.example.com:3128"`, `httpsProxy: "http://user:`+password+`@proxy.example.com:3128"`, 1)
	}
	dropIn := "/etc/systemd/system/containerd.service.d/10-machineadm-proxy.conf"

	// Dry run on a fresh host: the content is not shown.
	h := newTestHost(t)
	var out bytes.Buffer
	env := h.env(&out)
	env.DryRun = true
	runAll(t, h.fullSpec(t, withPassword), env)
	if plan := out.String(); strings.Contains(plan, password) || !strings.Contains(plan, dropIn+": content hidden (secret)") {
		t.Errorf("dry-run plan shows the proxy drop-in or does not say it is hidden:\n%s", plan)
	}

	runAll(t, h.fullSpec(t, withPassword), h.env(nil))
	checkMode := func(want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(h.root, dropIn))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("drop-in mode %o, want %o", fi.Mode().Perm(), want)
		}
	}
	checkMode(0o600)
	if b, _ := os.ReadFile(filepath.Join(h.root, dropIn)); !strings.Contains(string(b), password) {
		t.Fatalf("drop-in lacks the proxy URL:\n%s", b)
	}

	// The credentials go away: the file is world-readable again, and a
	// second run changes nothing.
	res, err := stepNamed(t, Steps(h.fullSpec(t, nil)), StepContainerd).Apply(context.Background(), h.env(nil))
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	checkMode(0o644)
	res, err = stepNamed(t, Steps(h.fullSpec(t, nil)), StepContainerd).Apply(context.Background(), h.env(nil))
	if err != nil || res.Changed {
		t.Errorf("second run: %+v %v", res, err)
	}

	// A password added to an existing 0644 drop-in narrows its mode.
	runAll(t, h.fullSpec(t, withPassword), h.env(nil))
	checkMode(0o600)
}

// TestContainerdWaitsForCRI: after a restart the step waits for the CRI;
// a runtime that never becomes ready is ContainerRuntimeUnavailable and the
// restart stays pending for the next run.
func TestContainerdWaitsForCRI(t *testing.T) {
	h := newTestHost(t)
	cfg := h.fullSpec(t, nil)
	env := h.env(nil)
	env.CRIReady = func(ctx context.Context) error { return errors.New("server is not initialized yet") }
	_, err := stepNamed(t, Steps(cfg), StepContainerd).Apply(context.Background(), env)
	if class, _ := errclass.Of(err); class != errclass.ContainerRuntimeUnavailable || !strings.Contains(err.Error(), "not initialized") {
		t.Fatalf("error %v, class %s; want ContainerRuntimeUnavailable", err, class)
	}
	if _, err := os.Stat(filepath.Join(h.root, restartPending)); err != nil {
		t.Fatalf("restart marker missing after the CRI never became ready: %v", err)
	}
	env = h.env(nil)
	waited := 0
	env.CRIReady = func(ctx context.Context) error { waited++; return nil }
	res, err := stepNamed(t, Steps(cfg), StepContainerd).Apply(context.Background(), env)
	if err != nil || waited != 1 || !slices.Contains(res.Changes, "waited for containerd's CRI to report RuntimeReady") {
		t.Fatalf("second run: %+v, %v, waited %d", res, err, waited)
	}
}

// TestStagingDirectoryUnusable: a source that cannot be staged ($TMPDIR
// missing, read-only or full) is the host's problem, not the URL's: the
// error names the field and $TMPDIR, its class is HostPreparationFailed
// with a hint about the staging directory (not one about reaching the
// URL), and nothing is written.
func TestStagingDirectoryUnusable(t *testing.T) {
	h := newTestHost(t)
	before := snapshot(t, h.root)
	cfg := h.fullSpec(t, nil)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	err := Check(context.Background(), h.env(nil), Steps(cfg))
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.HostPreparationFailed {
		t.Fatalf("err = %v, want class HostPreparationFailed", err)
	}
	if !strings.Contains(err.Error(), "spec.host.files[3].source") || !strings.Contains(ce.Hint, "TMPDIR") {
		t.Errorf("err = %v (hint %q), want the field and a hint naming $TMPDIR", err, ce.Hint)
	}
	if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
		t.Errorf("check changed the host: %v", d)
	}
}
