//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// The API server's typed security settings in the e2e control planes
// (issue 29): audit logging, Secrets encrypted by a KMS v2 plugin (the
// fake-kms-plugin test double, started at boot on every control-plane
// machine) and ConfigMaps by an aescbc key delivered as a secret file.
const (
	machineEncryptionKeyFile = "/etc/machineadm/secrets/encryption-key"
	fakeKMSSocket            = "/var/run/kmsplugin/socket.sock"
	fakeKMSLog               = "/var/log/fake-kms-plugin.log"
	fakeKMSName              = "fake-kms"
	auditLogPath             = "/var/log/kubernetes/audit/audit.log"
	securityNamespace        = "machineadm-e2e-security"
)

// secureAPIServer gives the control-plane spec s the typed security
// settings every e2e control plane of a cluster shares (the flags and
// volumes come from the Init node's ClusterConfiguration; each node writes
// the files from its own spec).
func secureAPIServer(s *machineadm.MachineBootstrapConfig) *machineadm.MachineBootstrapConfig {
	a := &s.Spec.ControlPlane.APIServer
	a.Audit = &machineadm.Audit{
		Policy: map[string]any{
			"omitStages": []any{"RequestReceived"},
			"rules": []any{
				map[string]any{"level": "None", "users": []any{"system:kube-proxy"}},
				map[string]any{"level": "Metadata", "resources": []any{map[string]any{"group": "", "resources": []any{"secrets", "configmaps"}}}},
				map[string]any{"level": "Metadata"},
			},
		},
		Log: &machineadm.AuditLog{Path: auditLogPath},
	}
	a.Encryption = &machineadm.Encryption{Resources: []machineadm.EncryptionResource{
		{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{
			{KMS: &machineadm.KMSProvider{Name: fakeKMSName, Endpoint: "unix://" + fakeKMSSocket}},
			{Identity: &machineadm.IdentityProvider{}},
		}},
		{Resources: []string{"configmaps"}, Providers: []machineadm.EncryptionProvider{
			{AESCBC: &machineadm.EncryptionKeys{Keys: []machineadm.EncryptionKey{
				{Name: "key1", Secret: machineadm.SecretSource{File: machineEncryptionKeyFile}},
			}}},
			{Identity: &machineadm.IdentityProvider{}},
		}},
	}}
	return s
}

// usesEncryptionKeyFile says whether spec reads machineEncryptionKeyFile.
func usesEncryptionKeyFile(spec *machineadm.MachineBootstrapConfig) bool {
	cp := spec.Spec.ControlPlane
	if cp == nil || cp.APIServer.Encryption == nil {
		return false
	}
	for _, r := range cp.APIServer.Encryption.Resources {
		for _, p := range r.Providers {
			if p.AESCBC != nil {
				for _, k := range p.AESCBC.Keys {
					if k.Secret.File == machineEncryptionKeyFile {
						return true
					}
				}
			}
		}
	}
	return false
}

var (
	fakeKMSOnce sync.Once
	fakeKMSPath string
	fakeKMSErr  error
)

// fakeKMSPlugin builds test/e2e/fake-kms-plugin once per run (static, from
// this module and its module cache: no network).
func (e *env) fakeKMSPlugin() (string, error) {
	fakeKMSOnce.Do(func() {
		fakeKMSPath = filepath.Join(e.runDir, "fake-kms-plugin")
		cmd := exec.Command("go", "build", "-trimpath", "-o", fakeKMSPath, "./test/e2e/fake-kms-plugin")
		cmd.Dir = e.repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeKMSErr = fmt.Errorf("building fake-kms-plugin: %w: %s", err, out)
		}
	})
	return fakeKMSPath, fakeKMSErr
}

