package repair

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// kubeconfigPhaseFiles are the kubeconfig files kubeadm's phase writes,
// relative to its kubeconfig directory (/etc/kubernetes): init's
// "kubeconfig/<name>" one each (phases/init kubeconfig.go,
// NewKubeConfigFilePhase), join's "control-plane-prepare/kubeconfig"
// admin.conf, controller-manager.conf and scheduler.conf
// (phases/kubeconfig CreateJoinControlPlaneKubeConfigFiles); nil for any
// other phase. A join's kubelet-start is not here: it writes
// bootstrap-kubelet.conf over whatever is there (kubeconfigutil.WriteToDisk,
// no check first), so what a kill leaves there never stops its rerun.
func kubeconfigPhaseFiles(phase string) []string {
	switch phase {
	case "kubeconfig/admin":
		return []string{kubeadmconstants.AdminKubeConfigFileName}
	case "kubeconfig/super-admin":
		return []string{kubeadmconstants.SuperAdminKubeConfigFileName}
	case "kubeconfig/kubelet":
		return []string{kubeadmconstants.KubeletKubeConfigFileName}
	case "kubeconfig/controller-manager":
		return []string{kubeadmconstants.ControllerManagerKubeConfigFileName}
	case "kubeconfig/scheduler":
		return []string{kubeadmconstants.SchedulerKubeConfigFileName}
	case "control-plane-prepare/kubeconfig":
		return []string{kubeadmconstants.AdminKubeConfigFileName, kubeadmconstants.ControllerManagerKubeConfigFileName, kubeadmconstants.SchedulerKubeConfigFileName}
	}
	return nil
}

// KubeconfigRemoval is one file RepairInterruptedKubeconfigs removed.
type KubeconfigRemoval struct {
	// File is relative to the kubeconfig directory: "admin.conf".
	File string
	// Reason says, for a person, why it went: "empty (0 bytes)", "does not
	// load as a kubeconfig", "loads but is cut short: ...". Never the
	// file's content (a kubeconfig holds a private key or a token) and
	// never the loader's error, which may quote it.
	Reason string
}

// RepairInterruptedKubeconfigs removes what an interrupted run of
// kubeadm's kubeconfig phase named phase left in kubeconfigDir (a host
// path; kubeadm's is /etc/kubernetes), so that kubeadm, running the phase
// again, writes it afresh: a kubeconfig file of that phase that is empty
// or not whole (kubeconfigDamage).
//
// kubeadm v1.37 writes a kubeconfig with one plain write over a truncated
// file (kubeconfigutil.WriteToDisk, client-go clientcmd.WriteToFile,
// os.WriteFile): no temporary file, no rename. A process killed while it
// writes leaves the file empty, or cut short where the kernel stopped the
// write; after a power loss the file may be empty too. kubeadm's rerun
// keeps any file it finds (createKubeConfigFileIfNotExists) once its
// current context's cluster has the expected CA, and fails on one that
// does not: an empty file loads as an empty kubeconfig, and kubeadm stops
// with "failed to find CurrentContext in Contexts of the kubeconfig file
// /etc/kubernetes/admin.conf"; a cut-short YAML stops it with "failed to
// load kubeconfig file ... that already exists on disk".
//
// Only the files of phase are considered (kubeconfigPhaseFiles; nil for
// any other phase), and only when kubeadm writes them: certsDir (a host
// path) holds the cluster CA's key, ca.key — without it kubeadm runs in
// external CA mode and uses the operator's kubeconfig files as they are,
// so none is ever removed. A file that is whole is never touched, nor is
// anything that is not a regular file. The caller decides when the repair
// applies at all (a run that resumes at phase after an interrupted run of
// the same spec). Returns the removed files; an error names the file it
// could not read or remove.
func RepairInterruptedKubeconfigs(kubeconfigDir, certsDir, phase string) ([]KubeconfigRemoval, error) {
	names := kubeconfigPhaseFiles(phase)
	if len(names) == 0 || !regular(filepath.Join(certsDir, kubeadmconstants.CAKeyName)) {
		return nil, nil
	}
	var removed []KubeconfigRemoval
	for _, name := range names {
		p := filepath.Join(kubeconfigDir, name)
		if !regular(p) {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return removed, err
		}
		reason := kubeconfigDamage(data)
		if reason == "" {
			continue
		}
		if err := os.Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, KubeconfigRemoval{File: name, Reason: reason})
	}
	return removed, nil
}

// kubeconfigDamage says why data is not a whole kubeconfig file as kubeadm
// writes one, or "" when it is. Whole means: it loads (client-go
// clientcmd.Load), its current context exists and names a cluster with a
// server and a user that both exist, the user has a credential (a client
// certificate, a token, a token file, an exec or auth-provider plugin, a
// user name), and its embedded client certificate and key, when it has
// either, form a pair (crypto/tls X509KeyPair). Every kubeconfig kubeadm
// writes is whole, and so is any working kubeconfig. The checks after
// Load catch a file cut short where the YAML still parses: before or in
// the users (kubeadm's rerun, which compares only the cluster's CA, would
// keep a kubeconfig without credentials) or inside a base64 value at a
// multiple of four characters (it would keep half a key).
func kubeconfigDamage(data []byte) string {
	if len(data) == 0 {
		return "empty (0 bytes)"
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Sprintf("does not load as a kubeconfig (%d bytes)", len(data))
	}
	short := func(what string) string {
		return fmt.Sprintf("loads but is cut short (%d bytes): %s", len(data), what)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	switch {
	case cfg.CurrentContext == "" || ctx == nil:
		return short("no current context")
	case cfg.Clusters[ctx.Cluster] == nil || cfg.Clusters[ctx.Cluster].Server == "":
		return short("the current context's cluster or its server is missing")
	case cfg.AuthInfos[ctx.AuthInfo] == nil:
		return short("the current context's user is missing")
	}
	u := cfg.AuthInfos[ctx.AuthInfo]
	if len(u.ClientCertificateData) > 0 || len(u.ClientKeyData) > 0 {
		if _, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData); err != nil {
			return short("the embedded client certificate and key are not a pair")
		}
		return ""
	}
	if u.ClientCertificate == "" && u.Token == "" && u.TokenFile == "" && u.Exec == nil && u.AuthProvider == nil && u.Username == "" {
		return short("the current context's user has no credentials")
	}
	return ""
}

// KubeconfigDir is where kubeadm writes its kubeconfig files, a machine
// path: kubeadm's constants.KubernetesDir, /etc/kubernetes (machineadm
// never passes --kubeconfig-dir).
func KubeconfigDir() string { return kubeadmconstants.KubernetesDir }
