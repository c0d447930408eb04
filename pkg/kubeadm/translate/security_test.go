package translate_test

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	controlplanephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	kubeadmconfig "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

// kubeadmPods translates cfg and builds kubeadm's own control-plane pod
// specs from the result, as kubeadm's control-plane phase does.
func kubeadmPods(t *testing.T, cfg *machineadm.MachineBootstrapConfig) map[string]v1.Pod {
	t.Helper()
	docs, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := kubeadmconfig.BytesToInitConfiguration(docs.YAML, true)
	if err != nil {
		t.Fatal(err)
	}
	return controlplanephase.GetStaticPodSpecs(&ic.ClusterConfiguration, &ic.LocalAPIEndpoint, nil)
}

// TestSecuredAPIServerPod: the typed security settings reach kubeadm's
// API server pod as flags and as hostPath volumes mounted at the same
// path (configuration and KMS socket directories read-only, the audit log
// directory read-write); every file a flag names is inside a mount.
func TestSecuredAPIServerPod(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-secured.yaml")
	pod := kubeadmPods(t, cfg)[kubeadmconstants.KubeAPIServer]
	ctr := pod.Spec.Containers[0]
	for _, want := range []string{
		"--audit-policy-file=/etc/kubernetes/apiserver/audit-policy.yaml",
		"--audit-log-path=/var/log/kubernetes/audit/audit.log",
		"--audit-log-maxage=30", "--audit-log-maxsize=100", "--audit-log-maxbackup=10",
		"--encryption-provider-config=/etc/kubernetes/apiserver/encryption-config.yaml",
		"--authentication-config=/etc/kubernetes/apiserver/authentication-config.yaml",
	} {
		if !slices.Contains(ctr.Command, want) {
			t.Errorf("API server command lacks %s:\n%s", want, strings.Join(ctr.Command, "\n"))
		}
	}
	mounts := map[string]v1.VolumeMount{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.Name] = m
	}
	for _, want := range []struct {
		name, path string
		readOnly   bool
	}{
		{apiserverconfig.VolumeConfig, machineadm.APIServerConfigDir, true},
		{apiserverconfig.VolumeAuditLog, "/var/log/kubernetes/audit", false},
		{apiserverconfig.VolumeKMSPrefix + "-0", "/var/run/kmsplugin", true},
	} {
		m, ok := mounts[want.name]
		if !ok || m.MountPath != want.path || m.ReadOnly != want.readOnly {
			t.Errorf("mount %s = %+v (present %v), want %s readOnly=%v", want.name, m, ok, want.path, want.readOnly)
		}
		var hp string
		for _, v := range pod.Spec.Volumes {
			if v.Name == want.name && v.HostPath != nil {
				hp = v.HostPath.Path
			}
		}
		if hp != want.path {
			t.Errorf("volume %s host path = %q, want %s", want.name, hp, want.path)
		}
	}
	var paths []string
	for _, m := range ctr.VolumeMounts {
		paths = append(paths, m.MountPath)
	}
	for _, a := range ctr.Command {
		_, v, ok := strings.Cut(a, "=")
		if ok && strings.HasPrefix(v, "/etc/kubernetes/apiserver/") || strings.HasPrefix(v, "/var/log/kubernetes/audit/") {
			if !slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(v, p+"/") }) {
				t.Errorf("%s names a file no mount contains", a)
			}
		}
	}
}

// TestSecuredSystemdHasNoVolumes: with runtime Systemd the flags are the
// same and no extraVolumes reach kubeadm (units read the host's files).
func TestSecuredSystemdHasNoVolumes(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-secured.yaml")
	cfg.Spec.ControlPlane.Runtime = machineadm.RuntimeSystemd
	machineadm.SetDefaults(cfg)
	pod := kubeadmPods(t, cfg)[kubeadmconstants.KubeAPIServer]
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "machineadm-") {
			t.Errorf("volume %s with runtime Systemd", v.Name)
		}
	}
	if !slices.Contains(pod.Spec.Containers[0].Command, "--encryption-provider-config=/etc/kubernetes/apiserver/encryption-config.yaml") {
		t.Errorf("flag missing with runtime Systemd")
	}
}

// TestKubeadmMountsAreKubeadms: validation's list of the host paths
// kubeadm mounts (validation.KubeadmMounts, which may not import kubeadm)
// holds every hostPath of kubeadm's own pods, and every one it lists is
// kubeadm's (the CA bundle directories only where they exist on this host).
func TestKubeadmMountsAreKubeadms(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-init.yaml")
	pods := kubeadmPods(t, cfg)
	conditional := []string{"/etc/pki/ca-trust", "/etc/pki/tls/certs", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates"}
	for _, comp := range []string{kubeadmconstants.KubeAPIServer, kubeadmconstants.KubeControllerManager, kubeadmconstants.KubeScheduler} {
		want := validation.KubeadmMounts(comp, cfg.Spec.ControlPlane)
		var got []string
		for _, v := range pods[comp].Spec.Volumes {
			if v.HostPath != nil {
				got = append(got, v.HostPath.Path)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("%s: kubeadm mounts %s, which validation.KubeadmMounts lacks", comp, g)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) && !slices.Contains(conditional, w) {
				t.Errorf("%s: validation.KubeadmMounts lists %s, which kubeadm does not mount", comp, w)
			}
		}
	}
}
