package day2

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"time"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	etcdphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/etcd"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// SpecClusterConfiguration reads the InitConfiguration and
// ClusterConfiguration documents of initYAML (translate.Translate of the
// spec as an Init) with kubeadm's own loader, defaulted and validated.
func SpecClusterConfiguration(initYAML []byte) (*kubeadmapi.InitConfiguration, error) {
	return configutil.BytesToInitConfiguration(initYAML, true)
}

// Overlay returns the cluster's configuration (from the kubeadm-config
// ConfigMap, as `kubeadm upgrade node` fetches it) with the settings of
// the spec's configuration that machineadm changes in place: the image
// repository, the API server's, controller manager's, scheduler's and
// local etcd's extra arguments, the three components' extra volumes (the
// typed API-server security settings' flags and volumes are among them,
// as the spec's translation adds them), and the external etcd endpoints
// and files (pkg/upgrade's field table). The cluster's is not changed.
func Overlay(cluster, spec *kubeadmapi.InitConfiguration) *kubeadmapi.InitConfiguration {
	out := cluster.DeepCopy()
	c, s := &out.ClusterConfiguration, &spec.ClusterConfiguration
	c.ImageRepository = s.ImageRepository
	c.APIServer.ExtraArgs = s.APIServer.ExtraArgs
	c.ControllerManager.ExtraArgs = s.ControllerManager.ExtraArgs
	c.Scheduler.ExtraArgs = s.Scheduler.ExtraArgs
	c.APIServer.ExtraVolumes = s.APIServer.ExtraVolumes
	c.ControllerManager.ExtraVolumes = s.ControllerManager.ExtraVolumes
	c.Scheduler.ExtraVolumes = s.Scheduler.ExtraVolumes
	if c.Etcd.Local != nil && s.Etcd.Local != nil {
		c.Etcd.Local.ExtraArgs = s.Etcd.Local.ExtraArgs
	}
	if c.Etcd.External != nil && s.Etcd.External != nil {
		c.Etcd.External = s.Etcd.External.DeepCopy()
	}
	return out
}

// ManifestName is the static pod manifest file of a component
// ("kube-apiserver.yaml").
func ManifestName(component string) string { return component + ".yaml" }

// Regenerate writes component's static pod manifest for cfg into dir with
// kubeadm's own code (controlplane.CreateStaticPodFiles; for etcd
// etcd.CreateLocalEtcdStaticPodManifestFile), with the patches of
// patchesDir ("" none), and returns its path.
func Regenerate(dir, patchesDir string, cfg *kubeadmapi.InitConfiguration, component string) (string, error) {
	var err error
	if component == kubeadmconstants.Etcd {
		if cfg.Etcd.Local == nil {
			return "", fmt.Errorf("etcd is external: no local etcd manifest")
		}
		err = etcdphase.CreateLocalEtcdStaticPodManifestFile(dir, patchesDir, cfg.NodeRegistration.Name, &cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, false)
	} else {
		err = controlplane.CreateStaticPodFiles(dir, patchesDir, &cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, false, component)
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, ManifestName(component)), nil
}

// Swap replaces one component's manifest, the way kubeadm's upgrade
// replaces each component: the current manifest (manifestDir/NAME) is
// copied to backupDir first; the new one (newPath) goes into its place;
// then wait must see the component restarted and healthy. When it does
// not, the backup is put back and the error (class RolledBack) says so.
// An equal manifest (kubeadm's ManifestFilesAreEqual) is left as it is:
// changed false.
type Swap struct {
	// ManifestDir is the kubelet's static pod directory (host path).
	ManifestDir string
	// BackupDir receives the current manifest before it is replaced.
	BackupDir string
	// Wait waits until the component runs the new manifest and is healthy.
	Wait func() error
	// Rollback, when set, runs after Wait failed and before the previous
	// manifest is put back: it restores what the component read at its
	// last start (the API server's security files), so that the restarted
	// previous component finds the files its flags were made for. Its
	// error is reported with the rollback's.
	Rollback func() error
}

