package day2

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmapiv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmcmd "k8s.io/kubernetes/cmd/kubeadm/app/cmd"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/certs/renewal"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"

	"github.com/machineadm/machineadm/pkg/kubeadm/internal/stdio"
)

// DefaultRenewBefore is the renewal window when the spec sets none
// (spec.controlPlane.pki.renewBefore): a certificate that expires within
// 30 days is renewed. kubeadm's own
// upgrade renews every certificate it manages whenever the Kubernetes
// version changes (its certificateRenewal default), which the
// kubeadm-upgrade phase keeps.
const DefaultRenewBefore = 30 * 24 * time.Hour

// Renewed is one certificate RenewExpiring renewed, or found expiring
// and could not renew (External).
type Renewed struct {
	// Name is kubeadm's name of the certificate ("apiserver",
	// "admin.conf").
	Name string
	// Before and After are its expiry dates (After zero when External).
	Before, After time.Time
	// External says it expires within the window but was not renewed:
	// its CA has no key here (an external CA, kubeadm's renewal manager
	// renews nothing it signed).
	External bool
}

// RenewExpiring renews, with kubeadm's renewal manager and the local CA,
// every certificate of cfg's cluster (its certificates directory, and the
// kubeconfig files in kubernetesDir) that expires within window of now.
// A certificate whose CA has no key here (an external CA) is left alone
// and returned with External set.
func RenewExpiring(cfg *kubeadmapi.ClusterConfiguration, kubernetesDir string, window time.Duration, now time.Time) ([]Renewed, error) {
	rm, err := renewal.NewManager(cfg, kubernetesDir)
	if err != nil {
		return nil, err
	}
	var out []Renewed
	for _, h := range rm.Certificates() {
		ok, err := rm.CertificateExists(h.Name)
		if err != nil {
			return out, fmt.Errorf("certificate %s: %w", h.Name, err)
		}
		if !ok {
			continue
		}
		info, err := rm.GetCertificateExpirationInfo(h.Name)
		if err != nil {
			return out, fmt.Errorf("certificate %s: %w", h.Name, err)
		}
		if info.ExpirationDate.Sub(now) > window {
			continue
		}
		done, err := rm.RenewUsingLocalCA(h.Name)
		if err != nil {
			return out, fmt.Errorf("renewing %s: %w", h.Name, err)
		}
		if !done {
			out = append(out, Renewed{Name: h.Name, Before: info.ExpirationDate, External: true})
			continue
		}
		after, err := rm.GetCertificateExpirationInfo(h.Name)
		if err != nil {
			return out, fmt.Errorf("certificate %s: %w", h.Name, err)
		}
		out = append(out, Renewed{Name: h.Name, Before: info.ExpirationDate, After: after.ExpirationDate})
	}
	return out, nil
}

// CheckExpiration runs kubeadm's own `certs check-expiration` in-process
// with args (--cert-dir, --config, --kubeconfig, -o) and writes its
// table to out.
// Everything kubeadm prints (its table, and its notes on standard output
// or through klog) goes to out, line by line.
func CheckExpiration(out io.Writer, args []string) error {
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	return stdio.Capture(func(line string) { fmt.Fprintln(out, line) }, func(o, e io.Writer) error {
		root := kubeadmcmd.NewKubeadmCommand(nil, o, e)
		root.SetArgs(append([]string{"certs", "check-expiration"}, args...))
		root.SilenceErrors, root.SilenceUsage = true, true
		return root.Execute()
	})
}

// ConfigAPIVersion is the kubeadm configuration version ("group/version")
// the embedded kubeadm reads as a --config file without experimental
// APIs allowed: its default external version (kubeadm.k8s.io/v1beta4 in
// kubeadm v1.37). Older versions are refused by kubeadm's loader with a
// pointer to the kubeadm release that migrates them; kubeadm.k8s.io/v1
// is experimental.
func ConfigAPIVersion() string {
	return kubeadmapiv1.SchemeGroupVersion.String()
}

// ConfigDocuments is the group, version and kind of each document of a
// kubeadm configuration file's data, split as kubeadm's loader splits it
// (its SplitConfigDocuments), sorted: the error is the loader's for YAML
// it cannot read, a document without a kind or a group-qualified
// apiVersion (a comment alone between separators too) and a kind given
// twice; and a kubeadm document that reads as JSON but holds more than
// one value (objects one after the other without "---"), which the
// splitter takes for its first object and kubeadm's decoder refuses. An
// error of the YAML layer that would quote the file (a map key or a
// tagged value it cannot take) leaves its message out: the file may hold
// credentials.
func ConfigDocuments(data []byte) ([]schema.GroupVersionKind, error) {
	m, err := kubeadmutil.SplitConfigDocuments(data)
	if err != nil && yamlQuotes(err.Error()) {
		return nil, quotingYAMLError("a kubeadm configuration")
	}
	if err != nil {
		return nil, err
	}
	gvks := make([]schema.GroupVersionKind, 0, len(m))
	for gvk, doc := range m {
		if gvk.Group == kubeadmapi.GroupName && utilyaml.IsJSONBuffer(doc) && !json.Valid(doc) {
			return nil, fmt.Errorf("its %s document is not one JSON object (JSON documents are separated by a line ---)", gvk.Kind)
		}
		gvks = append(gvks, gvk)
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	return gvks, nil
}
