package phases

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// AnnotationAPIServerConfigDigest is the annotation of the API server's
// regenerated static pod that carries apiServerConfigDigest: the API
// server reads its audit policy and its encryption, authentication and
// authorization configurations when it starts, so a new content of one
// of them (the apiserver-config step rewrote it) must change the manifest
// for the kubelet to restart the API server.
const AnnotationAPIServerConfigDigest = "machineadm.io/apiserver-config-digest"

// apiServerConfigDigest returns "sha256:<hex>" over the path and content
// of every file the typed security settings of cfg have the API server
// read (apiserverconfig.Paths: named by a flag or inside another file,
// each read at hostPath of it: the host's path under the run's root), or ""
// when cfg has none; "hmac-sha256:<hex>", keyed with key, when key is
// set (digestKey: the node's record key), so that the annotation, which
// whoever reads kube-system's pods sees, cannot be used to try guesses
// of a low-entropy secret in a file (a webhook kubeconfig's password).
func apiServerConfigDigest(hostPath func(string) string, cfg *machineadm.MachineBootstrapConfig, key []byte) (string, error) {
	cp := cfg.Spec.ControlPlane
	if cp == nil || !apiserverconfig.Any(&cp.APIServer) {
		return "", nil
	}
	// Every file the apiserver-config step writes, also those named only
	// inside another file (an authorization webhook's kubeconfig).
	files := slices.Clone(apiserverconfig.Paths(&cp.APIServer))
	slices.Sort(files)
	files = slices.Compact(files)
	h, prefix := hash.Hash(sha256.New()), "sha256:"
	if len(key) > 0 {
		h, prefix = hmac.New(sha256.New, key), "hmac-sha256:"
	}
	for _, f := range files {
		data, err := os.ReadFile(hostPath(f))
		if err != nil {
			return "", errclass.New(errclass.HostPreparationFailed, "the apiserver-config step writes it: run machineadm upgrade again", fmt.Errorf("reading the API server's %s: %w", f, err))
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return prefix + hex.EncodeToString(h.Sum(nil)), nil
}

// componentAnnotations are the annotations the static pod upgrader sets
// on component's regenerated manifest: the API server's configuration
// digest (AnnotationAPIServerConfigDigest); for the controller manager
// and the scheduler, where their running manifest carries one
// (certs-renew annotated it), the digest of the client certificates they
// will read at their start (day2.AnnotationCertificatesDigest): a
// manifest regenerated with the same settings is then equal to the
// running one, not unequal for the annotation alone, and certs-renew
// finds the certificates it starts on. A manifest without it (kubeadm's,
// as its upgrade just wrote it) is regenerated without it too, so that
// the control-plane phase after kubeadm's does not restart the
// component again. None for etcd.
func componentAnnotations(d *Data, component string) (map[string]string, error) {
	if day2.RestartsForCertificates(component) {
		pod, err := day2.ReadManifest(filepath.Join(hostPathOrRoot(d, kubernetesDir), "manifests", day2.ManifestName(component)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("reading the %s manifest: %w", component, err))
		}
		if _, ok := pod.Annotations[day2.AnnotationCertificatesDigest]; !ok {
			return nil, nil
		}
		digest, err := day2.CertificatesDigest(hostPathOrRoot(d, kubernetesDir), component)
		if err != nil {
			return nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("the certificates of %s: %w", component, err))
		}
		if digest == "" {
			return nil, nil
		}
		return map[string]string{day2.AnnotationCertificatesDigest: digest}, nil
	}
	if component != upgrade.ComponentAPIServer {
		return nil, nil
	}
	digest, err := apiServerConfigDigest(func(p string) string { return hostPathOrRoot(d, p) }, d.Config, digestKey(d))
	if err != nil || digest == "" {
		return nil, err
	}
	return map[string]string{AnnotationAPIServerConfigDigest: digest}, nil
}

// apiServerConfigBackup is the directory, under a run's backup directory,
// that keeps the API server's security files as they were before
// apiserver-config rewrote them.
const apiServerConfigBackup = "apiserver-config"

// backupAPIServerConfig copies every regular file of the host's
// APIServerConfigDir (dir) into backup (created 0700; each copy keeps its
// file's mode and owner: keys stay 0600) unless backup exists already
// (the run backed them up before); nothing when dir does not exist. The
// copies hold secrets as the originals do, in the root-only backup
// directory kubeadm's manifest backups use.
func backupAPIServerConfig(dir, backup string) error {
	if _, err := os.Lstat(backup); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	tmp := backup + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyKeepingOwner(filepath.Join(dir, e.Name()), filepath.Join(tmp, e.Name())); err != nil {
			return err
		}
	}
	return os.Rename(tmp, backup)
}

