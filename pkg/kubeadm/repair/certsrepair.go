package repair

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
)

// certPair is one key kubeadm writes and the file it writes after it.
type certPair struct {
	// key and after are relative to the certificate directory: "apiserver.key"
	// and "apiserver.crt", "sa.key" and "sa.pub".
	key, after string
	// shared marks a key of the cluster's shared set (CASet: a CA, the
	// service-account key pair): one that every control plane must hold
	// alike.
	shared bool
}

// certsPhasePairs are the key files kubeadm's certificate phase phase
// writes (init's "certs/<name>" and "certs/sa", join's
// "control-plane-prepare/certs"), from kubeadm's own certificate list
// (phases/certs GetDefaultCertList); nil for any other phase.
func certsPhasePairs(phase string) []certPair {
	var out []certPair
	for _, c := range certsphase.GetDefaultCertList() {
		p := certPair{key: c.BaseName + ".key", after: c.BaseName + ".crt", shared: c.CAName == ""}
		switch {
		case phase == "certs/"+c.Name:
			return []certPair{p}
		case phase == "control-plane-prepare/certs" && !p.shared:
			// A joining control plane downloads or imports the shared set;
			// this phase creates the node's own certificates.
			out = append(out, p)
		}
	}
	if phase == "certs/sa" {
		return []certPair{{key: kubeadmconstants.ServiceAccountPrivateKeyName, after: kubeadmconstants.ServiceAccountPublicKeyName, shared: true}}
	}
	return out
}

// RepairInterruptedCerts removes what an interrupted run of kubeadm's
// certificate phase named phase left in certsDir (a host path), so that
// kubeadm, running the phase again, writes it afresh: a private key whose
// certificate — for the service-account key pair, whose public key — is
// missing or empty.
//
// kubeadm v1.37 writes a key before its certificate with two plain writes
// (pkiutil.WriteCertAndKey: WriteKey, then WriteCert; certs.go's
// CreateServiceAccountKeyAndPublicKeyFiles: the key, then the public
// key). A process killed in between leaves the key alone (or an empty
// file where the next one was being written), and kubeadm's rerun fails
// on it: writeCertificateFilesIfNotExist sees a key, tries to load the
// certificate, and stops with "failure loading X certificate"; for sa it
// keeps the key and never writes the public key the API server needs.
//
// Only the files of phase are considered (certsPhasePairs; nil for any
// other phase). A key of the shared set (a CA key, sa.key) is removed only
// when removeShared(key) says so — the caller allows it when the phase is
// where the interrupted run of this spec stopped and the key was not
// delivered with the CA set — and a key whose certificate exists with
// content is never touched. Returns the removed files, relative to
// certsDir; an error names the file it could not remove.
func RepairInterruptedCerts(certsDir, phase string, removeShared func(key string) bool) ([]string, error) {
	var removed []string
	for _, p := range certsPhasePairs(phase) {
		key, after := filepath.Join(certsDir, p.key), filepath.Join(certsDir, p.after)
		if !regular(key) {
			continue
		}
		fi, err := os.Lstat(after)
		switch {
		case err == nil && (!fi.Mode().IsRegular() || fi.Size() > 0):
			continue // complete (or not kubeadm's to judge)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return removed, err
		}
		if p.shared && (removeShared == nil || !removeShared(p.key)) {
			continue
		}
		if err == nil { // an empty file where the certificate was being written
			if err := os.Remove(after); err != nil {
				return removed, err
			}
			removed = append(removed, p.after)
		}
		if err := os.Remove(key); err != nil {
			return removed, err
		}
		removed = append(removed, p.key)
	}
	return removed, nil
}

func regular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}
