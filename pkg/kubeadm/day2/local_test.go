package day2

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"

	"github.com/machineadm/machineadm/internal/testkubeconfig"
)

// fakeCluster stands in for a cluster's API server (none runs in unit
// tests) on loopback: the kubeadm-config ConfigMap with clusterConfig,
// any Node, the kubernetes Service's EndpointSlice (slice, when set) and
// /version (ver). It records every request's path and query.
type fakeCluster struct {
	mu            sync.Mutex
	requests      []string
	clusterConfig string
	slice         *discoveryv1.EndpointSlice
	ver           string
	// foreign are other EndpointSlices with the kubernetes Service's
	// label (not the API servers'); nodes are the Nodes a list returns.
	foreign []discoveryv1.EndpointSlice
	nodes   []corev1.Node
}

func (f *fakeCluster) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL.Path+"?"+r.URL.RawQuery)
		ver, slice, foreign, nodes := f.ver, f.slice, f.foreign, f.nodes
		f.mu.Unlock()
		reply := func(v any) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
		switch {
		case r.URL.Path == "/version":
			reply(version.Info{GitVersion: ver, Major: "1", Minor: "37"})
		case r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/kubeadm-config":
			reply(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"},
				Data: map[string]string{"ClusterConfiguration": f.clusterConfig}})
		case r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/kubelet-config":
			reply(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "kubelet-config", Namespace: "kube-system"},
				Data: map[string]string{"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"}})
		case strings.HasPrefix(r.URL.Path, "/api/v1/nodes/"):
			reply(&corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/")}})
		case r.URL.Path == "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices" && slice != nil:
			reply(&discoveryv1.EndpointSliceList{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSliceList"}, Items: append([]discoveryv1.EndpointSlice{*slice}, foreign...)})
		case r.URL.Path == "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes" && slice != nil:
			s := *slice
			s.TypeMeta = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
			reply(&s)
		case r.URL.Path == "/api/v1/nodes":
			reply(&corev1.NodeList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}, Items: nodes})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// adminKubeconfig writes a kubeconfig for srv (its certificate as the
// CA, a token) into dir.
func adminKubeconfig(t *testing.T, dir string, srv *httptest.Server) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	p := filepath.Join(dir, "admin.conf")
	kc := testkubeconfig.Token(srv.URL, ca)
	if err := os.WriteFile(p, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clusterConfigurationDoc is the ClusterConfiguration document of a
// translated spec.
func clusterConfigurationDoc(t *testing.T, yaml []byte) string {
	t.Helper()
	for _, d := range strings.Split(string(yaml), "\n---\n") {
		if strings.Contains(d, "kind: ClusterConfiguration") {
			return d
		}
	}
	t.Fatalf("no ClusterConfiguration in\n%s", yaml)
	return ""
}

// TestLocalEndpointIsTheSpecs: the Systemd runtime's local endpoint is
// the spec's advertise address and kubeadm's default bind port.
func TestLocalEndpointIsTheSpecs(t *testing.T) {
	ep, err := LocalEndpoint(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ep.AdvertiseAddress != "192.0.2.10" || ep.BindPort != 6443 {
		t.Errorf("endpoint %+v, want 192.0.2.10:6443", ep)
	}
}

// TestLocalDataHasTheEndpointWithoutAMirrorPod: the upgrade data built for
// a control plane run as systemd units carries the given local endpoint,
// the target version and the UpgradeConfiguration's settings, and is read
// from the cluster without asking for the kube-apiserver mirror pod
// (kubeadm's own data initialiser waits for its annotation, which such a
// control plane never has).
func TestLocalDataHasTheEndpointWithoutAMirrorPod(t *testing.T) {
	yaml := exampleInit(t, nil)
	f := &fakeCluster{clusterConfig: strings.Replace(clusterConfigurationDoc(t, yaml), "kubernetesVersion: v1.37.2", "kubernetesVersion: v1.36.3", 1)}
	srv := f.serve(t)
	dir := t.TempDir()
	admin := adminKubeconfig(t, dir, srv)
	cfgData, err := UpgradeConfig(UpgradeOptions{KubernetesVersion: "v1.37.2", IgnorePreflightErrors: []string{"CreateJob"}, EtcdUpgrade: true, CertificateRenewal: true, SkipImagePulls: true})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "upgrade.yaml")
	if err := os.WriteFile(cfgPath, cfgData, 0o600); err != nil {
		t.Fatal(err)
	}
	ep := kubeadmapi.APIEndpoint{AdvertiseAddress: "192.0.2.10", BindPort: 6443}
	for _, verb := range []string{"apply", "node"} {
		d, err := newLocalData(verb, cfgPath, &LocalControlPlane{Endpoint: ep, AdminKubeconfig: admin}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", verb, err)
		}
		ic := d.InitCfg()
		if ic.LocalAPIEndpoint != ep {
			t.Errorf("%s: local endpoint %+v, want %+v", verb, ic.LocalAPIEndpoint, ep)
		}
		if !d.IsControlPlaneNode() || d.KubeConfigPath() != admin || !d.EtcdUpgrade() || !d.RenewCerts() || d.DryRun() || d.SessionIsInteractive() {
			t.Errorf("%s: data %+v", verb, d)
		}
		if !d.IgnorePreflightErrors().Has("createjob") && !d.IgnorePreflightErrors().Has("CreateJob") {
			t.Errorf("%s: ignored preflight errors %v", verb, d.IgnorePreflightErrors())
		}
		want := "v1.36.3" // `upgrade node` keeps the cluster's version
		if verb == "apply" {
			want = "v1.37.2"
			if ic.NodeRegistration.ImagePullPolicy != corev1.PullNever {
				t.Errorf("apply: image pull policy %q, want Never (no control-plane image to pull)", ic.NodeRegistration.ImagePullPolicy)
			}
		}
		if ic.KubernetesVersion != want {
			t.Errorf("%s: Kubernetes version %q, want %q", verb, ic.KubernetesVersion, want)
		}
		if d.Cfg().Node.ImagePullPolicy != corev1.PullNever {
			t.Errorf("%s: node image pull policy %q", verb, d.Cfg().Node.ImagePullPolicy)
		}
	}
	for _, r := range f.requests {
		if strings.Contains(r, "/pods") {
			t.Errorf("the upgrade data asked for pods: %s", r)
		}
	}
	if len(f.requests) == 0 {
		t.Error("the fake API server saw no request")
	}
}

// TestUnupgradedAPIServers: the API servers other than this node's are
// asked for their /version at the kubernetes Service's endpoints; one
// behind the target version is named, this node's own address is not
// asked.
func TestUnupgradedAPIServers(t *testing.T) {
	other := &fakeCluster{ver: "v1.36.3"}
	otherSrv := other.serve(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(otherSrv.URL, "https://"))
	p, _ := strconv.Atoi(port)
	p32, name := int32(p), "https"
	admin := &fakeCluster{slice: &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}, {Addresses: []string{"127.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p32}},
	}}
	kc := adminKubeconfig(t, t.TempDir(), admin.serve(t))
	behind, err := UnupgradedAPIServers(t.Context(), kc, "192.0.2.10", "v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	if len(behind) != 1 || !strings.Contains(behind[0], "127.0.0.1:"+port) || !strings.Contains(behind[0], "v1.36.3") {
		t.Errorf("behind %v, want 127.0.0.1:%s (v1.36.3)", behind, port)
	}
	other.mu.Lock()
	other.ver = "v1.37.2"
	other.mu.Unlock()
	if behind, err = UnupgradedAPIServers(t.Context(), kc, "192.0.2.10", "v1.37.2"); err != nil || len(behind) != 0 {
		t.Errorf("after the other API server's upgrade: behind %v, %v", behind, err)
	}
}

// Only the API servers' own EndpointSlice (default/kubernetes) is asked:
// another slice with the Service's label (anyone who may create slices in
// default can write one) neither holds the addons back nor gets the admin
// credential sent to its addresses. An API server down long enough to
// have left the slice still holds them back (more control-plane Nodes than
// API servers), while this node's own, not back in the slice yet after its
// restart, does not.
func TestUnupgradedAPIServersForeignSliceAndMissingServer(t *testing.T) {
	other := &fakeCluster{ver: "v1.37.2"}
	otherSrv := other.serve(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(otherSrv.URL, "https://"))
	p, _ := strconv.Atoi(port)
	p32, name := int32(p), "https"
	// A closed port on loopback: refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closedPort, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	cp, _ := strconv.Atoi(closedPort)
	c32 := int32(cp)
	label := map[string]string{discoveryv1.LabelServiceName: "kubernetes"}
	cpNode := func(n string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
	}
	admin := &fakeCluster{
		slice: &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: label},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}, {Addresses: []string{"127.0.0.1"}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p32}},
		},
		foreign: []discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes-extra", Namespace: "default", Labels: label},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.2"}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &c32}},
		}},
		nodes: []corev1.Node{cpNode("cp1"), cpNode("cp2")},
	}
	kc := adminKubeconfig(t, t.TempDir(), admin.serve(t))
	behind, err := UnupgradedAPIServers(t.Context(), kc, "192.0.2.10", "v1.37.2")
	if err != nil || len(behind) != 0 {
		t.Errorf("with a foreign slice: behind %v, %v; want none", behind, err)
	}
	// This node's address not in the slice yet (restarted a moment ago).
	admin.mu.Lock()
	trimmed := *admin.slice
	trimmed.Endpoints = trimmed.Endpoints[1:]
	admin.slice = &trimmed
	admin.mu.Unlock()
	if behind, err = UnupgradedAPIServers(t.Context(), kc, "192.0.2.10", "v1.37.2"); err != nil || len(behind) != 0 {
		t.Errorf("this node's API server not in the slice yet: behind %v, %v; want none", behind, err)
	}
	// A third control plane whose API server is down and gone from the
	// slice.
	admin.mu.Lock()
	admin.nodes = append(admin.nodes, cpNode("cp3"))
	admin.mu.Unlock()
	behind, err = UnupgradedAPIServers(t.Context(), kc, "192.0.2.10", "v1.37.2")
	if err != nil || len(behind) != 1 || !strings.Contains(behind[0], "3 control-plane Nodes, 2 API servers") {
		t.Errorf("an API server missing from the slice: behind %v, %v; want it counted", behind, err)
	}
}