// installFakeKMSPlugin puts the fake KMS v2 plugin into a control-plane
// machine's root with a unit enabled at boot, so its socket is up before
// machineadm starts the API server.
func (e *env) installFakeKMSPlugin(m *Machine) error {
	bin, err := e.fakeKMSPlugin()
	if err != nil {
		return err
	}
	if err := copyFile(bin, filepath.Join(m.Root, "usr/local/bin/fake-kms-plugin"), 0o755); err != nil {
		return err
	}
	unit := "[Unit]\nDescription=KMS v2 plugin test double (machineadm e2e)\nBefore=kubelet.service\n\n" +
		"[Service]\nExecStart=/usr/local/bin/fake-kms-plugin --socket " + fakeKMSSocket + " --log-file " + fakeKMSLog + "\nRestart=always\n\n" +
		"[Install]\nWantedBy=multi-user.target\n"
	if err := m.WriteFile("/etc/systemd/system/fake-kms-plugin.service", []byte(unit), 0o644); err != nil {
		return err
	}
	wants := filepath.Join(m.Root, "etc/systemd/system/multi-user.target.wants/fake-kms-plugin.service")
	if err := os.Symlink("/etc/systemd/system/fake-kms-plugin.service", wants); err != nil && !os.IsExist(err) {
		return err
	}
	// The plugin appends to its log, and the checks count every call in
	// it: a machine directory booted again (a test run twice in one
	// process with MACHINEADM_E2E_KEEP=1, which keeps the overlay's upper
	// directory) must not show the calls of an earlier boot's plugin.
	if err := os.Remove(filepath.Join(m.Root, fakeKMSLog)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// checkAPIServerSecurity proves on a running control plane m that the
// typed settings took effect: a Secret and a ConfigMap written through
// the API are stored in etcd under the KMS v2 and aescbc prefixes (read
// raw with the etcd client and the API server's etcd client
// certificate), read back in the clear through the API, the fake plugin
// logged its Encrypt calls (fakeKMSLog), the audit log holds the Secret's create event,
// and the configuration files are 0600. It returns how long the probe
// took.
func checkAPIServerSecurity(ctx context.Context, t *testing.T, m *Machine, ip string, cs *kubernetes.Clientset) {
	t.Helper()
	start := time.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: securityNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalf(t, "namespace: %v", err)
	}
	const plain = "machineadm-e2e-plaintext-marker"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "enc-probe", Namespace: securityNamespace}, StringData: map[string]string{"v": plain}}
	if _, err := cs.CoreV1().Secrets(securityNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalf(t, "secret: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "enc-probe", Namespace: securityNamespace}, Data: map[string]string{"v": plain}}
	if _, err := cs.CoreV1().ConfigMaps(securityNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalf(t, "configmap: %v", err)
	}
	if got, err := cs.CoreV1().Secrets(securityNamespace).Get(ctx, "enc-probe", metav1.GetOptions{}); err != nil || string(got.Data["v"]) != plain {
		errorf(t, "secret read back through the API: %v %q", err, got.Data["v"])
	}

	raw, err := etcdGet(ctx, m, ip, "/registry/secrets/"+securityNamespace+"/enc-probe", "/registry/configmaps/"+securityNamespace+"/enc-probe")
	if err != nil {
		fatalf(t, "etcd: %v", err)
	}
	for key, prefix := range map[string]string{
		"/registry/secrets/" + securityNamespace + "/enc-probe":    "k8s:enc:kms:v2:" + fakeKMSName + ":",
		"/registry/configmaps/" + securityNamespace + "/enc-probe": "k8s:enc:aescbc:v1:key1:",
	} {
		v := raw[key]
		switch {
		case v == nil:
			errorf(t, "etcd has no %s", key)
		case !bytes.HasPrefix(v, []byte(prefix)):
			errorf(t, "etcd %s starts with %q, want %q", key, v[:min(len(v), 40)], prefix)
		case bytes.Contains(v, []byte(plain)):
			errorf(t, "etcd %s holds the plaintext", key)
		default:
			t.Logf("etcd %s: %q… (%d bytes, encrypted)", key, v[:len(prefix)], len(v))
		}
	}

	if calls, err := readKMSCalls(m); err != nil {
		errorln(t, err)
	} else if calls.encrypts == 0 {
		errorf(t, "the API server never called the KMS plugin's Encrypt; %s:\n%s", fakeKMSLog, tail(calls.text, 10))
	} else {
		t.Logf("fake-kms-plugin: %d Encrypt and %d Decrypt calls", calls.encrypts, calls.decrypts)
	}

	// The log backend writes each event as it happens (blocking mode);
	// still, give it a few seconds.
	var found bool
	for deadline := time.Now().Add(30 * time.Second); !found && time.Now().Before(deadline); time.Sleep(time.Second) {
		found = auditHasCreate(m, "secrets", securityNamespace, "enc-probe")
	}
	if !found {
		errorf(t, "%s has no create event of secret %s/enc-probe", auditLogPath, securityNamespace)
	} else if b, err := os.ReadFile(filepath.Join(m.Root, auditLogPath)); err == nil {
		t.Logf("%s: %d audit events, the Secret's create among them", auditLogPath, bytes.Count(b, []byte("\n")))
	}
	for _, p := range []string{"/etc/kubernetes/apiserver/audit-policy.yaml", "/etc/kubernetes/apiserver/encryption-config.yaml"} {
		fi, err := os.Stat(filepath.Join(m.Root, p))
		if err != nil {
			errorf(t, "%s: %v", p, err)
			continue
		}
		if fi.Mode().Perm() != 0o600 {
			errorf(t, "%s: mode %04o, want 0600", p, fi.Mode().Perm())
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			t.Logf("%s: %04o %d:%d", p, fi.Mode().Perm(), st.Uid, st.Gid)
		}
	}
	timing(t, m.Name+"-apiserver-security-checks", time.Since(start))
}

// auditHasCreate says whether m's audit log has a create event of the
// object.
func auditHasCreate(m *Machine, resource, namespace, name string) bool {
	f, err := os.Open(filepath.Join(m.Root, auditLogPath))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Kind      string `json:"kind"`
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource, Namespace, Name string
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Kind == "Event" && ev.Verb == "create" && ev.ObjectRef.Resource == resource && ev.ObjectRef.Namespace == namespace && ev.ObjectRef.Name == name {
			return true
		}
	}
	return false
}

