package phases

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/machineadm/machineadm/pkg/host/staticpod"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// kubeletConfigFile is the kubelet's configuration kubeadm writes on every
// node (kubeadm's constants.KubeletRunDirectory + KubeletConfigurationFileName),
// a machine path.
const kubeletConfigFile = "/var/lib/kubelet/config.yaml"

// maxKubeconfigSize bounds reading kubelet.conf: a few certificates.
const maxKubeconfigSize = 1 << 20

// Unconfirmed is a finished journal the host does not bear out.
type Unconfirmed struct {
	// Missing says what the host lacks, one item each, by machine path
	// ("/etc/kubernetes/kubelet.conf: not a valid kubeconfig: ...").
	Missing []string
	// KubeadmDone says that kubeadm's part is on the host (the kubelet's
	// kubeconfig and its configuration): only the idempotent leaves
	// (Phase.reconverge) run again; otherwise the run starts from its
	// first phase.
	KubeadmDone bool
}

// confirmBootstrap is the bootstrap workflow's Confirm: a read-only look
// at the host before a journal's "finished" is believed. It checks that
// the kubelet's kubeconfig (kubeadm.KubeletKubeconfigPath) is a valid
// kubeconfig whose current context names a server and a client
// credential, a client certificate being this Node's
// ("system:node:" + NodeName, so that the kubelet.conf of the machine an
// image was cloned from does not pass for this one's), that the kubelet's configuration (kubeletConfigFile) is
// there, and that every file of spec.host.files and every manifest of
// spec.host.staticPods exists. It reads, never writes; nil when the host
// shows the finished run.
func confirmBootstrap(d *Data) *Unconfirmed {
	u := &Unconfirmed{KubeadmDone: true}
	kc := kubeadm.KubeletKubeconfigPath()
	if err := checkKubeconfig(d, kc); err != nil {
		u.Missing = append(u.Missing, kc+": "+err.Error())
		u.KubeadmDone = false
	}
	if err := present(d, kubeletConfigFile); err != nil {
		u.Missing = append(u.Missing, kubeletConfigFile+": "+err.Error())
		u.KubeadmDone = false
	}
	var want []string
	for _, f := range d.Config.Spec.Host.Files {
		want = append(want, f.Path)
	}
	dir := staticpod.Dir(&d.Config.Spec.Node.Kubelet)
	for _, p := range d.Config.Spec.Host.StaticPods {
		want = append(want, path.Join(dir, p.Name+".yaml"))
	}
	for _, p := range want {
		if err := present(d, p); err != nil {
			u.Missing = append(u.Missing, p+": "+err.Error())
		}
	}
	if len(u.Missing) == 0 {
		return nil
	}
	return u
}

// present says whether the machine path p is a regular file below the
// root.
func present(d *Data, p string) error {
	hp, err := d.host().Path(p)
	if err != nil {
		return err
	}
	fi, err := os.Stat(hp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("missing")
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	}
	return nil
}

// checkKubeconfig reads the kubeconfig at machine path p and checks that
// its current context names a cluster with a server and a user with a
// client certificate or a token, and that a client certificate file it
// names is there.
func checkKubeconfig(d *Data, p string) error {
	if err := present(d, p); err != nil {
		return err
	}
	hp, err := d.host().Path(p)
	if err != nil {
		return err
	}
	data, err := readlimit.File(hp, maxKubeconfigSize)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("not a valid kubeconfig: %w", err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return errors.New("not a valid kubeconfig: no current context")
	}
	cl, ok := cfg.Clusters[ctx.Cluster]
	if !ok || cl.Server == "" {
		return errors.New("not a valid kubeconfig: the current context names no server")
	}
	ai, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || len(ai.ClientCertificateData) == 0 && ai.ClientCertificate == "" && ai.Token == "" && ai.TokenFile == "" {
		return errors.New("not a valid kubeconfig: the current context has no client credential")
	}
	certPEM := ai.ClientCertificateData
	if len(certPEM) == 0 && ai.ClientCertificate != "" {
		// kubeadm's kubelet.conf names the kubelet's rotating client
		// certificate file.
		if err := present(d, ai.ClientCertificate); err != nil {
			return fmt.Errorf("its client certificate %s: %w", ai.ClientCertificate, err)
		}
		cp, err := d.host().Path(ai.ClientCertificate)
		if err != nil {
			return err
		}
		if certPEM, err = readlimit.File(cp, maxKubeconfigSize); err != nil {
			return fmt.Errorf("its client certificate %s: %w", ai.ClientCertificate, err)
		}
	}
	if len(certPEM) > 0 {
		if err := checkNodeCertificate(certPEM, NodeName(d.Config)); err != nil {
			return fmt.Errorf("its client certificate: %w", err)
		}
	}
	return nil
}

// checkNodeCertificate says whether the first certificate in the PEM data
// is the kubelet client certificate of the Node named node: subject
// common name "system:node:" + node, as the cluster signs it for that
// Node's kubelet. The key and the signature are not checked (the look is
// read-only and needs no cluster); it tells a kubelet.conf of this node
// from one of another machine, such as the one an image was cloned from.
func checkNodeCertificate(data []byte, node string) error {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return errors.New("no PEM certificate")
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fmt.Errorf("not a certificate: %w", err)
		}
		if want := "system:node:" + node; c.Subject.CommonName != want {
			return fmt.Errorf("issued to %q, not to this Node (%q)", c.Subject.CommonName, want)
		}
		return nil
	}
}

// unfinish makes s forget that its run finished, because the host does
// not show it (u): with kubeadm's part on the host, the leaves in rerun
// (the idempotent ones: inputs-check, the host group) are forgotten too
// and run again; without it every leaf is. The next record rewrites the
// journal.
func (s *state) unfinish(u *Unconfirmed, rerun []string) {
	s.FinishedAt = ""
	s.journal = false
	if !u.KubeadmDone {
		s.Completed = nil
		return
	}
	s.Completed = slices.DeleteFunc(s.Completed, func(n string) bool { return slices.Contains(rerun, n) })
}
