package day2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/uploadconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	staticpodutil "k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/stdio"
)

// StaticPodOptions are one static pod component's upgrade
// (UpgradeStaticPodComponent).
type StaticPodOptions struct {
	// Component is "etcd", "kube-apiserver", "kube-controller-manager" or
	// "kube-scheduler".
	Component string
	// SpecInitYAML is the spec translated as an Init (InitConfiguration
	// and ClusterConfiguration): the settings to apply (Overlay).
	SpecInitYAML []byte
	// AdminKubeconfig is the admin credential (host path).
	AdminKubeconfig string
	// KubernetesDir is /etc/kubernetes (host path): the manifests are in
	// its manifests directory, backups go under its tmp directory.
	KubernetesDir string
	// BackupDir receives the current manifests (BackupDir's).
	BackupDir string
	// PatchesDir is kubeadm's patches directory, "" none.
	PatchesDir string
	// Upload, on the first control plane, stores the resulting cluster
	// configuration in the kubeadm-config ConfigMap (kubeadm's
	// uploadconfig), so that later upgrades and joins keep the settings.
	Upload bool
	// Annotations are set on the regenerated pod (nil: none): a digest of
	// files the component reads only when it starts, so that a new file
	// content alone changes the manifest and restarts the component.
	// Annotation values are visible to whoever can read the mirror pod:
	// never a secret, only a digest of one.
	Annotations map[string]string
	// Rollback, when set, runs when the component does not become
	// healthy, before its previous manifest is put back (Swap.Rollback).
	Rollback func() error
	// OnlyStale makes RestartForCertificates leave alone a manifest
	// without AnnotationCertificatesDigest (as kubeadm writes it), which
	// it otherwise restarts once: it restarts only one whose digest is
	// not that of the certificates on disk (renewed since it started).
	OnlyStale bool
	// Timeout bounds the wait for the component (default 5 minutes, as
	// kubeadm's upgrade timeout).
	Timeout time.Duration
	// Output receives kubeadm's waiter lines.
	Output io.Writer
}

// UpgradeStaticPodComponent applies the spec's settings to one component
// of a static pod control plane: the cluster's configuration (the
// kubeadm-config ConfigMap, as `kubeadm upgrade node` reads it) with the
// spec's in-place settings (Overlay) regenerates the component's
// manifest with kubeadm's code (Regenerate) into a temporary directory; a
// manifest equal to the running one is left alone; otherwise Swap backs
// it up, replaces it and waits as kubeadm's upgrade waits (the mirror
// pod's hash changes, the component's pod runs), rolling back when it
// does not. With Upload the configuration is then stored
// (storeConfiguration), and the lines say "kubeadm-config ConfigMap
// updated" when that changed the ConfigMap, also beside a store's error.
// The caller holds machineadm's run lock: the manifest directories a
// killed run left in o.KubernetesDir/tmp are removed (manifestTempDir).
func UpgradeStaticPodComponent(ctx context.Context, o StaticPodOptions) (bool, []string, error) {
	client, err := Client(o.AdminKubeconfig)
	if err != nil {
		return false, nil, errclass.New(errclass.ControlPlaneUnhealthy, "the control plane's admin credential "+o.AdminKubeconfig+" must be readable", err)
	}
	cluster, err := fetchCluster(client, o.Output, true)
	if err != nil {
		return false, nil, err
	}
	spec, err := SpecClusterConfiguration(o.SpecInitYAML)
	if err != nil {
		return false, nil, errclass.New(errclass.Internal, "", fmt.Errorf("the spec's kubeadm configuration: %w", err))
	}
	cfg := Overlay(cluster, spec)
	var warn []string
	if !o.Upload && o.Component == kubeadmconstants.KubeAPIServer {
		if names := APIServerSettingsDiffer(cluster, spec); len(names) > 0 {
			warn = append(warn, WarningPrefix+"this control plane's API server settings differ from the cluster's (the kubeadm-config ConfigMap, which the first control plane writes) in "+
				strings.Join(names, ", ")+": every control plane's spec must carry the same settings, or the next version upgrade regenerates this API server without its own (docs/upgrade.md)")
		}
	}
	tmp, err := manifestTempDir(o.KubernetesDir)
	if err != nil {
		return false, nil, err
	}
	defer os.RemoveAll(tmp)
	newPath, err := Regenerate(tmp, o.PatchesDir, cfg, o.Component)
	if err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("kubeadm could not write the %s manifest: %w", o.Component, err))
	}
	if err := Annotate(newPath, o.Annotations); err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("annotating the %s manifest: %w", o.Component, err))
	}
	changed, lines, err := swapStaticPod(o, client, cfg.NodeRegistration.Name, newPath, "")
	lines = append(warn, lines...)
	if err != nil || !o.Upload {
		return changed, lines, err
	}
	stored, err := storeConfiguration(cfg, client, o.Output)
	if stored {
		lines = append(lines, "kubeadm-config ConfigMap updated")
	}
	return changed, lines, err
}