// etcdClient connects to the etcd member at ip with the API server's etcd
// client certificate from m's certificate directory.
func etcdClient(m *Machine, ip string) (*clientv3.Client, error) {
	pki := filepath.Join(m.Root, "etc/kubernetes/pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "apiserver-etcd-client.crt"), filepath.Join(pki, "apiserver-etcd-client.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, "etcd/ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + ip + ":2379"},
		DialTimeout: 10 * time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	})
}

// etcdGet reads keys raw from m's etcd member at ip (etcdClient).
func etcdGet(ctx context.Context, m *Machine, ip string, keys ...string) (map[string][]byte, error) {
	c, err := etcdClient(m, ip)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	out := map[string][]byte{}
	for _, k := range keys {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := c.Get(cctx, k)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", k, err)
		}
		for _, kv := range r.Kvs {
			out[string(kv.Key)] = kv.Value
		}
	}
	return out, nil
}

// decryptLogWait bounds checkDecryptsThrough's wait for the plugin's
// Decrypt line in its log file.
const decryptLogWait = 30 * time.Second

// checkDecryptsThrough reads the probe Secret that checkAPIServerSecurity
// wrote through cp1 back through the API server of the joined control
// plane m (at ip): its own KMS plugin must decrypt the data key cp1's
// plugin wrapped (the fake's key is the same on every machine, as a real
// KMS's would be), and its log file (fakeKMSLog) shows the Decrypt call.
func checkDecryptsThrough(ctx context.Context, t *testing.T, cp1m, m *Machine, ip string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cp1m.Root, "etc/kubernetes/admin.conf"))
	if err != nil {
		fatalln(t, err)
	}
	cfg.Host = "https://" + ip + ":6443"
	cfg.Timeout = 15 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fatalln(t, err)
	}
	got, err := cs.CoreV1().Secrets(securityNamespace).Get(ctx, "enc-probe", metav1.GetOptions{})
	if err != nil || string(got.Data["v"]) != "machineadm-e2e-plaintext-marker" {
		errorf(t, "%s: the probe Secret through %s's API server: %v", m.Name, m.Name, err)
		return
	}
	// The plugin appends each call to its log file before it answers; the
	// file is read until it shows a Decrypt, for at most decryptLogWait
	// (the journal, which the check read before, could lack the line).
	var calls kmsCalls
	deadline := time.Now().Add(decryptLogWait)
	for {
		if calls, err = readKMSCalls(m); err != nil {
			errorf(t, "%s: %v", m.Name, err)
			return
		}
		if calls.decrypts > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if calls.decrypts == 0 {
		logKMSDiagnostics(ctx, t, cp1m, m)
		errorf(t, "%s: its API server read the Secret without calling its KMS plugin's Decrypt (%d Encrypt calls); %s:\n%s", m.Name, calls.encrypts, fakeKMSLog, tail(calls.text, 10))
	} else {
		t.Logf("%s: the Secret written through cp1 reads back through %s; its fake-kms-plugin decrypted %d time(s), encrypted %d", m.Name, m.Name, calls.decrypts, calls.encrypts)
		logJournalMismatch(ctx, t, m)
	}
}