// restoreAPIServerConfig puts every file of backup back into dir (mode
// and owner as backed up); nothing when there is no backup. A file the
// run added is left: the previous flags do not name it.
func restoreAPIServerConfig(dir, backup string) error {
	entries, err := os.ReadDir(backup)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := copyKeepingOwner(filepath.Join(backup, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyKeepingOwner writes src's content to dst atomically with src's mode
// and, when it can be read, owner.
func copyKeepingOwner(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
		return err
	}
	return keepOwner(fi, dst)
}

// withAPIServerConfigBackup wraps the upgrade's apiserver-config phase:
// before it rewrites the files (not in a dry run), they are backed up in
// the run's backup directory, so that a kube-apiserver that does not
// become healthy is rolled back to its previous manifest and the files
// that manifest was made for (staticPodUpgrader); a backup of files it
// left as they were is removed. It notes a rewrite for
// apiServerFilesChanged.
func withAPIServerConfigBackup(p Phase) Phase {
	run := p.Run
	p.Run = func(ctx context.Context, d *Data) (Result, error) {
		u := d.Upgrade
		if d.DryRun || u == nil || d.Config.Spec.ControlPlane == nil || !apiserverconfig.Any(&d.Config.Spec.ControlPlane.APIServer) {
			return run(ctx, d)
		}
		if u.backupDir == "" {
			u.backupDir = day2.BackupDir(hostPathOrRoot(d, kubernetesDir), time.Now())
		}
		backup := filepath.Join(u.backupDir, apiServerConfigBackup)
		_, err := os.Lstat(backup)
		fresh := errors.Is(err, fs.ErrNotExist)
		if err := backupAPIServerConfig(hostPathOrRoot(d, machineadm.APIServerConfigDir), backup); err != nil {
			return Result{}, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("backing up the API server's security files: %w", err))
		}
		res, err := run(ctx, d)
		if res.Changed {
			u.apiServerConfigChanged = true
		} else if fresh && err == nil {
			// Nothing rewritten: no copy of the keys is kept.
			os.RemoveAll(backup)
		}
		return res, err
	}
	return p
}

// apiServerConfigRollback is the Rollback of component's static pod
// swap: for the API server, restoring the files backed up by this run.
func apiServerConfigRollback(d *Data, component string) func() error {
	if component != upgrade.ComponentAPIServer || d.Upgrade == nil || d.Upgrade.backupDir == "" {
		return nil
	}
	backup := filepath.Join(d.Upgrade.backupDir, apiServerConfigBackup)
	return func() error {
		return restoreAPIServerConfig(hostPathOrRoot(d, machineadm.APIServerConfigDir), backup)
	}
}

// apiServerFilesChanged says whether component is the static-pod API
// server and the files it reads at start differ from those it was
// started on, with a plan that does not replace it (a secret file's new
// content, with the same spec): its manifest's
// AnnotationAPIServerConfigDigest differs from the files' digest, or,
// without that annotation (a manifest bootstrap wrote), apiserver-config
// rewrote a file in this run. False in a dry run.
func apiServerFilesChanged(d *Data, component string) (bool, error) {
	cp := d.Config.Spec.ControlPlane
	if d.DryRun || d.Upgrade == nil || component != upgrade.ComponentAPIServer || cp == nil ||
		(cp.Runtime != "" && cp.Runtime != machineadm.RuntimeStaticPods) || !apiserverconfig.Any(&cp.APIServer) {
		return false, nil
	}
	pod, err := day2.ReadManifest(filepath.Join(hostPathOrRoot(d, kubernetesDir), "manifests", "kube-apiserver.yaml"))
	if err != nil {
		return false, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("reading the API server's manifest: %w", err))
	}
	running := pod.Annotations[AnnotationAPIServerConfigDigest]
	if running == "" {
		return d.Upgrade.apiServerConfigChanged, nil
	}
	digest, err := apiServerConfigDigest(func(p string) string { return hostPathOrRoot(d, p) }, d.Config, digestKey(d))
	if err != nil {
		return false, err
	}
	return digest != running, nil
}

// digestKey is the key of the configuration digest: the node's record
// key (upgrade.Record.Key, secret, kept by every later record, so the
// digest of the same files stays the same); nil without a record.
func digestKey(d *Data) []byte {
	if d.Upgrade == nil || d.Upgrade.Record == nil {
		return nil
	}
	k, err := hex.DecodeString(d.Upgrade.Record.Key)
	if err != nil {
		return nil
	}
	return k
}
