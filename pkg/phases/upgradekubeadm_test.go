package phases

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/proxy"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/clusterinfo"
	kubeadmupgrade "k8s.io/kubernetes/cmd/kubeadm/app/phases/upgrade"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/uploadconfig"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// TestKubeadmUpgradePhaseHints: every kubeadm upgrade phase of both
// verbs has a hint of its own, not its class's default (for
// ControlPlaneUnhealthy that one is about static pods, wrong for an
// upload-config, addon or bootstrap-token failure), and the workflow's
// leaf for the phase carries it, for either runtime: on a Systemd control
// plane none speaks of crictl, and the control-plane phase's is the
// units'. The objects a hint names are kubeadm's own (its constants), so
// that a kubeadm bump that renames one fails here.
func TestKubeadmUpgradePhaseHints(t *testing.T) {
	static := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeStaticPods}}}
	systemd := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
	worker := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Action: machineadm.ActionJoin}}
	joined := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionJoin,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
	for _, cfg := range []*machineadm.MachineBootstrapConfig{static, systemd, worker, joined} {
		verb := upgradeVerb(cfg)
		sd := systemdRuntime(cfg)
		leaves := map[string]Node{}
		w := &Workflow{Phases: []Phase{kubeadmUpgradePhase(cfg)}}
		for _, n := range w.Nodes() {
			leaves[n.Name] = n
		}
		for _, k := range KubeadmUpgradePhases(verb) {
			hint := k.HintFor(cfg)
			switch {
			case hint == "":
				t.Errorf("%s (systemd %v): %s has no hint", verb, sd, k.Name)
			case hint == errclass.DefaultHint(k.Class):
				t.Errorf("%s (systemd %v): %s's hint is its class's default: %s", verb, sd, k.Name, hint)
			case sd && strings.Contains(hint, "crictl"):
				t.Errorf("%s on a Systemd control plane: %s's hint speaks of crictl: %s", verb, k.Name, hint)
			}
			n, ok := leaves[upgrade.PhaseKubeadm+"/"+k.Name]
			if !ok {
				t.Fatalf("%s: no leaf %s in the workflow", verb, k.Name)
			}
			if n.Class != k.Class || n.Hint != hint {
				t.Errorf("%s (systemd %v): leaf %s has class %s and hint %q, want %s and %q", verb, sd, n.Name, n.Class, n.Hint, k.Class, hint)
			}
		}
	}
	cp := func(cfg *machineadm.MachineBootstrapConfig) string {
		for _, k := range KubeadmUpgradePhases(upgradeVerb(cfg)) {
			if k.Name == "control-plane" {
				return k.HintFor(cfg)
			}
		}
		t.Fatal("no control-plane phase")
		return ""
	}
	if h := cp(static); !strings.Contains(h, "crictl") || !strings.Contains(h, "static pod") {
		t.Errorf("static pods: the control-plane phase's hint is not about static pods: %s", h)
	}
	if h := cp(systemd); !strings.Contains(h, "journalctl -u etcd -u kube-apiserver") {
		t.Errorf("Systemd: the control-plane phase's hint does not name the units' journal: %s", h)
	}

	for hint, names := range map[string][]string{
		hintKubeadmUploadKubeadm:  {kubeadmconstants.KubeadmConfigConfigMap, uploadconfig.NodesKubeadmConfigClusterRoleName},
		hintKubeadmUploadKubelet:  {kubeadmconstants.KubeletBaseConfigurationConfigMap, kubeadmconstants.KubeletBaseConfigMapRole},
		hintKubeadmKubeconfig:     {kubeadmconstants.KubernetesDir + "/" + kubeadmconstants.KubeletKubeConfigFileName},
		hintKubeadmKubeletConfig:  {kubeadmconstants.KubeletRunDirectory + "/" + kubeadmconstants.KubeletConfigurationFileName, kubeadmconstants.KubeletRunDirectory + "/" + kubeadmconstants.KubeletInstanceConfigurationFileName},
		hintKubeadmPreflightApply: {"spec.node.ignorePreflightErrors", "--force"},
		hintKubeadmPreflightNode:  {"spec.node.ignorePreflightErrors"},
		hintKubeadmBootstrapToken: {
			kubeadmconstants.GetNodesClusterRoleName, kubeadmconstants.NodeKubeletBootstrap, kubeadmconstants.NodeAutoApproveBootstrapClusterRoleBinding,
			kubeadmconstants.NodeAutoApproveCertificateRotationClusterRoleBinding, kubeadmconstants.KubeletAPIAdminClusterRoleBindingName, clusterinfo.BootstrapSignerClusterRoleName,
		},
		hintKubeadmCoreDNS:   {kubeadmconstants.CoreDNSConfigMap, kubeadmconstants.CoreDNSDeploymentName, "kube-dns", "system:coredns"},
		hintKubeadmKubeProxy: {kubeadmconstants.KubeProxyConfigMap, proxy.KubeProxyServiceAccountName, kubeadmconstants.KubeProxyClusterRoleBindingName},
	} {
		for _, name := range names {
			if !strings.Contains(hint, name) {
				t.Errorf("the hint does not name %q: %s", name, hint)
			}
		}
	}
}

