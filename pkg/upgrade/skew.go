package upgrade

import (
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// versionRefusal says why the move from version from to to is refused by
// the skew rules of the embedded kubeadm (kubeadm, its version): never
// down; one minor at a time; only to kubeadm's own minor, at most its own
// patch. "" when allowed.
func versionRefusal(from, to, kubeadm string) string {
	f, err1 := utilversion.ParseSemantic(from)
	t, err2 := utilversion.ParseSemantic(to)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("cannot compare the versions %q and %q", from, to)
	}
	if t.LessThan(f) {
		return fmt.Sprintf("%s is older than the node's %s: machineadm does not downgrade", to, from)
	}
	if t.Major() != f.Major() || t.Minor() > f.Minor()+1 {
		return fmt.Sprintf("kubeadm upgrades one minor version at a time: from %s go to v%d.%d.x first", from, f.Major(), f.Minor()+1)
	}
	if kubeadm == "" {
		return ""
	}
	k, err := utilversion.ParseSemantic(kubeadm)
	if err != nil {
		return fmt.Sprintf("the embedded kubeadm's version %q is not a version: build machineadm with `make build`", kubeadm)
	}
	if t.Major() != k.Major() || t.Minor() != k.Minor() {
		return fmt.Sprintf("the embedded kubeadm %s upgrades to v%d.%d.x only; use the machineadm built with kubeadm v%d.%d", kubeadm, k.Major(), k.Minor(), t.Major(), t.Minor())
	}
	if k.LessThan(t) {
		return fmt.Sprintf("%s is newer than the embedded kubeadm %s: use a machineadm built with it", to, kubeadm)
	}
	return ""
}