// manifestTempPrefix starts the name of manifestTempDir's directories.
const manifestTempPrefix = "machineadm-upgraded-manifests"

// manifestTempDir makes a new directory for a manifest being prepared
// under kubernetesDir's tmp directory (made 0700 when missing), beside
// kubeadm's own; the caller removes it. The directories a run killed
// while it prepared a manifest left behind are removed first
// (removeManifestTempDirs): the caller holds the run lock, so none of
// them is in use.
func manifestTempDir(kubernetesDir string) (string, error) {
	parent := filepath.Join(kubernetesDir, "tmp")
	removeManifestTempDirs(parent)
	tmp, err := os.MkdirTemp(parent, manifestTempPrefix)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(parent, 0o700); err == nil {
			tmp, err = os.MkdirTemp(parent, manifestTempPrefix)
		}
	}
	if err != nil {
		return "", errclass.New(errclass.HostPreparationFailed, "", err)
	}
	return tmp, nil
}

// removeManifestTempDirs removes the directories in parent named as
// os.MkdirTemp names manifestTempDir's (manifestTempPrefix, then digits),
// read from parent itself: not matched by a pattern over parent's path,
// whose "[", "*", "?" or "\" would make it miss them and match other
// directories'. A symbolic link or file so named is left alone. Errors
// are ignored: a leftover that stays costs disk space only.
func removeManifestTempDirs(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		digits, ok := strings.CutPrefix(e.Name(), manifestTempPrefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" || !e.IsDir() {
			continue
		}
		_ = os.RemoveAll(filepath.Join(parent, e.Name()))
	}
}

// swapStaticPod puts the manifest at newPath in place of o.Component's on
// Node node (Swap: backed up, the mirror pod's hash waited on as kubeadm's
// upgrade waits, rolled back when it does not change or the pod does not
// run, within o.Timeout, default 5 minutes). source says in the report
// what the new manifest is ("" is "regenerated by kubeadm").
func swapStaticPod(o StaticPodOptions, client clientset.Interface, node, newPath, source string) (bool, []string, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	out := o.Output
	if out == nil {
		out = io.Discard
	}
	waiter := apiclient.NewKubeWaiter(client, timeout, out)
	var before string
	s := Swap{
		ManifestDir: filepath.Join(o.KubernetesDir, kubeadmconstants.ManifestsSubDirName),
		BackupDir:   o.BackupDir,
		Wait:        func() error { return StaticPodWait(waiter, node, o.Component, before)() },
		Rollback:    o.Rollback,
		Source:      source,
	}
	// The mirror pod's hash before the change, as kubeadm reads it.
	var err error
	if before, err = waiter.WaitForStaticPodSingleHash(node, o.Component); err != nil {
		return false, nil, errclass.New(errclass.ControlPlaneUnhealthy, "", fmt.Errorf("%s's mirror pod on Node %s: %w", o.Component, node, err))
	}
	return s.Component(o.Component, newPath)
}

// AnnotationCertificatesDigest is set on a control-plane static pod by
// RestartForCertificates: CertificatesDigest of the client certificates
// the component read when it started.
const AnnotationCertificatesDigest = "machineadm.io/certificates-digest"