// TestKubeadmUpgradeHintsNameKubeadmsBackups: the backup directories the
// control-plane and kubelet-config hints send the operator to are the
// ones kubeadm's own code makes (its manifests' and etcd's backups,
// NewKubeStaticPodPathManagerUsingTempDirs; the kubelet configuration's,
// WriteKubeletConfigFiles, run here until it fails for want of a
// config.yaml), each under kubeadm's temporary directory of
// /etc/kubernetes, its timestamp as "*".
func TestKubeadmUpgradeHintsNameKubeadmsBackups(t *testing.T) {
	k8sDir := t.TempDir()
	// As the hints write it: /etc/kubernetes/tmp/NAME-*.
	named := func(dir string) string {
		t.Helper()
		rel, err := filepath.Rel(k8sDir, dir)
		if err != nil || !strings.HasPrefix(rel, kubeadmconstants.TempDir+string(filepath.Separator)) {
			t.Fatalf("kubeadm's backup %s is not under %s/%s", dir, k8sDir, kubeadmconstants.TempDir)
		}
		stamp := regexp.MustCompile(`-[0-9]{4}(-[0-9]{2}){5}$`)
		if !stamp.MatchString(rel) {
			t.Fatalf("kubeadm's backup %s has no timestamp", dir)
		}
		return filepath.ToSlash(filepath.Join(kubeadmconstants.KubernetesDir, stamp.ReplaceAllString(rel, "-*")))
	}
	pm, err := kubeadmupgrade.NewKubeStaticPodPathManagerUsingTempDirs(k8sDir, "", true, true)
	if err != nil {
		t.Fatal(err)
	}
	manifests, etcd := named(pm.BackupManifestDir()), named(pm.BackupEtcdDir())
	for _, want := range []string{manifests, path.Base(etcd)} {
		if !strings.Contains(hintKubeadmControlPlane, want) {
			t.Errorf("the control-plane hint does not name kubeadm's backup %s: %s", want, hintKubeadmControlPlane)
		}
	}
	if err := os.RemoveAll(filepath.Join(k8sDir, kubeadmconstants.TempDir)); err != nil {
		t.Fatal(err)
	}
	if err := kubeadmupgrade.WriteKubeletConfigFiles(&kubeadmapi.InitConfiguration{}, t.TempDir(), k8sDir, "", false, io.Discard); err == nil {
		t.Fatal("kubeadm wrote the kubelet configuration without a config.yaml to back up")
	}
	backups, err := filepath.Glob(filepath.Join(k8sDir, kubeadmconstants.TempDir, "*"))
	if err != nil || len(backups) != 1 {
		t.Fatalf("kubeadm's kubelet configuration backups: %v, %v; want one", backups, err)
	}
	if want := named(backups[0]); !strings.Contains(hintKubeadmKubeletConfig, want) {
		t.Errorf("the kubelet-config hint does not name kubeadm's backup %s: %s", want, hintKubeadmKubeletConfig)
	}
}
