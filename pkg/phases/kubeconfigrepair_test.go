package phases

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testpin"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
)

// wholeKubeconfig is a working kubeconfig (a token user), as far as the
// repair can tell.
const wholeKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster: {server: "https://192.0.2.10:6443"}
users:
- name: admin
  user: {token: not-a-real-token}
contexts:
- name: admin@kubernetes
  context: {cluster: kubernetes, user: admin}
current-context: admin@kubernetes
`

// cutKubeconfig is wholeKubeconfig cut short inside a flow mapping: it
// does not load.
var cutKubeconfig = wholeKubeconfig[:strings.Index(wholeKubeconfig, "not-a-real")]

// leavesBefore returns the leaf phases of cfg's workflow before leaf, in
// their order: what an interrupted run that stopped in leaf completed.
func leavesBefore(t *testing.T, cfg *machineadm.MachineBootstrapConfig, leaf string) []string {
	t.Helper()
	rows := run.PhasesFor(cfg)
	var out []string
	for _, r := range rows {
		if r.Name == leaf {
			return out
		}
		if r.Leaf(rows) {
			out = append(out, r.Name)
		}
	}
	t.Fatalf("no leaf %s in %s's workflow", leaf, cfg.Spec.Action)
	return nil
}

// TestKubeconfigLeafRepairGate: before a kubeconfig leaf runs for real,
// an empty or cut-short kubeconfig file of that leaf is removed only when
// the run resumes in that very leaf after an interrupted run of the same
// spec; a whole file, another leaf's file, a first run's file and a dry
// run's are kept. A file that cannot be removed fails the leaf as
// HostPreparationFailed with a hint, before kubeadm runs.
func TestKubeconfigLeafRepairGate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		example  string
		resumeAt string // the leaf the state file makes this run resume at; "" starts afresh
		dryRun   bool
		pinned   string            // a file made undeletable
		files    map[string]string // under /etc/kubernetes, before the run
		removed  []string          // want removed
		wantErr  bool
	}{
		{name: "empty, resumed in its leaf", example: "control-plane-init.yaml", resumeAt: "kubeconfig/admin",
			files: map[string]string{"admin.conf": "", "scheduler.conf": ""}, removed: []string{"admin.conf"}},
		{name: "cut short, resumed in its leaf", example: "control-plane-init.yaml", resumeAt: "kubeconfig/super-admin",
			files: map[string]string{"admin.conf": cutKubeconfig, "super-admin.conf": cutKubeconfig}, removed: []string{"super-admin.conf"}},
		{name: "whole, resumed in its leaf", example: "control-plane-init.yaml", resumeAt: "kubeconfig/admin",
			files: map[string]string{"admin.conf": wholeKubeconfig}},
		{name: "resumed in another leaf", example: "control-plane-init.yaml", resumeAt: "kubeconfig/kubelet",
			files: map[string]string{"admin.conf": "", "controller-manager.conf": ""}},
		{name: "first run", example: "control-plane-init.yaml",
			files: map[string]string{"admin.conf": ""}},
		{name: "dry run", example: "control-plane-init.yaml", resumeAt: "kubeconfig/admin", dryRun: true,
			files: map[string]string{"admin.conf": ""}},
		{name: "join, resumed in its leaf", example: "control-plane-join.yaml", resumeAt: "control-plane-prepare/kubeconfig",
			files:   map[string]string{"admin.conf": "", "controller-manager.conf": wholeKubeconfig, "scheduler.conf": cutKubeconfig, "bootstrap-kubelet.conf": ""},
			removed: []string{"admin.conf", "scheduler.conf"}},
		{name: "cannot remove", example: "control-plane-init.yaml", resumeAt: "kubeconfig/admin", pinned: "admin.conf",
			files: map[string]string{"admin.conf": ""}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := loadExample(t, tc.example)
			cfg := l.Config
			d := testData(t)
			d.Config, d.Root, d.DryRun = cfg, t.TempDir(), tc.dryRun
			deliverSecrets(t, d.Root, cfg)
			pki := filepath.Join(d.Root, cfg.Spec.ControlPlane.PKI.CertificatesDir)
			kdir := filepath.Join(d.Root, "etc/kubernetes")
			for _, dir := range []string{pki, kdir} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// kubeadm writes the kubeconfigs only with the cluster CA's key.
			if err := os.WriteFile(filepath.Join(pki, "ca.key"), []byte("a CA key"), 0o600); err != nil {
				t.Fatal(err)
			}
			for f, content := range tc.files {
				if err := os.WriteFile(filepath.Join(kdir, f), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.pinned != "" {
				testpin.Undeletable(t, filepath.Join(kdir, tc.pinned))
			}
			if tc.resumeAt != "" {
				st := &state{SpecDigest: d.SpecDigest, Completed: leavesBefore(t, cfg, tc.resumeAt)}
				if err := writeState(filepath.Join(d.WorkDir, stateFile), st, false); err != nil {
					t.Fatal(err)
				}
			}
			var ran []string
			d.RunKubeadm = func(ctx context.Context, r *run.Runner, p run.Phase) error {
				ran = append(ran, p.Name)
				return nil
			}
			obs := &resultObs{results: map[string]Result{}}
			w := &Workflow{State: true, Phases: KubeadmPhases(cfg)}
			failed, err := w.Run(context.Background(), d, obs, RunOptions{})
			if tc.wantErr {
				c, hint := errclass.Of(err)
				if c != errclass.HostPreparationFailed || failed != tc.resumeAt || !strings.Contains(hint, "/etc/kubernetes") || !strings.Contains(err.Error(), "admin.conf") {
					t.Fatalf("failed %q, class %s, hint %q, err %v; want %s HostPreparationFailed naming admin.conf", failed, c, hint, err, tc.resumeAt)
				}
				if slices.Contains(ran, tc.resumeAt) {
					t.Errorf("kubeadm ran %s after the repair failed", tc.resumeAt)
				}
			} else if err != nil {
				t.Fatalf("%s: %v", failed, err)
			}

			for f := range tc.files {
				_, err := os.Lstat(filepath.Join(kdir, f))
				if gone, want := os.IsNotExist(err), slices.Contains(tc.removed, f); gone != want {
					t.Errorf("%s removed: %v, want %v", f, gone, want)
				}
			}
			changes := obs.results[tc.resumeAt].Changes
			var said []string
			for _, c := range changes {
				if strings.HasPrefix(c, "removed /etc/kubernetes/") {
					said = append(said, strings.TrimPrefix(c[:strings.Index(c, ":")], "removed /etc/kubernetes/"))
					if !strings.Contains(c, "left by an interrupted earlier run of this phase; kubeadm writes it again") {
						t.Errorf("change line %q does not say why", c)
					}
				}
			}
			if !slices.Equal(said, tc.removed) {
				t.Errorf("%s's change lines %q, want removals of %v", tc.resumeAt, changes, tc.removed)
			}
		})
	}
}

// TestRepairInterruptedKubeconfigsDryRun: a dry run never reads the state
// file, so it never resumes (the "dry run" case above); with resumedAt set
// all the same, the repair's own guard keeps a dry run off the host.
func TestRepairInterruptedKubeconfigsDryRun(t *testing.T) {
	l := loadExample(t, "control-plane-init.yaml")
	d := testData(t)
	d.Config, d.Root = l.Config, t.TempDir()
	for p, content := range map[string]string{"etc/kubernetes/pki/ca.key": "a CA key", "etc/kubernetes/admin.conf": ""} {
		if err := os.MkdirAll(filepath.Join(d.Root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.Root, p), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	row, _ := run.Lookup(machineadm.ActionInit, "kubeconfig/admin")
	d.resumedAt = row.Name
	for _, dry := range []bool{true, false} {
		d.DryRun = dry
		lines, err := repairInterruptedKubeconfigs(d, row)
		_, statErr := os.Stat(filepath.Join(d.Root, "etc/kubernetes/admin.conf"))
		if gone := os.IsNotExist(statErr); err != nil || gone == dry || (len(lines) == 1) == dry {
			t.Errorf("dry run %v: lines %q, err %v, admin.conf removed %v", dry, lines, err, gone)
		}
	}
}