// certificatesReadAtStart are, per component, the client certificates
// kubeadm gives it whose renewal restarts it. The controller manager and
// the scheduler read theirs, embedded in their kubeconfig files (in
// kubernetesDir; --kubeconfig, --authentication-kubeconfig and
// --authorization-kubeconfig all name the one file), only when they
// start. The API server (v1.37) is not restarted: it reloads its clients
// of the kubelets (client-go's rotation of certificate files), of its
// aggregated API servers (the aggregator's dynamic certificate content)
// and of etcd (at each new connection; a connection made with the old
// certificate lives on, TLS checking a certificate only at the
// handshake) itself, and its serving certificate when the file changes;
// a restart would take the API away for tens of seconds on a control
// plane of one. etcd reads its certificates again at each connection.
var certificatesReadAtStart = map[string][]string{
	kubeadmconstants.KubeControllerManager: {kubeadmconstants.ControllerManagerKubeConfigFileName},
	kubeadmconstants.KubeScheduler:         {kubeadmconstants.SchedulerKubeConfigFileName},
}

// RestartsForCertificates says whether RestartForCertificates may restart
// component: whether it reads client certificates only when it starts
// (the controller manager and the scheduler; not etcd nor the API
// server).
func RestartsForCertificates(component string) bool {
	_, ok := certificatesReadAtStart[component]
	return ok
}

// CertificatesDigest returns "sha256:<hex>" over the names and contents of
// the client certificates component reads only when it starts
// (certificatesReadAtStart): for each of its kubeconfig files under
// kubernetesDir, the client certificate of its current context (embedded, or the file it names, relative to the
// kubeconfig's directory as client-go resolves it). Only certificates
// enter it (the CERTIFICATE blocks of a PEM file), never a key. It is "" for a component with none (etcd, the API server) or
// when none of its files exists; a kubeconfig that does not load, or
// whose client certificate file cannot be read, is an error.
func CertificatesDigest(kubernetesDir, component string) (string, error) {
	kubeconfigs, ok := certificatesReadAtStart[component]
	if !ok {
		return "", nil
	}
	h := sha256.New()
	found := false
	add := func(name string, data []byte) {
		found = true
		data = certificateBlocks(data)
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
	}
	for _, name := range kubeconfigs {
		path := filepath.Join(kubernetesDir, name)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		kc, err := clientcmd.LoadFromFile(path)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", path, err)
		}
		// A file it names is relative to the kubeconfig's directory, as
		// client-go resolves it for the component.
		if err := clientcmd.ResolveLocalPaths(kc); err != nil {
			return "", fmt.Errorf("reading %s: %w", path, err)
		}
		var data []byte
		if c := kc.Contexts[kc.CurrentContext]; c != nil {
			if a := kc.AuthInfos[c.AuthInfo]; a != nil {
				data = a.ClientCertificateData
				if len(data) == 0 && a.ClientCertificate != "" {
					if data, err = os.ReadFile(a.ClientCertificate); err != nil {
						return "", fmt.Errorf("the client certificate of %s: %w", path, err)
					}
				}
			}
		}
		add(name, data)
	}
	if !found {
		return "", nil
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}

// certificateBlocks returns the CERTIFICATE blocks of PEM data, so that a
// key beside a certificate in one file (a combined PEM) never enters a
// digest; data without any PEM block is returned as it is, unless it
// has a PEM boundary line: then its blocks do not decode (a damaged
// key's among them, pem.Decode skipping it) and nothing is returned.
func certificateBlocks(data []byte) []byte {
	var out []byte
	pemFound := false
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		pemFound = true
		if b.Type == "CERTIFICATE" {
			out = append(out, pem.EncodeToMemory(b)...)
		}
	}
	if !pemFound && !bytes.Contains(data, []byte("-----BEGIN")) {
		return data
	}
	return out
}

// ErrStalenessUnknown is in the error of RestartForCertificates when it
// could not tell whether the component runs the certificates on disk (its
// manifest or its kubeconfig does not read): it changed nothing then.
var ErrStalenessUnknown = errors.New("could not tell whether the component runs the client certificates on disk")

