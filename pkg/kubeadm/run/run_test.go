package run

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	kubeadmcmd "k8s.io/kubernetes/cmd/kubeadm/app/cmd"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/version"
)

// TestPhaseArgsPrefersSinglePhaseCommands: against the compiled-in
// kubeadm's tree, a leaf runs as kubeadm's single-phase command with
// --config and its flags where that command takes them and the flags
// kubeadm builds complete run data from, and otherwise as the whole
// command with the other phases skipped. In a tree that has the run data,
// every leaf runs as its single-phase command alone.
func TestPhaseArgsPrefersSinglePhaseCommands(t *testing.T) {
	root := kubeadmcmd.NewKubeadmCommand(nil, io.Discard, io.Discard)
	whole := map[string]bool{
		"init wait-control-plane": true,
		// No --discovery-file: kubeadm would need an admin.conf.
		"join control-plane-prepare/control-plane": true, "join etcd-join": true, "join kubelet-wait-bootstrap": true,
		"join control-plane-join/mark-control-plane": true,
		"join wait-control-plane":                    true,
	}
	for _, action := range []machineadm.Action{machineadm.ActionInit, machineadm.ActionJoin} {
		verb := "join"
		if action == machineadm.ActionInit {
			verb = "init"
		}
		table := PhaseTable(action)
		for _, p := range table {
			if p.Never || slices.ContainsFunc(table, func(q Phase) bool { return strings.HasPrefix(q.Name, p.Name+"/") }) {
				continue // machineadm runs leaves, and never the Never rows
			}
			single := verb + " phase " + strings.ReplaceAll(p.Name, "/", " ")
			if got := strings.Join(phaseArgs(root, verb, "/k.yaml", table, p.Name, true), " "); got != single {
				t.Errorf("%s %s with the run data: %q, want %q", verb, p.Name, got, single)
			}
			args := phaseArgs(root, verb, "/k.yaml", table, p.Name, false)
			got := strings.Join(args, " ")
			if whole[verb+" "+p.Name] {
				want := verb + " --config /k.yaml --skip-phases " + strings.Join(skipFor(table, p.Name), ",")
				if got != strings.TrimSpace(want+" "+strings.Join(p.Flags, " ")) {
					t.Errorf("%s %s: %q, want the whole command %q", verb, p.Name, got, want)
				}
				continue
			}
			want := single + " --config /k.yaml"
			if len(p.Flags) > 0 {
				want += " " + strings.Join(p.Flags, " ")
			}
			if got != want {
				t.Errorf("%s %s: %q, want the single-phase command %q", verb, p.Name, got, want)
			}
		}
	}
	// A phase the tree has no single-phase command for (a hidden one)
	// falls back to the whole command, run data or not.
	for _, withData := range []bool{false, true} {
		if got := phaseArgs(root, "join", "/k.yaml", PhaseTable(machineadm.ActionJoin), "check-etcd", withData); !slices.Contains(got, "--skip-phases") || slices.Contains(got, "phase") {
			t.Errorf("check-etcd (run data %t): %q, want the whole command", withData, got)
		}
	}
}

