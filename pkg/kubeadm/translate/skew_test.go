package translate

import (
	"strings"
	"testing"

	componentversion "k8s.io/component-base/version"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestVersionSkew: with kubeadm v1.37 embedded, a worker joins at v1.34 to
// v1.37, a control plane inits or joins at v1.36 to v1.37; older and newer
// versions are refused with the range. The figures follow from kubeadm's
// own constants (MinimumKubeletVersion, MinimumControlPlaneVersion).
func TestVersionSkew(t *testing.T) {
	if componentversion.Get().Major == "" {
		t.Fatal("unstamped test binary: run make test (it sets k8s.io/component-base/version)")
	}
	if v := componentversion.Get().GitVersion; !strings.HasPrefix(v, "v1.37.") {
		t.Skipf("the table below is for kubeadm v1.37, not %s", v)
	}
	cp, _ := SupportedVersions(machineadm.RoleControlPlane)
	w, _ := SupportedVersions(machineadm.RoleWorker)
	if cp.Min != "v1.36.0" || w.Min != "v1.34.0" || cp.Below != "v1.38.0-0" || w.Below != cp.Below {
		t.Fatalf("ranges %+v %+v", cp, w)
	}
	for _, c := range []struct {
		role    machineadm.Role
		action  machineadm.Action
		version string
		want    string // empty: accepted
	}{
		{machineadm.RoleWorker, machineadm.ActionJoin, "v1.31.0", "at least v1.34.0"},
		{machineadm.RoleWorker, machineadm.ActionJoin, "v1.33.9", "at least v1.34.0"},
		{machineadm.RoleWorker, machineadm.ActionJoin, "v1.34.0", ""},
		{machineadm.RoleWorker, machineadm.ActionJoin, "v1.37.2", ""},
		{machineadm.RoleWorker, machineadm.ActionJoin, "v1.38.0", "newer than the embedded kubeadm"},
		{machineadm.RoleControlPlane, machineadm.ActionJoin, "v1.35.4", "at least v1.36.0"},
		{machineadm.RoleControlPlane, machineadm.ActionJoin, "v1.36.0", ""},
		{machineadm.RoleControlPlane, machineadm.ActionInit, "v1.34.0", "at least v1.36.0"},
		{machineadm.RoleControlPlane, machineadm.ActionInit, "v1.38.0-alpha.1", "newer"},
		{machineadm.RoleControlPlane, machineadm.ActionInit, "v1.37.9", ""},
	} {
		cfg := &machineadm.MachineBootstrapConfig{}
		cfg.Spec.Role, cfg.Spec.Action, cfg.Spec.Kubernetes.Version = c.role, c.action, c.version
		err := CheckVersionSkew(cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s %s: %v", c.role, c.action, c.version, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.version)):
			t.Errorf("%s %s %s: %v, want an error saying %q and quoting the version", c.role, c.action, c.version, err, c.want)
		}
	}
}