// RestartForCertificates restarts the static pod of o.Component when the
// client certificates it read at its start were renewed since: its
// running manifest, with AnnotationCertificatesDigest set to the
// certificates' digest now (CertificatesDigest of o.KubernetesDir),
// replaces it (swapStaticPod: backed up, waited on,
// rolled back) unless it carries that digest already. A manifest without
// the annotation (as kubeadm writes it) is restarted once, unless
// o.OnlyStale (then it is left alone, before the certificates are read).
// node is the Node's name. Nothing changes for a component without such certificates
// (etcd, the API server) or a manifest that does not exist. Errors are classified as
// UpgradeStaticPodComponent's; one before anything changed because the
// manifest or the certificates do not read carries ErrStalenessUnknown.
// The caller holds machineadm's run lock, as for UpgradeStaticPodComponent.
func RestartForCertificates(o StaticPodOptions, node string) (bool, []string, error) {
	if !RestartsForCertificates(o.Component) {
		return false, nil, nil
	}
	cur := filepath.Join(o.KubernetesDir, kubeadmconstants.ManifestsSubDirName, ManifestName(o.Component))
	pod, err := staticpodutil.ReadStaticPodFromDisk(cur)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("%w: reading %s: %w", ErrStalenessUnknown, cur, err))
	}
	if _, ok := pod.Annotations[AnnotationCertificatesDigest]; !ok && o.OnlyStale {
		return false, nil, nil
	}
	digest, err := CertificatesDigest(o.KubernetesDir, o.Component)
	if err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("%w: the certificates of %s: %w", ErrStalenessUnknown, o.Component, err))
	}
	if digest == "" || pod.Annotations[AnnotationCertificatesDigest] == digest {
		return false, nil, nil
	}
	client, err := Client(o.AdminKubeconfig)
	if err != nil {
		return false, nil, errclass.New(errclass.ControlPlaneUnhealthy, "the control plane's admin credential "+o.AdminKubeconfig+" must be readable", err)
	}
	tmp, err := manifestTempDir(o.KubernetesDir)
	if err != nil {
		return false, nil, err
	}
	defer os.RemoveAll(tmp)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationCertificatesDigest] = digest
	if err := staticpodutil.WriteStaticPodToDisk(o.Component, tmp, *pod); err != nil {
		return false, nil, errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("writing the %s manifest: %w", o.Component, err))
	}
	return swapStaticPod(o, client, node, filepath.Join(tmp, ManifestName(o.Component)), "its renewed client certificates' digest annotated")
}

// UploadSettings stores the cluster's configuration with the spec's
// in-place settings laid over it (Overlay) in the kubeadm-config
// ConfigMap, with kubeadm's uploadconfig and the admin credential, when
// the ConfigMap does not carry them yet; it says whether it stored, also
// beside an error when kubeadm's uploadconfig stored the ConfigMap and then
// failed at the Role or RoleBinding (storeConfiguration). It
// reads only the cluster-wide configuration (no node registration, no API
// endpoint from a kube-apiserver mirror pod, which a Systemd control
// plane does not have) and changes nothing else in it: a KubernetesVersion
// kubeadm's upload-config stored stays. On the first control plane,
// before kubeadm's `upgrade apply` regenerates the static pods for a new
// version, it makes that one regeneration carry the new settings too, so
// that no component restarts twice; on a Systemd control plane, after
// each unit, it records the settings the units now run, so that a later
// upgrade, a joining control plane and APIServerSettingsDiffer read them.
// A credential that cannot be read is ControlPlaneUnhealthy with a hint
// naming it; a read or store the API server does not answer or refuses
// is ControlPlaneUnhealthy with kubeadmConfigHint; a spec whose kubeadm
// configuration does not decode is Internal.
func UploadSettings(adminKubeconfig string, specInitYAML []byte) (bool, error) {
	client, err := Client(adminKubeconfig)
	if err != nil {
		return false, errclass.New(errclass.ControlPlaneUnhealthy, "the control plane's admin credential "+adminKubeconfig+" must be readable", err)
	}
	cluster, err := fetchCluster(client, nil, false)
	if err != nil {
		return false, errclass.New(errclass.ControlPlaneUnhealthy, kubeadmConfigHint, err)
	}
	spec, err := SpecClusterConfiguration(specInitYAML)
	if err != nil {
		return false, errclass.New(errclass.Internal, "", fmt.Errorf("the spec's kubeadm configuration: %w", err))
	}
	cfg := Overlay(cluster, spec)
	if reflect.DeepEqual(cfg.ClusterConfiguration, cluster.ClusterConfiguration) {
		return false, nil
	}
	return storeConfiguration(cfg, client, nil)
}