// TestUploadConfigKeepsTheAddonsEnabled runs the compiled-in kubeadm's
// certs/ca, kubeconfig/admin and upload-config/kubeadm phases in a dry run, as a
// bootstrap does, and reads the ClusterConfiguration that upload-config
// would store in the kubeadm-config ConfigMap: it must not say that
// CoreDNS and kube-proxy are disabled. Run as the whole `kubeadm init`
// with the addon phases in --skip-phases, kubeadm marked them disabled
// there, and `kubeadm upgrade apply` would later skip both addons.
func TestUploadConfigKeepsTheAddonsEnabled(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	tmp := t.TempDir()
	pkiDir, dryRun := filepath.Join(tmp, "pki"), filepath.Join(tmp, "dry-run")
	if _, err := pki.InitPKI(pkiDir, "ECDSA-P256", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dryRun, 0o700); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(tmp, "kubeadm-init.yaml")
	doc := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
dryRun: true
localAPIEndpoint: {advertiseAddress: 192.0.2.10, bindPort: 6443}
nodeRegistration: {name: cp-test, criSocket: unix:///run/containerd/containerd.sock}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controlPlaneEndpoint: cp.test.example:6443
certificatesDir: ` + pkiDir + `
`
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var out []string
	r := &Runner{Action: machineadm.ActionInit, ConfigPath: config, DryRunDir: dryRun, CertificatesDir: pkiDir, Output: func(l string) { out = append(out, l) }}
	for _, name := range []string{"certs/ca", "kubeconfig/admin", "upload-config/kubeadm"} {
		row, ok := Lookup(machineadm.ActionInit, name)
		if !ok {
			t.Fatalf("no phase %s", name)
		}
		if err := r.Run(context.Background(), row); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, strings.Join(out, "\n"))
		}
	}
	all := strings.Join(out, "\n")
	i := strings.Index(all, "kind: ClusterConfiguration")
	if i < 0 {
		t.Fatalf("upload-config's dry run shows no ClusterConfiguration:\n%s", all)
	}
	// The ClusterConfiguration is the ConfigMap's block up to its end.
	start := strings.LastIndex(all[:i], "ClusterConfiguration: |")
	end := strings.Index(all[i:], "kind: ConfigMap")
	if start < 0 || end < 0 {
		t.Fatalf("upload-config's dry run: no kubeadm-config ConfigMap around the ClusterConfiguration:\n%s", all)
	}
	cc := all[start : i+end]
	if strings.Contains(cc, "disabled: true") {
		t.Errorf("the ClusterConfiguration upload-config stores disables an addon:\n%s", cc)
	}
	if !strings.Contains(cc, "controlPlaneEndpoint: cp.test.example:6443") {
		t.Errorf("the block read is not this cluster's ClusterConfiguration:\n%s", cc)
	}
}

// TestSessionSharesKubeadmsRunData runs real certs phases of the
// compiled-in kubeadm through one Session: the second phase reuses the
// first one's command tree (and so kubeadm's run data), its output still
// reaches its own phase, and a failed phase drops the tree, so that the
// next phase builds kubeadm's run data afresh.
func TestSessionSharesKubeadmsRunData(t *testing.T) {
	dir, config := kubeadmtest.PKISetup(t)
	var out []string
	sess := &Session{}
	r := &Runner{Action: machineadm.ActionInit, ConfigPath: config, Output: func(l string) { out = append(out, l) }, Session: sess}
	run := func(name string) error {
		t.Helper()
		row, ok := Lookup(machineadm.ActionInit, name)
		if !ok {
			t.Fatalf("no phase %s", name)
		}
		out = nil
		return r.Run(context.Background(), row)
	}
	if err := run("certs/apiserver"); err != nil {
		t.Fatalf("certs/apiserver: %v\n%s", err, strings.Join(out, "\n"))
	}
	first := sess.root
	if first == nil {
		t.Fatal("the session kept no command tree after a single-phase command")
	}
	if err := run("certs/front-proxy-client"); err != nil {
		t.Fatalf("certs/front-proxy-client: %v\n%s", err, strings.Join(out, "\n"))
	}
	if sess.root != first {
		t.Error("the second phase built a new command tree")
	}
	if got := strings.Join(out, "\n"); !strings.Contains(got, `Generating "front-proxy-client" certificate and key`) || strings.Contains(got, `"apiserver"`) {
		t.Errorf("the second phase's output is not its own:\n%s", got)
	}
	// A kill between kubeadm's key and certificate writes: the rerun fails.
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "apiserver-kubelet-client.key"))
	if err := run("certs/apiserver-kubelet-client"); err == nil {
		t.Fatal("certs/apiserver-kubelet-client with a lone key succeeded")
	}
	if sess.root != nil {
		t.Error("the session kept the command tree of a failed phase")
	}
	if err := run("certs/etcd-server"); err != nil {
		t.Fatalf("certs/etcd-server after a failure: %v\n%s", err, strings.Join(out, "\n"))
	}
	if sess.root == nil || sess.root == first {
		t.Error("the phase after a failure did not build a new command tree")
	}
}

// TestSessionKeepsOnlyMatchingSinglePhaseTrees: a Session reuses its tree
// only for the key it was built for and only for a single-phase command;
// a whole command (with --skip-phases) gets a tree that is never kept, and
// without a Session every phase gets a new tree.
func TestSessionKeepsOnlyMatchingSinglePhaseTrees(t *testing.T) {
	single := func(*cobra.Command, bool) []string {
		return []string{"init", "phase", "preflight", "--config", "/k.yaml"}
	}
	whole := func(*cobra.Command, bool) []string {
		return []string{"init", "--config", "/k.yaml", "--skip-phases", "preflight"}
	}
	k := sessionKey{verb: "init", config: "/k.yaml"}
	s := &Session{}
	a, _ := s.command(k, io.Discard, io.Discard, single)
	if s.root != a {
		t.Fatal("a single-phase command's tree was not kept")
	}
	if b, _ := s.command(k, io.Discard, io.Discard, single); b != a {
		t.Error("the same key built a new tree")
	}
	if b, args := s.command(k, io.Discard, io.Discard, whole); b == a || s.root != a || !slices.Contains(args, "--skip-phases") {
		t.Error("a whole command ran in, or replaced, the kept tree")
	}
	other := k
	other.flags = "--skip-token-print"
	if b, _ := s.command(other, io.Discard, io.Discard, single); b == a || s.root != b || s.key != other {
		t.Error("other flags reused the tree, or their new tree was not kept")
	}
	var none *Session
	if b, _ := none.command(k, io.Discard, io.Discard, single); b == nil || b == s.root {
		t.Error("without a session: no new tree")
	}
	none.release(true) // a nil session has nothing to release
	s.release(false)
	if s.root == nil {
		t.Error("release after success dropped the tree")
	}
	s.release(true)
	if s.root != nil {
		t.Error("release after a failure kept the tree")
	}
}

// BenchmarkPhasesSession runs the eleven certs leaves of the compiled-in
// kubeadm (with their certificates already there, so that each is kubeadm
// reading its configuration and checking the files) once per iteration,
// each phase building its own command tree and run data ("per-phase"),
// or one Session carrying them from phase to phase ("session", as a
// bootstrap does). Compare the two in one run (go test -bench
// PhasesSession -benchmem ./pkg/kubeadm/).
func BenchmarkPhasesSession(b *testing.B) {
	_, p := kubeadmtest.PKISetup(b)
	var leaves []Phase
	for _, row := range PhaseTable(machineadm.ActionInit) {
		if strings.HasPrefix(row.Name, "certs/") {
			row, _ := Lookup(machineadm.ActionInit, row.Name)
			leaves = append(leaves, row)
		}
	}
	for _, tc := range []struct {
		name    string
		session bool
	}{{"per-phase", false}, {"session", true}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				r := &Runner{Action: machineadm.ActionInit, ConfigPath: p}
				if tc.session {
					r.Session = &Session{}
				}
				for _, row := range leaves {
					if err := r.Run(context.Background(), row); err != nil {
						b.Fatalf("%s: %v", row.Name, err)
					}
				}
			}
		})
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
	absorbed := false
	func() {
		defer recoverJoinDoneMessage(&absorbed, &err)
		var p *translate.Inputs
		_ = p.JoinToken // nil dereference outside kubeadm's join command
	}()
	t.Error("not reached: the panic must propagate")
}
