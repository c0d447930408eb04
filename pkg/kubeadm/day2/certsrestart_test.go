package day2

import (
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	staticpodutil "k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"
)

// writeKubeconfig writes a kubeconfig at path whose current context's
// user has the client certificate cert and key key (embedded).
func writeKubeconfig(t *testing.T, path, cert, key string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(cert), ClientKeyData: []byte(key)}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// TestCertificatesDigest: the digest of the controller manager and the
// scheduler changes with the client certificate of their kubeconfig, and
// with nothing else: not with its key. The API server (which reloads its
// client certificates) and etcd (which reads its certificates at each
// connection) have none. A kubeconfig that does not exist is left out;
// one that does not load is an error.
func TestCertificatesDigest(t *testing.T) {
	kdir := t.TempDir()
	digest := func(component string) string {
		t.Helper()
		d, err := CertificatesDigest(kdir, component)
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		return d
	}
	if d := digest(kubeadmconstants.KubeControllerManager); d != "" {
		t.Errorf("no kubeconfig: digest %q, want none", d)
	}
	cm := filepath.Join(kdir, kubeadmconstants.ControllerManagerKubeConfigFileName)
	writeKubeconfig(t, cm, "cm-cert-1", "cm-key-1")
	writeKubeconfig(t, filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName), "cm-cert-1", "cm-key-1")
	cm1, s1 := digest(kubeadmconstants.KubeControllerManager), digest(kubeadmconstants.KubeScheduler)
	if !strings.HasPrefix(cm1, "sha256:") || !strings.HasPrefix(s1, "sha256:") || cm1 == s1 {
		t.Fatalf("digests %q and %q: want one of each file's name and certificate", cm1, s1)
	}
	for _, c := range []string{kubeadmconstants.KubeAPIServer, kubeadmconstants.Etcd} {
		if d := digest(c); d != "" {
			t.Errorf("%s: %q, want none", c, d)
		}
	}
	writeKubeconfig(t, cm, "cm-cert-1", "cm-key-2")
	if d := digest(kubeadmconstants.KubeControllerManager); d != cm1 {
		t.Errorf("a new key alone changed the controller manager's digest")
	}
	writeKubeconfig(t, cm, "cm-cert-2", "cm-key-2")
	if d := digest(kubeadmconstants.KubeControllerManager); d == cm1 {
		t.Errorf("a renewed client certificate left the controller manager's digest")
	}

	// A client certificate in a file the kubeconfig names.
	certFile := filepath.Join(kdir, "scheduler-client.crt")
	if err := os.WriteFile(certFile, []byte("sched-cert-1"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: certFile}
	kc.Contexts["x"] = &clientcmdapi.Context{AuthInfo: "u"}
	kc.CurrentContext = "x"
	sched := filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName)
	if err := clientcmd.WriteToFile(*kc, sched); err != nil {
		t.Fatal(err)
	}
	f1 := digest(kubeadmconstants.KubeScheduler)
	if err := os.WriteFile(certFile, []byte("sched-cert-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f1 == "" || digest(kubeadmconstants.KubeScheduler) == f1 {
		t.Errorf("the scheduler's digest does not follow its certificate file")
	}
	os.Remove(certFile)
	if _, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler); err == nil {
		t.Errorf("a client certificate file that cannot be read: no error")
	}

	if err := os.WriteFile(cm, []byte("{not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CertificatesDigest(kdir, kubeadmconstants.KubeControllerManager); err == nil {
		t.Errorf("a kubeconfig that does not load: no error")
	}
}