// storeConfiguration stores cfg in the kubeadm-config ConfigMap
// (uploadConfiguration) and says whether that changed the ConfigMap's
// ClusterConfiguration, from kubeadm's own requests (kubeadmConfigWrites):
// a create of the ConfigMap that succeeded, or an update that succeeded
// and carried another ClusterConfiguration than the one it was made from
// (kubeadm gets the ConfigMap and updates what it got, so the API server
// takes the update only when the ConfigMap still is what kubeadm read).
// kubeadm's uploadconfig updates the ConfigMap before it creates or
// updates the Role and RoleBinding that let nodes read it, so a failure
// there has stored the configuration already: a stored configuration is
// reported beside the error and in it (storedButFailed). A ConfigMap that
// carried the configuration already is not reported as changed, nor one
// that another writer changed while this store was refused. An update
// whose answer was lost counts when a later read of kubeadm's finds what
// it wrote; a create whose answer was lost does not (kubeadm finds the
// ConfigMap after it whether it made it or not, and the callers read the
// ConfigMap before the store: it was there). It makes no request of its own, and like kubeadm's store it
// does not heed a context. Errors are ControlPlaneUnhealthy with
// kubeadmConfigHint.
func storeConfiguration(cfg *kubeadmapi.InitConfiguration, client clientset.Interface, out io.Writer) (bool, error) {
	w := &kubeadmConfigWrites{}
	err := uploadConfiguration(cfg, watchedClient{Interface: client, w: w}, out)
	changed := w.changed()
	if err != nil {
		if changed {
			err = fmt.Errorf("%s, but: %w", storedButFailed, err)
		}
		return changed, errclass.New(errclass.ControlPlaneUnhealthy, kubeadmConfigHint, fmt.Errorf("storing the cluster configuration in kubeadm-config: %w", err))
	}
	return changed, nil
}

// storedButFailed starts the cause of a store's error when the ConfigMap
// was updated nonetheless (storeConfiguration): the outcome report
// records the error, not the report lines beside it.
const storedButFailed = "the kubeadm-config ConfigMap was updated"

// kubeadmConfigWrites follows kubeadm's requests for the kubeadm-config
// ConfigMap during one store (storeConfiguration) and says whether they
// changed its ClusterConfiguration.
type kubeadmConfigWrites struct {
	mu sync.Mutex
	// got is the ClusterConfiguration of the last read, which kubeadm's
	// next update is made from.
	got string
	// lost is what an update that failed would have changed the
	// ClusterConfiguration to (lostSet): it may have been applied and its
	// answer lost; a later read that finds it says it was.
	lost    string
	lostSet bool
	changes bool
}

func (w *kubeadmConfigWrites) changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes
}

func (w *kubeadmConfigWrites) read(cm *corev1.ConfigMap) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey]
	if w.lostSet && w.got == w.lost {
		w.changes = true
	}
	w.lostSet = false
}

// wrote records a create (from nothing) or an update (from what was read)
// that sent cm and ended with err. A create that failed never counts, also
// without a 4xx answer: kubeadm's next create and read find the ConfigMap
// whether the lost create made it or it was there already, carrying what
// the create sent (a store after another, or a rerun; storeConfiguration's
// callers read the ConfigMap just before, fetchCluster, so it was there).
func (w *kubeadmConfigWrites) wrote(cm *corev1.ConfigMap, create bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sent := cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey]
	if !create && sent == w.got {
		return
	}
	if err == nil {
		w.changes = true
		return
	}
	if create || refused(err) {
		return
	}
	w.lost, w.lostSet = sent, true
}

// refused says whether err is the API server's answer that it did not
// take a request (a 4xx status); any other error (no answer, a 5xx one
// such as a timeout) leaves open whether it took it.
func refused(err error) bool {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return false
	}
	code := s.Status().Code
	return code >= 400 && code < 500
}

// watchedClient is client with its kube-system ConfigMaps followed by w.
type watchedClient struct {
	clientset.Interface
	w *kubeadmConfigWrites
}

func (c watchedClient) CoreV1() corev1client.CoreV1Interface {
	return watchedCoreV1{CoreV1Interface: c.Interface.CoreV1(), w: c.w}
}

type watchedCoreV1 struct {
	corev1client.CoreV1Interface
	w *kubeadmConfigWrites
}

func (c watchedCoreV1) ConfigMaps(namespace string) corev1client.ConfigMapInterface {
	cms := c.CoreV1Interface.ConfigMaps(namespace)
	if namespace != metav1.NamespaceSystem {
		return cms
	}
	return watchedConfigMaps{ConfigMapInterface: cms, w: c.w}
}

