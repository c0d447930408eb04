package run

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	kubeadmcmd "k8s.io/kubernetes/cmd/kubeadm/app/cmd"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// kubeadmTree returns the phase names of `kubeadm VERB phase ...` of the
// compiled-in kubeadm, in kubeadm's order, parents first, without the
// "all" shortcuts.
func kubeadmTree(t *testing.T, verb string) []string {
	t.Helper()
	sorting := cobra.EnableCommandSorting
	cobra.EnableCommandSorting = false
	defer func() { cobra.EnableCommandSorting = sorting }()
	root := kubeadmcmd.NewKubeadmCommand(nil, io.Discard, io.Discard)
	var names []string
	var walk func(prefix string, c *cobra.Command)
	walk = func(prefix string, c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Name() == "all" || s.Name() == "help" {
				continue
			}
			names = append(names, prefix+s.Name())
			walk(prefix+s.Name()+"/", s)
		}
	}
	for _, c := range root.Commands() {
		if c.Name() != verb {
			continue
		}
		for _, s := range c.Commands() {
			if s.Name() == "phase" {
				walk("", s)
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("kubeadm %s has no phase subcommands", verb)
	}
	return names
}

func tableNames(table []Phase) []string {
	var out []string
	for _, p := range table {
		out = append(out, p.Name)
	}
	return out
}

// visible leaves out the phases kubeadm hides from its command tree.
func visible(table []Phase) []Phase {
	return slices.DeleteFunc(table, func(p Phase) bool { return p.Hidden })
}

// TestPhaseTablesMatchKubeadm: the tables list exactly the phases of the
// compiled-in kubeadm, in its order; a kubeadm upgrade that adds, renames
// or moves a phase fails here.
func TestPhaseTablesMatchKubeadm(t *testing.T) {
	for verb, action := range map[string]machineadm.Action{"init": machineadm.ActionInit, "join": machineadm.ActionJoin} {
		got, want := tableNames(visible(PhaseTable(action))), kubeadmTree(t, verb)
		if !slices.Equal(got, want) {
			t.Errorf("%s table:\n got  %v\n want %v", verb, got, want)
		}
		for _, p := range PhaseTable(action) {
			if parentName(p.Name) == "" && p.Class == "" {
				t.Errorf("%s phase %s declares no error class", verb, p.Name)
			}
			if p.Short == "" {
				t.Errorf("%s phase %s has no description", verb, p.Name)
			}
		}
	}
}

func TestPhasesForConditions(t *testing.T) {
	worker := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Action: machineadm.ActionJoin}}
	got := tableNames(PhasesFor(worker))
	if want := []string{"preflight", "kubelet-start", "kubelet-wait-bootstrap"}; !slices.Equal(got, want) {
		t.Errorf("worker join phases %v, want %v", got, want)
	}
	cp := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionJoin}}
	cp.Spec.ControlPlane = &machineadm.ControlPlane{Etcd: machineadm.Etcd{Local: &machineadm.LocalEtcd{}}}
	got = tableNames(PhasesFor(cp))
	for _, n := range []string{"control-plane-prepare", "control-plane-prepare/download-certs", "etcd-join", "control-plane-join/mark-control-plane", "wait-control-plane"} {
		if !slices.Contains(got, n) {
			t.Errorf("control-plane join lacks %s: %v", n, got)
		}
	}
	if slices.Contains(got, "check-etcd") {
		t.Errorf("check-etcd is never run: %v", got)
	}
	cp.Spec.ControlPlane.Etcd.Local = nil
	if slices.Contains(tableNames(PhasesFor(cp)), "etcd-join") {
		t.Error("etcd-join without a local etcd")
	}
	init := *cp
	init.Spec.Action = machineadm.ActionInit
	got = tableNames(PhasesFor(&init))
	for _, n := range []string{"etcd", "etcd/local", "upload-certs", "show-join-command"} {
		if slices.Contains(got, n) {
			t.Errorf("init with external etcd and no certificate key runs %s", n)
		}
	}
	for _, p := range PhasesFor(&init) {
		if p.Class == "" {
			t.Errorf("%s has no class after inheritance", p.Name)
		}
		if p.Name == "kubelet-finalize/enable-client-cert-rotation" && !p.Journal {
			t.Error("kubelet-finalize's sub-phase does not read the kubelet journal")
		}
	}
}

func TestSkipForRunsOneLeaf(t *testing.T) {
	table := PhaseTable(machineadm.ActionInit)
	skip := skipFor(table, "addon/kube-proxy")
	for _, n := range []string{"addon", "addon/kube-proxy"} {
		if slices.Contains(skip, n) {
			t.Errorf("skip list skips %s: %v", n, skip)
		}
	}
	for _, n := range []string{"addon/coredns", "preflight", "certs", "show-join-command"} {
		if !slices.Contains(skip, n) {
			t.Errorf("skip list lacks %s: %v", n, skip)
		}
	}
	if slices.Contains(skip, "certs/apiserver") {
		t.Errorf("a child of a skipped phase is listed: %v", skip)
	}
	if got := strings.Join(flagsFor(table, "upload-certs"), " "); got != "--upload-certs --skip-certificate-key-print" {
		t.Errorf("upload-certs flags %q", got)
	}
}
