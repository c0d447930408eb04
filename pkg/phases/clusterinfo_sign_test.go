package phases

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/spec"
)

// signTestToken is the init spec's bootstrap token in these tests.
const (
	signTestToken  = "sgnphs.0123456789abcdef"
	signTestSecret = "0123456789abcdef"
)

// minimalInit is a control-plane init spec with one bootstrap token read
// from a file.
const minimalInit = `apiVersion: ` + machineadm.LatestAPIVersion + `
kind: ` + machineadm.Kind + `
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  controlPlane:
    advertiseAddress: 192.0.2.10
    bootstrapTokens:
      - token: {file: /etc/machineadm/secrets/bootstrap-token}
        ttl: 1h
`

// initData is a control-plane init run on a temporary root whose
// /etc/kubernetes/admin.conf is adminConf (none when nil), its log in buf.
func initData(t *testing.T, adminConf []byte, buf *bytes.Buffer) *Data {
	t.Helper()
	l, err := spec.Load([]byte(minimalInit), "init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write := func(p string, data []byte) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/machineadm/secrets/bootstrap-token", []byte(signTestToken+"\n"))
	if adminConf != nil {
		write("etc/kubernetes/admin.conf", adminConf)
	}
	d := testData(t)
	d.Config, d.Root = l.Config, root
	d.Log = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return d
}

// sign-cluster-info runs in every control-plane init right after
// kubeadm's bootstrap-token, and in no join.
func TestSignClusterInfoInInitTreeOnly(t *testing.T) {
	var buf bytes.Buffer
	d := initData(t, nil, &buf)
	leaves := Bootstrap(d.Config).Leaves()
	i := slices.Index(leaves, SignClusterInfoName)
	if i < 1 || i+1 >= len(leaves) || leaves[i-1] != "bootstrap-token" || !strings.HasPrefix(leaves[i+1], "kubelet-finalize") {
		t.Errorf("init leaves %v: want bootstrap-token, %s, kubelet-finalize/... in a row", leaves, SignClusterInfoName)
	}
	w, _ := workerData(t)
	if slices.Contains(Bootstrap(w.Config).Names(), SignClusterInfoName) {
		t.Errorf("join tree has %s", SignClusterInfoName)
	}
	if err := Bootstrap(d.Config).CheckNames([]string{SignClusterInfoName}); err != nil {
		t.Error(err)
	}
}

// A dry run says what it would sign and contacts no API server (there is
// no admin.conf).
func TestSignClusterInfoDryRun(t *testing.T) {
	var buf bytes.Buffer
	d := initData(t, nil, &buf)
	d.DryRun = true
	obs := &recordObs{}
	if _, err := Bootstrap(d.Config).Run(context.Background(), d, obs, RunOptions{Only: SignClusterInfoName}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(obs.events, []string{"start " + SignClusterInfoName, "Succeeded " + SignClusterInfoName}) {
		t.Errorf("events %v", obs.events)
	}
	res, err := SignClusterInfoPhase().Run(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || len(res.Changes) != 1 || !strings.Contains(res.Changes[0], "would add jws-kubeconfig-sgnphs to ConfigMap kube-public/cluster-info") {
		t.Errorf("dry run: %+v", res)
	}
	if strings.Contains(buf.String()+strings.Join(res.Changes, ""), signTestSecret) {
		t.Error("token secret in the dry run's output")
	}
}

// No bootstrap tokens in the spec: nothing to sign, nothing contacted.
func TestSignClusterInfoNoTokens(t *testing.T) {
	var buf bytes.Buffer
	d := initData(t, nil, &buf)
	d.Config.Spec.ControlPlane.BootstrapTokens = nil
	res, err := SignClusterInfoPhase().Run(context.Background(), d)
	if err != nil || res.Changed || !strings.Contains(res.Summary(), "nothing to sign") {
		t.Errorf("%+v %v", res, err)
	}
}

// admin.conf names a loopback port where nothing listens: the phase fails,
// bounded, with its declared class and hint.
func TestSignClusterInfoUnreachableAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	conf := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://" + addr + "\", insecure-skip-tls-verify: true}\n" +
		"users:\n- name: u\n  user: {token: not-a-real-credential}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	var buf bytes.Buffer
	d := initData(t, []byte(conf), &buf)
	obs := &recordObs{}
	failed, err := Bootstrap(d.Config).Run(context.Background(), d, obs, RunOptions{Only: SignClusterInfoName})
	if err == nil || failed != SignClusterInfoName {
		t.Fatalf("failed %q, err %v", failed, err)
	}
	c, hint := errclass.Of(err)
	if c != errclass.ControlPlaneUnhealthy || hint != signClusterInfoHint {
		t.Errorf("class %s hint %q", c, hint)
	}
	if !strings.Contains(err.Error(), "gave up after") {
		t.Errorf("error %v", err)
	}
	if strings.Contains(buf.String(), signTestSecret) || strings.Contains(err.Error(), signTestSecret) {
		t.Error("token secret in the log or error")
	}
}