// TestRestartForCertificatesLeavesWhatRuns: a component whose manifest
// carries its certificates' digest already, etcd, or a component without
// a manifest is left alone, without a call to the API server (the admin
// credential here does not exist).
func TestRestartForCertificatesLeavesWhatRuns(t *testing.T) {
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	kdir := t.TempDir()
	manifests := filepath.Join(kdir, kubeadmconstants.ManifestsSubDirName)
	p, err := Regenerate(manifests, "", cfg, kubeadmconstants.KubeScheduler)
	if err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName), "sched-cert-1", "k")
	digest, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler)
	if err != nil {
		t.Fatal(err)
	}
	if err := Annotate(p, map[string]string{AnnotationCertificatesDigest: digest}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	o := StaticPodOptions{AdminKubeconfig: filepath.Join(kdir, "missing-admin.conf"), KubernetesDir: kdir, BackupDir: filepath.Join(kdir, "backup")}
	for _, c := range []string{kubeadmconstants.KubeScheduler, kubeadmconstants.Etcd, kubeadmconstants.KubeControllerManager} {
		o.Component = c
		if c == kubeadmconstants.KubeControllerManager {
			// Certificates, but no manifest.
			writeKubeconfig(t, filepath.Join(kdir, kubeadmconstants.ControllerManagerKubeConfigFileName), "cm", "k")
		}
		changed, lines, err := RestartForCertificates(o, "node-1")
		if changed || err != nil || len(lines) != 0 {
			t.Errorf("%s: changed %v, %v, %v; want left alone", c, changed, lines, err)
		}
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Errorf("the scheduler's manifest changed")
	}

	// A renewed certificate: the restart is attempted (it needs the API
	// server, which the missing credential refuses), the manifest is
	// left as it was.
	writeKubeconfig(t, filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName), "sched-cert-2", "k")
	o.Component = kubeadmconstants.KubeScheduler
	if changed, _, err := RestartForCertificates(o, "node-1"); changed || err == nil || !strings.Contains(err.Error(), "missing-admin.conf") {
		t.Errorf("renewed, without an API server: changed %v, %v; want the credential's error", changed, err)
	}
	pod, err := staticpodutil.ReadStaticPodFromDisk(p)
	if err != nil || pod.Annotations[AnnotationCertificatesDigest] != digest {
		t.Errorf("after a failed restart the manifest's digest is %q (%v), want the old one", pod.Annotations[AnnotationCertificatesDigest], err)
	}
}

// TestCertificatesDigestRelativeCertificateFile: a kubeconfig may name its
// client certificate file relative to its own directory, as client-go
// resolves it for the component; the digest reads that file, not one
// relative to machineadm's working directory.
func TestCertificatesDigestRelativeCertificateFile(t *testing.T) {
	kdir := t.TempDir()
	certFile := filepath.Join(kdir, "pki-sched", "client.crt")
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, []byte("sched-cert-1"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join("pki-sched", "client.crt")}
	kc.Contexts["x"] = &clientcmdapi.Context{AuthInfo: "u"}
	kc.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName)); err != nil {
		t.Fatal(err)
	}
	d1, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler)
	if err != nil || d1 == "" {
		t.Fatalf("a client certificate relative to the kubeconfig: %q, %v", d1, err)
	}
	if err := os.WriteFile(certFile, []byte("sched-cert-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d2, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler); err != nil || d2 == d1 {
		t.Errorf("the digest does not follow the relative certificate file: %q, %v", d2, err)
	}
}