type watchedConfigMaps struct {
	corev1client.ConfigMapInterface
	w *kubeadmConfigWrites
}

func (c watchedConfigMaps) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	cm, err := c.ConfigMapInterface.Get(ctx, name, opts)
	if err == nil && name == kubeadmconstants.KubeadmConfigConfigMap {
		c.w.read(cm)
	}
	return cm, err
}

func (c watchedConfigMaps) Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error) {
	res, err := c.ConfigMapInterface.Create(ctx, cm, opts)
	if cm.Name == kubeadmconstants.KubeadmConfigConfigMap {
		c.w.wrote(cm, true, err)
	}
	return res, err
}

func (c watchedConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	res, err := c.ConfigMapInterface.Update(ctx, cm, opts)
	if cm.Name == kubeadmconstants.KubeadmConfigConfigMap {
		c.w.wrote(cm, false, err)
	}
	return res, err
}

// kubeadmConfigHint is the hint of a failed read or store of the
// kube-system/kubeadm-config ConfigMap (UploadSettings, and
// UpgradeStaticPodComponent's store after a component). kubeadm's
// uploadconfig creates the ConfigMap before it gets and updates it, then
// creates or updates the Role and RoleBinding that let nodes read it: a
// credential without those rights fails there
// (TestUploadSettingsNeedsTheRightsItsHintNames). A rerun stores the
// settings where the ConfigMap does not carry them yet.
const kubeadmConfigHint = "machineadm could not read or update the cluster's kubeadm configuration: check that the API server answers and that /etc/kubernetes/admin.conf may create, get and update ConfigMaps, Roles and RoleBindings in kube-system (kubeadm's upload-config stores the kubeadm-config ConfigMap and the Role and RoleBinding that let nodes read it; `kubectl -n kube-system get configmap kubeadm-config`), then run machineadm upgrade again; it stores the spec's settings where the ConfigMap does not carry them yet."

// uploadConfiguration stores cfg in the kubeadm-config ConfigMap with
// kubeadm's uploadconfig, whose notes (it prints to the process's
// standard output) go to out (nil: discarded), as fetchCluster's do.
func uploadConfiguration(cfg *kubeadmapi.InitConfiguration, client clientset.Interface, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	return stdio.Capture(func(line string) { fmt.Fprintln(out, line) }, func(io.Writer, io.Writer) error {
		return uploadconfig.UploadConfiguration(cfg, client)
	})
}

// fetchCluster reads the cluster's kubeadm configuration as `kubeadm
// upgrade node` does (configutil.FetchInitConfigurationFromCluster),
// kubeadm's notes going to out (nil: discarded) instead of the process's
// standard output. With local it reads this node's registration and API
// endpoint too, as `kubeadm upgrade node` does (the endpoint from the
// kube-apiserver mirror pod's annotation, waited for); without, only the
// cluster-wide configuration.
func fetchCluster(client clientset.Interface, out io.Writer, local bool) (*kubeadmapi.InitConfiguration, error) {
	if out == nil {
		out = io.Discard
	}
	var cfg *kubeadmapi.InitConfiguration
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	err := stdio.Capture(func(line string) { fmt.Fprintln(out, line) }, func(io.Writer, io.Writer) error {
		var err error
		cfg, err = configutil.FetchInitConfigurationFromCluster(client, nil, "upgrade", local, local, false, false)
		return err
	})
	if err != nil {
		return nil, errclass.New(errclass.ControlPlaneUnhealthy, "", fmt.Errorf("reading the cluster's kubeadm configuration: %w", err))
	}
	return cfg, nil
}

// Annotate sets annotations on the static pod of the manifest at path
// (kubeadm's staticpod reader and writer); nothing for none.
func Annotate(path string, annotations map[string]string) error {
	if len(annotations) == 0 {
		return nil
	}
	pod, err := staticpodutil.ReadStaticPodFromDisk(path)
	if err != nil {
		return err
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		pod.Annotations[k] = v
	}
	dir, name := filepath.Split(path)
	return staticpodutil.WriteStaticPodToDisk(strings.TrimSuffix(name, ".yaml"), dir, *pod)
}

// WarningPrefix starts a line of UpgradeStaticPodComponent's report that
// is a warning for the operator (the run goes on).
const WarningPrefix = "warning: "