// logJournalMismatch logs, when m's plugin journal (journalctl -u) shows
// no Decrypt within decryptLogWait although fakeKMSLog does, where
// journald put the plugin's lines. That journal view is what
// checkDecryptsThrough failed on twice in CI with the Secret read back;
// the check no longer depends on it, and this keeps the evidence of why
// it lacked the lines. Not a failure.
func logJournalMismatch(ctx context.Context, t *testing.T, m *Machine) {
	t.Helper()
	var out string
	for deadline := time.Now().Add(decryptLogWait); ; time.Sleep(time.Second) {
		res, err := m.Exec(ctx, nil, "journalctl", "--no-pager", "-o", "cat", "-u", "fake-kms-plugin.service")
		if err != nil {
			t.Logf("%s: fake-kms-plugin journal: %v", m.Name, err)
			return
		}
		out = res.Stdout
		if strings.Contains(out, "fake-kms-plugin: decrypt #") {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%s: NOTE %s shows Decrypt calls, but journalctl -u fake-kms-plugin.service shows none after %s:\n%s", m.Name, fakeKMSLog, decryptLogWait, tail(out, 10))
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	logJournalAttribution(dctx, t, m)
}

// logJournalAttribution logs journalAttribution's commands on m and the
// console's lines about journald: journald writes its own messages to
// /dev/kmsg, which on an e2e machine is the console (hack/e2e/rootfs,
// machineadm-e2e-kmsg.conf), so they reach Dir/console.log, not the
// journal.
func logJournalAttribution(ctx context.Context, t *testing.T, m *Machine) {
	t.Helper()
	for _, c := range journalAttribution {
		res, err := m.Exec(ctx, nil, "sh", "-c", c.cmd)
		t.Logf("%s: %s (%v):\n%s%s", m.Name, c.what, err, res.Stdout, res.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(m.Dir, "console.log"))
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "journal") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	t.Logf("%s: console lines about journald (%v):\n%s", m.Name, err, strings.Join(lines[max(0, len(lines)-20):], "\n"))
}

// journalAttribution are the commands that say where journald put the
// fake plugin's lines when journalctl -u does not show them: the lines by
// the identifier systemd gives the stream (whatever unit journald
// attributed them to, with the fields it attributed them by), the
// plugin's cgroup (journald derives the unit from it), the journal's
// newest entries and its files' check (whether journald stored nothing
// after the plugin's start, or only not the plugin's stream), and
// journald's own messages and disk use (lines it dropped).
var journalAttribution = []struct{ what, cmd string }{
	{"plugin lines by identifier, with their unit and cgroup fields",
		"journalctl --no-pager -o verbose SYSLOG_IDENTIFIER=fake-kms-plugin | grep -E '^[A-Z][a-z]{2} |^ +(MESSAGE|_PID|_SYSTEMD_UNIT|_SYSTEMD_CGROUP|_SYSTEMD_INVOCATION_ID)=' | tail -n 60"},
	{"plugin cgroup", "p=$(systemctl show -p MainPID --value fake-kms-plugin.service); echo \"pid $p\"; cat /proc/$p/cgroup"},
	{"the journal's newest entries (does it store anything after the plugin's start?) and its files' consistency",
		"journalctl --no-pager -n 8 -o short-monotonic; journalctl --verify 2>&1 | tail -n 5"},
	{"journald's own messages and disk use",
		"journalctl --no-pager -o short-monotonic -u systemd-journald.service | tail -n 20; journalctl --disk-usage; df -h /var/log /run/log 2>&1"},
}

// kmsCalls is what a machine's fake-kms-plugin logged to fakeKMSLog.
type kmsCalls struct {
	encrypts, decrypts int
	text               string
}

// readKMSCalls reads m's fakeKMSLog from its root directory and counts the
// Encrypt and Decrypt calls it logged.
func readKMSCalls(m *Machine) (kmsCalls, error) {
	b, err := m.ReadFile(fakeKMSLog)
	if err != nil {
		return kmsCalls{}, fmt.Errorf("fake-kms-plugin log: %w", err)
	}
	s := string(b)
	return kmsCalls{
		encrypts: strings.Count(s, "fake-kms-plugin: encrypt #"),
		decrypts: strings.Count(s, "fake-kms-plugin: decrypt #"),
		text:     s,
	}, nil
}

// logKMSDiagnostics logs, for a KMS check that failed on m, what says
// which plugin m's API server talks to: the plugin's and the API server's
// processes and journals (KMS lines), the socket's inode as the plugin's
// and the API server's mount namespaces see it, and the Encrypt and
// Decrypt counts of cp1m's plugin. The encryption configuration is not
// logged: it holds the aescbc key.
func logKMSDiagnostics(ctx context.Context, t *testing.T, cp1m, m *Machine) {
	t.Helper()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	sock := path.Dir(fakeKMSSocket)
	for _, c := range []struct {
		m    *Machine
		what string
		args []string
	}{
		{m, "units", []string{"systemctl", "show", "-p", "Id,MainPID,NRestarts,ActiveEnterTimestampMonotonic", "fake-kms-plugin.service", "kube-apiserver.service"}},
		{m, "plugin journal (its calls, to compare with " + fakeKMSLog + ")", []string{"sh", "-c", "journalctl --no-pager -o short-monotonic -u fake-kms-plugin.service | tail -n 20"}},
		{m, "plugin and API server journal (KMS lines)", []string{"sh", "-c", "journalctl --no-pager -o short-monotonic -u fake-kms-plugin.service -u kube-apiserver.service | grep -iE 'kms|plugin|envelope|encrypt|decrypt|socket' | tail -n 40"}},
		{m, "the socket as seen from the plugin's and the API server's mount namespaces", []string{"sh", "-c", "for u in fake-kms-plugin kube-apiserver; do p=$(systemctl show -p MainPID --value $u.service); echo \"$u (pid $p):\"; ls -lia /proc/$p/root" + sock + " 2>&1; done; " +
			// crictl is on no machine's PATH; e2eBinDir has it where a test binds it.
			"c=" + e2eBinDir + "/crictl; [ -x $c ] || c=crictl; $c --runtime-endpoint unix:///run/containerd/containerd.sock ps -a --name kube-apiserver 2>&1 | tail -n 3"}},
		{m, "sockets", []string{"sh", "-c", "ss -xlpn 2>&1 | grep -i kms"}},
		{cp1m, "cp1's plugin log", []string{"sh", "-c", "tail -n 20 " + fakeKMSLog}},
	} {
		res, err := c.m.Exec(dctx, nil, c.args...)
		t.Logf("%s: %s (%v):\n%s%s", c.m.Name, c.what, err, res.Stdout, res.Stderr)
	}
	logJournalAttribution(dctx, t, m)
}