// TestCertificatesDigestNeverAKey: a certificate file may carry its key
// too (a combined PEM, as the kubelet's kubelet-client-current.pem): only
// its CERTIFICATE blocks enter the digest, so another key with the same
// certificate gives the same digest.
func TestCertificatesDigestNeverAKey(t *testing.T) {
	kdir := t.TempDir()
	block := func(typ, body string) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: []byte(body)}))
	}
	certFile := filepath.Join(kdir, "client.pem")
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: certFile}
	kc.Contexts["x"] = &clientcmdapi.Context{AuthInfo: "u"}
	kc.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName)); err != nil {
		t.Fatal(err)
	}
	digest := func(cert, key string) string {
		t.Helper()
		if err := os.WriteFile(certFile, []byte(block("CERTIFICATE", cert)+block("RSA PRIVATE KEY", key)), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := digest("cert-1", "key-1")
	if s := digest("cert-1", "key-2"); s != s1 {
		t.Errorf("another key in the certificate file changed the digest")
	}
	if s := digest("cert-2", "key-2"); s == s1 {
		t.Errorf("a renewed certificate left the digest")
	}
}

// TestSwapKeepsTheRunsFirstBackup: a component replaced twice in one run
// (control-plane, then certs-renew's restart) keeps the manifest the run
// started from in its backup directory; the second backup goes beside it,
// and a retry of the same replacement reuses its backup.
func TestSwapKeepsTheRunsFirstBackup(t *testing.T) {
	manifests, backups := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	cur := filepath.Join(manifests, ManifestName(kubeadmconstants.KubeScheduler))
	write := func(path, s string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(cur, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: v1\n")
	s := Swap{ManifestDir: manifests, BackupDir: backups, Wait: func() error { return nil }}
	for _, next := range []string{"v2", "v3"} {
		p := write(filepath.Join(t.TempDir(), "new.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+next+"\n")
		if changed, lines, err := s.Component(kubeadmconstants.KubeScheduler, p); err != nil || !changed {
			t.Fatalf("%s: changed %v, %v, %v", next, changed, lines, err)
		}
	}
	first := filepath.Join(backups, ManifestName(kubeadmconstants.KubeScheduler))
	if b, _ := os.ReadFile(first); !strings.Contains(string(b), "name: v1") {
		t.Errorf("the run's first backup %s is now %q, want the manifest the run started from", first, b)
	}
	if b, _ := os.ReadFile(first + ".2"); !strings.Contains(string(b), "name: v2") {
		t.Errorf("the second backup %s is %q, want the manifest the second swap replaced", first+".2", b)
	}

	// Rolled back, then retried: the retry reuses the backup of the same
	// manifest.
	s.Wait = func() error { return os.ErrDeadlineExceeded }
	p := write(filepath.Join(t.TempDir(), "new.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: v4\n")
	if _, _, err := s.Component(kubeadmconstants.KubeScheduler, p); err == nil {
		t.Fatal("unhealthy: no error")
	}
	s.Wait = func() error { return nil }
	if _, _, err := s.Component(kubeadmconstants.KubeScheduler, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first + ".4"); err == nil {
		t.Errorf("the retry wrote another backup of the same manifest")
	}
	if b, _ := os.ReadFile(first + ".3"); !strings.Contains(string(b), "name: v3") {
		t.Errorf("backup .3 is %q, want v3", b)
	}
}

// TestRestartForCertificatesOnlyStale: with OnlyStale (a run that renewed
// nothing), a manifest without the digest (as kubeadm writes it) is left
// alone before its certificates are read (the kubeconfig here does not
// load), but one whose digest is of other certificates than those on disk
// (renewed since the component started, by hand or by a killed run) is
// restarted: the attempt needs the API server, which the missing
// credential refuses.
func TestRestartForCertificatesOnlyStale(t *testing.T) {
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	kdir := t.TempDir()
	manifests := filepath.Join(kdir, kubeadmconstants.ManifestsSubDirName)
	p, err := Regenerate(manifests, "", cfg, kubeadmconstants.KubeScheduler)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName)
	if err := os.WriteFile(kc, []byte("{not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := StaticPodOptions{Component: kubeadmconstants.KubeScheduler, AdminKubeconfig: filepath.Join(kdir, "missing-admin.conf"),
		KubernetesDir: kdir, BackupDir: filepath.Join(kdir, "backup"), OnlyStale: true}
	if changed, lines, err := RestartForCertificates(o, "node-1"); changed || err != nil || len(lines) != 0 {
		t.Errorf("no digest, only stale: changed %v, %v, %v; want left alone", changed, lines, err)
	}
	writeKubeconfig(t, kc, "sched-cert-1", "k")
	old, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler)
	if err != nil {
		t.Fatal(err)
	}
	if err := Annotate(p, map[string]string{AnnotationCertificatesDigest: old}); err != nil {
		t.Fatal(err)
	}
	if changed, lines, err := RestartForCertificates(o, "node-1"); changed || err != nil || len(lines) != 0 {
		t.Errorf("the digest of the certificates on disk, only stale: changed %v, %v, %v; want left alone", changed, lines, err)
	}
	writeKubeconfig(t, kc, "sched-cert-2", "k")
	if changed, _, err := RestartForCertificates(o, "node-1"); changed || err == nil || !strings.Contains(err.Error(), "missing-admin.conf") {
		t.Errorf("a stale digest, only stale: changed %v, %v; want the restart attempted (the credential's error)", changed, err)
	}
}

// TestCertificatesDigestNeverADamagedKey: a certificate file whose PEM
// blocks do not decode (a key whose base64 is damaged, beside a
// certificate that is damaged too) gives nothing of its text to the
// digest: another damaged key gives the same digest.
func TestCertificatesDigestNeverADamagedKey(t *testing.T) {
	kdir := t.TempDir()
	certFile := filepath.Join(kdir, "client.pem")
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: certFile}
	kc.Contexts["x"] = &clientcmdapi.Context{AuthInfo: "u"}
	kc.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName)); err != nil {
		t.Fatal(err)
	}
	digest := func(key string) string {
		t.Helper()
		damaged := "-----BEGIN CERTIFICATE-----\n!!not base64!!\n-----END CERTIFICATE-----\n" +
			"-----BEGIN RSA PRIVATE KEY-----\n" + key + "\n-----END RSA PRIVATE KEY-----\n"
		if err := os.WriteFile(certFile, []byte(damaged), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := CertificatesDigest(kdir, kubeadmconstants.KubeScheduler)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if digest("MIIEpAIBAAKCAQEA7 secret-1 *") != digest("MIIEpAIBAAKCAQEA7 secret-2 *") {
		t.Errorf("the text of a damaged key entered the digest")
	}
}

// TestRestartForCertificatesStalenessUnknown: an annotated manifest whose
// kubeconfig does not load, or a manifest that does not read, is an error
// carrying ErrStalenessUnknown (certs-renew makes it a warning in a run
// that renews nothing), and the manifest is left as it is.
func TestRestartForCertificatesStalenessUnknown(t *testing.T) {
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	kdir := t.TempDir()
	manifests := filepath.Join(kdir, kubeadmconstants.ManifestsSubDirName)
	p, err := Regenerate(manifests, "", cfg, kubeadmconstants.KubeScheduler)
	if err != nil {
		t.Fatal(err)
	}
	if err := Annotate(p, map[string]string{AnnotationCertificatesDigest: "sha256:00"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	kc := filepath.Join(kdir, kubeadmconstants.SchedulerKubeConfigFileName)
	if err := os.WriteFile(kc, []byte("{not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := StaticPodOptions{Component: kubeadmconstants.KubeScheduler, AdminKubeconfig: filepath.Join(kdir, "missing-admin.conf"),
		KubernetesDir: kdir, BackupDir: filepath.Join(kdir, "backup"), OnlyStale: true}
	if changed, _, err := RestartForCertificates(o, "node-1"); changed || !errors.Is(err, ErrStalenessUnknown) {
		t.Errorf("a kubeconfig that does not load: changed %v, %v; want ErrStalenessUnknown", changed, err)
	}
	if err := os.WriteFile(p, []byte("kind: [not a pod"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, _, err := RestartForCertificates(o, "node-1"); changed || !errors.Is(err, ErrStalenessUnknown) {
		t.Errorf("a manifest that does not read: changed %v, %v; want ErrStalenessUnknown", changed, err)
	}
	if err := os.WriteFile(p, before, 0o600); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, kc, "sched-cert-2", "k")
	if _, _, err := RestartForCertificates(o, "node-1"); err == nil || errors.Is(err, ErrStalenessUnknown) {
		t.Errorf("a restart that fails (no admin credential): %v; want an error without ErrStalenessUnknown", err)
	}
}

// TestManifestTempDirRemovesLeftovers: the directories a run killed while
// it prepared a manifest left under the kubernetes directory's tmp are
// removed by the next run's; kubeadm's own and other files there stay.
func TestManifestTempDirRemovesLeftovers(t *testing.T) {
	k := t.TempDir()
	tmp := filepath.Join(k, "tmp")
	left := filepath.Join(tmp, manifestTempPrefix+"123456")
	if err := os.MkdirAll(filepath.Join(left, "inner"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "inner", "kube-scheduler.yaml"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeadms := filepath.Join(tmp, "kubeadm-upgraded-manifests999")
	if err := os.Mkdir(kubeadms, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := manifestTempDir(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed run's %s is still there (%v)", left, err)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() || filepath.Dir(d) != tmp {
		t.Errorf("the new directory %s: %v", d, err)
	}
	if _, err := os.Stat(kubeadms); err != nil {
		t.Errorf("kubeadm's own directory was removed: %v", err)
	}
	// The tmp directory itself is made when missing.
	k2 := t.TempDir()
	if d, err := manifestTempDir(k2); err != nil || filepath.Dir(d) != filepath.Join(k2, "tmp") {
		t.Errorf("without a tmp directory: %q, %v", d, err)
	}
}

// TestManifestTempDirLeftoversByName: the leftovers are found by name in
// the tmp directory itself, not by a pattern over its path: a kubernetes
// directory whose path holds a pattern's characters ("[", "?") has its
// own leftovers removed and never another directory's the pattern would
// match. Only a directory named as os.MkdirTemp names them (the prefix,
// then digits) is removed; a symbolic link so named, and what it points
// to, and another name with the prefix stay.
func TestManifestTempDirLeftoversByName(t *testing.T) {
	base := t.TempDir()
	k := filepath.Join(base, "k8s[1]?")
	other := filepath.Join(base, "k8s1x") // matched by the pattern "k8s[1]?"
	leftover := func(dir, name string) string {
		p := filepath.Join(dir, "tmp", name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "kube-scheduler.yaml"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := leftover(k, manifestTempPrefix+"123456")
	others := leftover(other, manifestTempPrefix+"654321")
	kept := leftover(k, manifestTempPrefix+"-kept")
	target := leftover(base, "target")
	link := filepath.Join(k, "tmp", manifestTempPrefix+"777")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	d, err := manifestTempDir(k)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d) != filepath.Join(k, "tmp") {
		t.Errorf("the new directory %s is not in %s", d, filepath.Join(k, "tmp"))
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the killed run's %s is still there (%v)", own, err)
	}
	if _, err := os.Stat(filepath.Join(others, "kube-scheduler.yaml")); err != nil {
		t.Errorf("another kubernetes directory's %s was removed: %v", others, err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("%s, a name os.MkdirTemp does not make, was removed: %v", kept, err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the symbolic link %s was removed: %v", link, err)
	}
	if _, err := os.Stat(filepath.Join(target, "kube-scheduler.yaml")); err != nil {
		t.Errorf("the link's target lost its content: %v", err)
	}
}
