//go:build !windows

package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/keyutil"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// TestDirectEtcdDialerRealCluster runs a real three-member etcd (the
// envtest etcd binary) on loopback with client-certificate TLS under an
// etcd CA kept in "<cluster>-etcd", as kubeadm's stacked etcd is: the
// controller's own client (a certificate it signs with that CA) lists the
// members, sees one stopped member as unhealthy, and removes it.
func TestDirectEtcdDialerRealCluster(t *testing.T) {
	requireEnv(t)
	etcdBin := filepath.Join(assetsDir(), "etcd")
	ctx := context.Background()
	ns := fmt.Sprintf("etcd-%d", time.Now().UnixNano()%100000)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns}}
	mcp := &cpv1.MachineadmControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: ns, UID: "u1"}}
	crt, key, err := newCA(ca{suffix: "etcd", commonName: "etcd-ca"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, clusterSecret(mcp, cl, "c1-etcd", map[string][]byte{tlsCrt: crt, tlsKey: key})); err != nil {
		t.Fatal(err)
	}
	caCert, caKey, err := readCA(ctx, k8s, ns, "c1-etcd")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ports := freePorts(t, 6)
	names := []string{"node-a", "node-b", "node-c"}
	var initial []string
	for i, n := range names {
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", n, ports[2*i+1]))
	}
	// Server certificate for 127.0.0.1 signed by the etcd CA.
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "etcd-server"}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, srvKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKeyPEM, _ := keyutil.MarshalPrivateKeyToPEM(srvKey)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile, crtFile, keyFile := write("ca.crt", crt), write("server.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), write("server.key", srvKeyPEM)
	procs := make([]*exec.Cmd, len(names))
	var endpoints []string
	for i, n := range names {
		client := fmt.Sprintf("https://127.0.0.1:%d", ports[2*i])
		endpoints = append(endpoints, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
		cmd := exec.Command(etcdBin, "--name", n, "--data-dir", filepath.Join(dir, n),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--client-cert-auth", "--trusted-ca-file", caFile, "--cert-file", crtFile, "--key-file", keyFile)
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = cmd
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
	}
	ec, err := DirectEtcdDialer(ctx, k8s, cl, endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	var ms []EtcdMember
	deadline := time.Now().Add(60 * time.Second)
	for {
		ms, err = ec.Members(ctx)
		healthy := 0
		for _, m := range ms {
			if m.Healthy {
				healthy++
			}
		}
		if err == nil && healthy == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd cluster not healthy: %+v %v", ms, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A member raising an alarm (NOSPACE: the cluster takes no more
	// writes) answers its status requests but is not healthy: the guard
	// must not count it. It counted as healthy.
	cli := ec.(*directEtcd).cli
	if _, err := etcdserverpb.NewMaintenanceClient(cli.ActiveConnection()).Alarm(ctx, &etcdserverpb.AlarmRequest{
		Action: etcdserverpb.AlarmRequest_ACTIVATE, MemberID: ms[1].ID, Alarm: etcdserverpb.AlarmType_NOSPACE,
	}); err != nil {
		t.Fatal(err)
	}
	// Each member sees the alarm once it has applied it: a follower may
	// answer a moment before. Only that is waited for: an error of
	// Members fails at once (the guard must answer while an alarm is
	// raised), and a list without all three members never ends the wait
	// (none of them counted healthy would hold vacuously).
	healthyCount := func(ms []EtcdMember) (n int) {
		for _, m := range ms {
			if m.Healthy {
				n++
			}
		}
		return n
	}
	membersUntil := func(done func([]EtcdMember) bool) []EtcdMember {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			ms, err := ec.Members(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 3 {
				t.Fatalf("Members listed %d members, want 3: %+v", len(ms), ms)
			}
			if done(ms) || time.Now().After(deadline) {
				return ms
			}
		}
	}
	ms = membersUntil(func(ms []EtcdMember) bool { return healthyCount(ms) == 0 })
	for _, m := range ms {
		if m.Healthy {
			t.Errorf("member %s counted healthy while the cluster raises a NOSPACE alarm", m.Name)
		}
	}
	if ok, _ := quorumAfterRemoval(ms, "node-c"); ok {
		t.Errorf("the quorum guard allows a removal while etcd raises an alarm")
	}
	if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: ms[1].ID, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}
	if ms = membersUntil(func(ms []EtcdMember) bool { return healthyCount(ms) == 3 }); healthyCount(ms) != 3 {
		t.Fatalf("members after the alarm was disarmed: %+v", ms)
	}
	// Stop node-c: it stays a member but no longer answers.
	_ = procs[2].Process.Kill()
	_ = procs[2].Wait()
	ms, err = ec.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim *EtcdMember
	for i, m := range ms {
		if m.Name == "node-c" {
			victim = &ms[i]
			if m.Healthy {
				t.Fatal("a stopped member reported healthy")
			}
		} else if !m.Healthy {
			t.Fatalf("member %s unhealthy", m.Name)
		}
	}
	if victim == nil {
		t.Fatalf("node-c missing from %+v", ms)
	}
	if ok, why := quorumAfterRemoval(ms, "node-c"); !ok {
		t.Fatalf("quorum guard refuses removing the stopped member: %s", why)
	}
	if err := ec.RemoveMember(ctx, victim.ID); err != nil {
		t.Fatal(err)
	}
	ms, err = ec.Members(ctx)
	if err != nil || len(ms) != 2 {
		t.Fatalf("members after removal: %+v %v", ms, err)
	}
}

// freePorts returns n loopback ports free at the time of asking.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// TestReadCARefusesAMismatchedKey: a CA Secret whose key is another CA's,
// or whose certificate is no CA, is refused with the Secret's name instead
// of signing certificates that do not verify against it.
func TestReadCARefusesAMismatchedKey(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	ns := fmt.Sprintf("readca-%d", time.Now().UnixNano()%100000)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns}}
	mcp := &cpv1.MachineadmControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: ns, UID: "u1"}}
	crt, key, err := newCA(ca{suffix: "ca", commonName: "kubernetes"}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := newCA(ca{suffix: "ca", commonName: "kubernetes"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, clusterSecret(mcp, cl, "c1-ca", map[string][]byte{tlsCrt: crt, tlsKey: key})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCA(ctx, k8s, ns, "c1-ca"); err != nil {
		t.Fatalf("a matching CA refused: %v", err)
	}
	if err := k8s.Create(ctx, clusterSecret(mcp, cl, "c1-etcd", map[string][]byte{tlsCrt: crt, tlsKey: otherKey})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCA(ctx, k8s, ns, "c1-etcd"); err == nil || !strings.Contains(err.Error(), "c1-etcd") || !strings.Contains(err.Error(), "not the key") {
		t.Fatalf("a CA Secret with another key: %v", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "not-a-ca"}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, leafKey.Public(), leafKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKeyPEM, _ := keyutil.MarshalPrivateKeyToPEM(leafKey)
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := k8s.Create(ctx, clusterSecret(mcp, cl, "c1-sa", map[string][]byte{tlsCrt: leafPEM, tlsKey: leafKeyPEM})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCA(ctx, k8s, ns, "c1-sa"); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Fatalf("a Secret whose certificate is no CA: %v", err)
	}
}