// Component replaces component's manifest with newPath.
func (s Swap) Component(component, newPath string) (changed bool, lines []string, err error) {
	cur := filepath.Join(s.ManifestDir, ManifestName(component))
	equal, _, err := staticpod.ManifestFilesAreEqual(cur, newPath)
	if err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "check the static pod manifest "+cur, err)
	}
	if equal {
		return false, nil, nil
	}
	old, err := os.ReadFile(cur)
	if err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", err)
	}
	backup := filepath.Join(s.BackupDir, ManifestName(component))
	if err := os.MkdirAll(s.BackupDir, 0o700); err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", err)
	}
	if err := atomicfile.WriteFile(backup, old, 0o600); err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", err)
	}
	lines = append(lines, "backed up "+cur+" to "+backup)
	data, err := os.ReadFile(newPath)
	if err != nil {
		return false, lines, errclass.New(errclass.HostPreparationFailed, "", err)
	}
	if err := atomicfile.WriteFile(cur, data, 0o600); err != nil {
		return false, lines, errclass.New(errclass.HostPreparationFailed, "", err)
	}
	lines = append(lines, "wrote "+cur+" (regenerated by kubeadm)")
	if err := s.Wait(); err != nil {
		if s.Rollback != nil {
			if rerr := s.Rollback(); rerr != nil {
				err = fmt.Errorf("%w; restoring its previous files: %v", err, rerr)
			} else {
				lines = append(lines, "restored "+component+"'s previous configuration files")
			}
		}
		if rerr := atomicfile.WriteFile(cur, old, 0o600); rerr != nil {
			return true, lines, errclass.New(errclass.ControlPlaneUnhealthy, "put the backup "+backup+" back by hand", fmt.Errorf("%s did not become healthy (%v) and its backup could not be put back: %w", component, err, rerr))
		}
		lines = append(lines, "rolled back "+cur+" from "+backup)
		return true, lines, errclass.New(errclass.RolledBack, "", fmt.Errorf("%s did not become healthy with its new manifest, rolled back to %s: %w", component, backup, err))
	}
	lines = append(lines, component+" restarted and healthy")
	return true, lines, nil
}

// StaticPodWait is Swap.Wait for a static pod component, as kubeadm's
// upgrade waits: the mirror pod's hash must change from before (kubeadm's
// WaitForStaticPodHashChange), then the pods labelled component=NAME be
// running (WaitForPodsWithLabel), each within the waiter's timeout.
func StaticPodWait(w apiclient.Waiter, node, component, before string) func() error {
	return func() error {
		if err := w.WaitForStaticPodHashChange(node, component, before); err != nil {
			return err
		}
		return w.WaitForPodsWithLabel("component=" + component)
	}
}

// BackupDir is a new backup directory for this run under kubernetesDir's
// tmp directory, as kubeadm keeps its own there:
// /etc/kubernetes/tmp/machineadm-backup-<UTC time>.
func BackupDir(kubernetesDir string, now time.Time) string {
	return filepath.Join(kubernetesDir, "tmp", "machineadm-backup-"+now.UTC().Format("20060102T150405Z"))
}

// APIServerSettingsDiffer returns the names (never the values) of the API
// server's extra arguments and extra volumes in which spec differs from
// cluster (the kubeadm-config ConfigMap, which the first control plane
// writes), sorted; nil when they agree. On any other control plane a
// difference means the control planes do not carry the same settings: the
// next version upgrade regenerates this one from the cluster's.
func APIServerSettingsDiffer(cluster, spec *kubeadmapi.InitConfiguration) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	args := func(l []kubeadmapi.Arg) map[string][]string {
		m := map[string][]string{}
		for _, a := range l {
			m[a.Name] = append(m[a.Name], a.Value)
		}
		return m
	}
	ca, sa := args(cluster.APIServer.ExtraArgs), args(spec.APIServer.ExtraArgs)
	for _, m := range []map[string][]string{ca, sa} {
		for n := range m {
			if !slices.Equal(ca[n], sa[n]) {
				add("--" + n)
			}
		}
	}
	vols := func(l []kubeadmapi.HostPathMount) map[string]kubeadmapi.HostPathMount {
		m := map[string]kubeadmapi.HostPathMount{}
		for _, v := range l {
			m[v.Name] = v
		}
		return m
	}
	cv, sv := vols(cluster.APIServer.ExtraVolumes), vols(spec.APIServer.ExtraVolumes)
	for _, m := range []map[string]kubeadmapi.HostPathMount{cv, sv} {
		for n := range m {
			if c, ok := cv[n]; !ok || !reflect.DeepEqual(c, sv[n]) {
				add("volume " + n)
			}
		}
	}
	sort.Strings(out)
	return out
}
