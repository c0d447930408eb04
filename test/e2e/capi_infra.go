//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The nspawn test infrastructure provider: the e2e's stand-in for a cloud,
// as Cluster API's Docker provider is in Cluster API's own tests. It is a
// real infrastructure provider of contract v1beta2 (kinds NspawnCluster,
// NspawnMachine, NspawnMachineTemplate in infrastructure.e2e.machineadm.io,
// CRDs in testdata/capi) whose machines are the harness's systemd-nspawn
// machines:
//   - NspawnCluster: reserves the first pool address as the control-plane
//     endpoint (spec.controlPlaneEndpoint, port 6443; there is no load
//     balancer, the control-plane machine takes that address) and sets
//     status.initialization.provisioned;
//   - NspawnMachine: once its Machine has a bootstrap data Secret, boots an
//     nspawn machine named after it, from the OS image the harness makes
//     (kubelet, containerd, CNI plugins, preloaded images, machineadm in
//     /usr/local/bin and the machine identity in /etc/machineadm/identity),
//     with the data Secret's value as NoCloud user data, its own address
//     from the pool with a default route to the (closed) harness bridge,
//     and the bridge CNI configuration for its pod CIDR: the machine's
//     network as a cloud would provide it; spec.image "adjoin" (adjoin.go)
//     is that image with adcli and the e2e's AD DC as name server. When the machine is up it sets
//     spec.providerID (nspawn://NAME), status.addresses and
//     status.initialization.provisioned, and, like the Docker provider,
//     writes the provider ID onto the workload cluster's Node of that name
//     (the kubelet here has no cloud provider to do it).
//
// Deleting an NspawnMachine stops and removes its machine.
const (
	infraGroup       = "infrastructure.e2e.machineadm.io"
	infraVersion     = "v1alpha1"
	providerIDPrefix = "nspawn://"
	infraFinalizer   = "infrastructure.e2e.machineadm.io/machine"
	// capiRequeue is how often the provider looks again at a machine that
	// is booting or whose Node has not registered.
	capiRequeue = 3 * time.Second
)

// capiPool is the provider's address pool on the harness bridge; the first
// one is the control-plane endpoint.
var capiPool = []string{"10.213.0.31", "10.213.0.32", "10.213.0.33", "10.213.0.34", "10.213.0.35", "10.213.0.36"}

func infraGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: infraGroup, Version: infraVersion, Kind: kind}
}

// nspawnProvider reconciles the provider's kinds in the management cluster.
type nspawnProvider struct {
	e        *env
	c        client.Client
	identity string // the identity file every machine image carries
	logf     func(string, ...any)

	// lb is the control-plane load balancer, nil when the first pool
	// address is the endpoint (providerOptions).
	lb *controlPlaneLB

	mu       sync.Mutex
	machines map[types.NamespacedName]*providerMachine
	used     map[string]bool // pool addresses in use
}

// providerOptions shape the nspawn provider.
type providerOptions struct {
	// loadBalancer: the control-plane endpoint is the load balancer
	// (capi_lb.go) on the bridge address, and control-plane machines take
	// any pool address, so a control plane of several machines can come,
	// go and be replaced. Without it the first pool address is the
	// endpoint and the one control-plane machine takes it.
	loadBalancer bool
}

// providerMachine is one booted (or booting) nspawn machine.
type providerMachine struct {
	m            *Machine
	ip           string
	booted       chan struct{} // closed when Boot returned
	bootErr      error
	controlPlane bool
	patched      bool // the Node carries the provider ID
}

// startNspawnProvider runs the provider's controllers in the test binary
// until the test ends; then every machine it booted is stopped.
func startNspawnProvider(ctx context.Context, t *testing.T, e *env, mc *managementCluster, identity string, opts providerOptions) *nspawnProvider {
	t.Helper()
	scheme, err := managementScheme()
	if err != nil {
		fatalln(t, err)
	}
	logFile := mc.log
	logger := ctrl.Log.WithName("nspawn-provider")
	mgr, err := ctrl.NewManager(mc.cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logger,
	})
	if err != nil {
		fatalln(t, err)
	}
	p := &nspawnProvider{
		e: e, c: mgr.GetClient(), identity: identity,
		logf:     func(f string, a ...any) { fmt.Fprintf(logFile, time.Now().Format("15:04:05.000 ")+f+"\n", a...) },
		machines: map[types.NamespacedName]*providerMachine{},
		used:     map[string]bool{},
	}
	mctx, cancel := context.WithCancel(ctx)
	if opts.loadBalancer {
		if p.lb, err = startControlPlaneLB(mctx, p.controlPlaneAddresses, p.logf); err != nil {
			cancel()
			fatalln(t, err)
		}
	}
	for kind, r := range map[string]reconcile.Func{"NspawnCluster": p.reconcileCluster, "NspawnMachine": p.reconcileMachine} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(infraGVK(kind))
		if err := ctrl.NewControllerManagedBy(mgr).Named(strings.ToLower(kind)).For(u).Complete(r); err != nil {
			fatalln(t, err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			p.logf("manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		p.stopAll(t)
	})
	return p
}

// controlPlaneAddresses are the addresses of the booted control-plane
// machines, the load balancer's backends.
func (p *nspawnProvider) controlPlaneAddresses() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, pm := range p.machines {
		if pm.controlPlane {
			out = append(out, pm.ip)
		}
	}
	slices.Sort(out)
	return out
}

// endpoint is the control-plane endpoint's host: the load balancer's or
// the pool's first address.
func (p *nspawnProvider) endpoint() string {
	if p.lb != nil {
		return bridgeIP
	}
	return capiPool[0]
}

// reconcileCluster provisions an NspawnCluster: its control-plane endpoint
// is the load balancer or the pool's first address.
func (p *nspawnProvider) reconcileCluster(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(infraGVK("NspawnCluster"))
	if err := p.c.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if host, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host"); host == "" {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"host": p.endpoint(), "port": int64(6443)}, "spec", "controlPlaneEndpoint")
		if err := p.c.Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
	}
	if ok, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned"); !ok {
		_ = unstructured.SetNestedField(u.Object, true, "status", "initialization", "provisioned")
		if err := p.c.Status().Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
		p.logf("cluster %s provisioned, endpoint %s:6443", req, p.endpoint())
	}
	return reconcile.Result{}, nil
}

// reconcileMachine boots, reports and deletes one NspawnMachine's machine.
func (p *nspawnProvider) reconcileMachine(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(infraGVK("NspawnMachine"))
	if err := p.c.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !u.GetDeletionTimestamp().IsZero() {
		p.release(req.NamespacedName)
		if controllerutil.RemoveFinalizer(u, infraFinalizer) {
			return reconcile.Result{}, p.c.Update(ctx, u)
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(u, infraFinalizer) {
		if err := p.c.Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
	}
	owner := ""
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == "Machine" && strings.HasPrefix(o.APIVersion, clusterv1.GroupVersion.Group+"/") {
			owner = o.Name
		}
	}
	if owner == "" {
		return reconcile.Result{}, nil // the Machine sets itself as owner: an update event follows
	}
	m := &clusterv1.Machine{}
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: owner}, m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cl := &clusterv1.Cluster{}
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: m.Spec.ClusterName}, cl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cl.Spec.Paused != nil && *cl.Spec.Paused {
		return reconcile.Result{}, nil
	}
	if m.Spec.Bootstrap.DataSecretName == nil || *m.Spec.Bootstrap.DataSecretName == "" {
		return reconcile.Result{RequeueAfter: capiRequeue}, nil
	}

	p.mu.Lock()
	pm := p.machines[req.NamespacedName]
	p.mu.Unlock()
	if pm == nil {
		ds := &corev1.Secret{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: *m.Spec.Bootstrap.DataSecretName}, ds); err != nil {
			return reconcile.Result{}, err
		}
		_, controlPlane := m.Labels[clusterv1.MachineControlPlaneLabel]
		image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
		if err := p.boot(req.NamespacedName, u.GetName(), image, m.Spec.Version, ds.Data["value"], controlPlane); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: capiRequeue}, nil
	}
	select {
	case <-pm.booted:
	default:
		return reconcile.Result{RequeueAfter: capiRequeue}, nil
	}
	if pm.bootErr != nil {
		cond := map[string]any{"type": "Ready", "status": "False", "reason": "BootFailed",
			"message": pm.bootErr.Error(), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
		_ = unstructured.SetNestedSlice(u.Object, []any{cond}, "status", "conditions")
		return reconcile.Result{}, p.c.Status().Update(ctx, u)
	}
	providerID := providerIDPrefix + u.GetName()
	if id, _, _ := unstructured.NestedString(u.Object, "spec", "providerID"); id == "" {
		_ = unstructured.SetNestedField(u.Object, providerID, "spec", "providerID")
		if err := p.c.Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
	}
	if ok, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned"); !ok {
		_ = unstructured.SetNestedField(u.Object, true, "status", "initialization", "provisioned")
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"type": "InternalIP", "address": pm.ip},
			map[string]any{"type": "Hostname", "address": u.GetName()},
		}, "status", "addresses")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Running",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}, "status", "conditions")
		if err := p.c.Status().Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
		p.logf("machine %s provisioned at %s", req, pm.ip)
	}
	if pm.patched {
		return reconcile.Result{}, nil
	}
	done, err := p.setNodeProviderID(ctx, cl, u.GetName(), providerID)
	if err != nil {
		p.logf("machine %s: provider ID on the Node: %v", req, err)
	}
	if !done {
		return reconcile.Result{RequeueAfter: capiRequeue}, nil
	}
	p.mu.Lock()
	pm.patched = true
	p.mu.Unlock()
	return reconcile.Result{}, nil
}

// boot allocates an address and boots the machine in the background.
func (p *nspawnProvider) boot(key types.NamespacedName, name, image, version string, userData []byte, controlPlane bool) error {
	if len(userData) == 0 {
		return fmt.Errorf("data Secret of %s has no value", key)
	}
	p.mu.Lock()
	ip := ""
	if controlPlane && p.lb == nil {
		if !p.used[capiPool[0]] {
			ip = capiPool[0]
		}
	} else {
		pool := capiPool[1:]
		if p.lb != nil {
			pool = capiPool
		}
		for _, a := range pool {
			if !p.used[a] {
				ip = a
				break
			}
		}
	}
	if ip == "" {
		p.mu.Unlock()
		return fmt.Errorf("no free address for %s (control plane: %v)", key, controlPlane)
	}
	p.used[ip] = true
	pm := &providerMachine{ip: ip, booted: make(chan struct{}), controlPlane: controlPlane}
	p.machines[key] = pm
	p.mu.Unlock()
	p.logf("machine %s: booting %s at %s (control plane: %v, %d bytes of user data)", key, name, ip, controlPlane, len(userData))
	go func() {
		defer close(pm.booted)
		pm.bootErr = p.bootMachine(pm, name, image, version, userData, controlPlane)
		p.logf("machine %s: boot returned: %v", key, pm.bootErr)
	}()
	return nil
}

// bootMachine makes the machine's root filesystem (the OS image; image
// "adjoin" adds adcli and the AD DC as name server, adImage), writes its
// network, identity and user data, and boots it. The image is the one of
// the Machine's Kubernetes version, as a cloud's images are built per
// version: prevKubernetesVersion gets the previous minor's kubelet and
// images (prepareUpgradeMachine's), any other version the current ones.
// The cached binaries of both are mounted read-only (e2eBinDir,
// e2ePrevBinDir) for file:// sources, such as the Systemd runtime's
// binarySources; every machine preloads the previous minor's kube-proxy
// when it is built.
func (p *nspawnProvider) bootMachine(pm *providerMachine, name, image, version string, userData []byte, controlPlane bool) error {
	e := p.e
	self := hostsEntry{IP: pm.ip, Name: name}
	hosts := append(allHosts(), self)
	// Boot is bounded by bootTimeout; the context only bounds the copy.
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	m, err := newMachine(ctx, e.baseRoot(), filepath.Join(e.repo, "hack/e2e/rootfs"), filepath.Join(e.runDir, name), name, pm.ip, hosts, p.logf)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.machines = append(e.machines, m)
	e.mu.Unlock()
	p.mu.Lock()
	pm.m = m
	p.mu.Unlock()
	// Workers' images have no agent: their configs name no agent
	// source, and they download it from machineadm-controller's agent
	// server (capi_agents.go).
	if err := e.installNodeComponents(m, !controlPlane); err != nil {
		return err
	}
	switch image {
	case "":
	case adImage:
		if err := e.layADImage(ctx, m); err != nil {
			return err
		}
	default:
		return fmt.Errorf("NspawnMachine %s: unknown spec.image %q", name, image)
	}
	images := nodeImages
	if controlPlane {
		images = append(slices.Clone(controlPlaneImages), nodeImages...)
	}
	m.BindRO = append(m.BindRO, filepath.Join(e.cache, "bin")+":"+e2eBinDir)
	prevImages := filepath.Join(e.cache, prevKubeDir, "images")
	if version == prevKubernetesVersion {
		if err := copyFile(e.prevBinPath("kubelet"), filepath.Join(m.Root, "usr/bin/kubelet"), 0o755); err != nil {
			return fmt.Errorf("the previous minor's kubelet (make e2e-prepare builds it): %w", err)
		}
		for _, n := range prevKubeImages {
			if n != "kube-proxy" && controlPlane {
				images = append(slices.Clone(images), prevImagesDir+"/"+n+".tar")
			}
		}
	}
	// The previous minor's kube-proxy on every machine when it is built:
	// a cluster created at that minor keeps its kube-proxy DaemonSet's
	// image through a control-plane upgrade, which a registry would serve
	// to the new machines.
	if _, err := os.Stat(filepath.Join(prevImages, "kube-proxy.tar")); err == nil {
		m.BindRO = append(m.BindRO,
			filepath.Join(e.cache, prevKubeDir, "bin")+":"+e2ePrevBinDir,
			prevImages+":"+prevImagesDir)
		images = append(slices.Clone(images), prevImagesDir+"/kube-proxy.tar")
	} else if version == prevKubernetesVersion {
		return fmt.Errorf("the previous minor's images are not built (make e2e-prepare builds them): %w", err)
	}
	cni := cniConfig(self)
	files := map[string][]byte{
		"/etc/machineadm-e2e/images.list":       []byte(strings.Join(images, "\n") + "\n"),
		"/etc/systemd/network/10-host0.network": []byte(capiNetworkdConfig(pm.ip)),
		cni.Path:                                []byte(cni.Content),
	}
	for path, b := range files {
		if err := m.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	if err := placeIdentity(m, p.identity); err != nil {
		return err
	}
	if err := enableCloudInit(m, userData); err != nil {
		return err
	}
	// The bootstrap runs inside cloud-init during boot; a failed one
	// leaves the system degraded, which the Cluster API side reports.
	m.MayDegrade = true
	return m.Boot(context.Background())
}

// capiNetworkdConfig is a provider machine's network: its pool address,
// a default route through the harness bridge address (kubeadm and the
// kubelet pick the default route's address; the harness namespace routes
// nothing further, so the network stays closed) and a route to every
// other pool address's pod CIDR through it.
func capiNetworkdConfig(ip string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Match]\nName=host0\n\n[Network]\nAddress=%s/24\nGateway=%s\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n", ip, bridgeIP)
	for _, a := range capiPool {
		if a != ip {
			fmt.Fprintf(&b, "\n[Route]\nDestination=%s\nGateway=%s\n", podCIDR(hostsEntry{IP: a}), a)
		}
	}
	return b.String()
}

// setNodeProviderID writes providerID onto the workload cluster's Node
// name when it has none; true once the Node carries it.
func (p *nspawnProvider) setNodeProviderID(ctx context.Context, cl *clusterv1.Cluster, name, providerID string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cs, err := workloadClient(ctx, p.c, cl)
	if err != nil {
		return false, err
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if n.Spec.ProviderID == providerID {
		return true, nil
	}
	if n.Spec.ProviderID != "" {
		return false, fmt.Errorf("node %s has provider ID %q, want %q", name, n.Spec.ProviderID, providerID)
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"providerID":%q}}`, providerID))
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return false, err
	}
	p.logf("node %s: provider ID %s", name, providerID)
	return true, nil
}

// workloadClient reaches a Cluster's workload cluster through the
// <cluster>-kubeconfig Secret Cluster API's core writes.
func workloadClient(ctx context.Context, c client.Client, cl *clusterv1.Cluster) (*kubernetes.Clientset, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: cl.Name + "-kubeconfig"}, s); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["value"])
	if err != nil {
		return nil, fmt.Errorf("secret %s-kubeconfig: %w", cl.Name, err)
	}
	cfg.Timeout = 15 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// release stops a deleted NspawnMachine's machine and frees its address.
func (p *nspawnProvider) release(key types.NamespacedName) {
	p.mu.Lock()
	pm := p.machines[key]
	delete(p.machines, key)
	p.mu.Unlock()
	if pm == nil {
		return
	}
	<-pm.booted
	if pm.m != nil {
		if err := p.e.stopMachine(pm.m); err != nil {
			p.logf("machine %s: stop: %v", key, err)
		}
	}
	p.mu.Lock()
	delete(p.used, pm.ip)
	p.mu.Unlock()
}

// kill SIGKILLs the machine of the NspawnMachine name (no shutdown: the
// kubelet, the API server and etcd vanish at once, as in a host's
// crash). Its NspawnMachine stays; deleting it cleans up as usual.
func (p *nspawnProvider) kill(name string) error {
	p.mu.Lock()
	pm := p.machines[types.NamespacedName{Namespace: capiNS, Name: name}]
	p.mu.Unlock()
	if pm == nil {
		return fmt.Errorf("no machine %s", name)
	}
	<-pm.booted
	m := pm.m
	if m == nil || m.cmd == nil || m.cmd.Process == nil {
		return fmt.Errorf("machine %s is not running", name)
	}
	if m.leader > 0 {
		_ = syscall.Kill(m.leader, syscall.SIGKILL)
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-m.exited:
		p.logf("machine %s: killed", name)
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("machine %s: still running 30s after SIGKILL", name)
	}
}

// stopAll stops every machine the provider booted.
func (p *nspawnProvider) stopAll(t *testing.T) {
	p.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(p.machines))
	for k := range p.machines {
		keys = append(keys, k)
	}
	p.mu.Unlock()
	for _, k := range keys {
		p.release(k)
	}
}

// dumpMachines logs the end of each machine's cloud-init output and its
// report, after a failure.
func (p *nspawnProvider) dumpMachines(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	var ms []*Machine
	for _, pm := range p.machines {
		if pm.m != nil {
			ms = append(ms, pm.m)
		}
	}
	p.mu.Unlock()
	for _, m := range ms {
		out, _ := m.ReadFile("/var/log/cloud-init-output.log")
		rep, _ := m.ReadFile(reportPath)
		t.Logf("machine %s: cloud-init output (last 25 lines):\n%s\nreport: %s", m.Name, tail(string(out), 25), tail(string(rep), 15))
	}
}

// workerMachine is the machine of the Cluster's one worker Machine (the
// Machine without the control-plane label), once it booted.
func (p *nspawnProvider) workerMachine(ctx context.Context, c client.Client) (*Machine, error) {
	ms := &clusterv1.MachineList{}
	if err := c.List(ctx, ms, client.InNamespace(capiNS), client.MatchingLabels{clusterv1.ClusterNameLabel: capiCluster}); err != nil {
		return nil, err
	}
	for _, m := range ms.Items {
		if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp || !m.DeletionTimestamp.IsZero() {
			continue
		}
		p.mu.Lock()
		pm := p.machines[types.NamespacedName{Namespace: capiNS, Name: m.Spec.InfrastructureRef.Name}]
		p.mu.Unlock()
		if pm == nil {
			return nil, fmt.Errorf("worker Machine %s: no machine %s", m.Name, m.Spec.InfrastructureRef.Name)
		}
		<-pm.booted
		if pm.m == nil {
			return nil, fmt.Errorf("worker Machine %s: machine %s did not boot: %v", m.Name, m.Spec.InfrastructureRef.Name, pm.bootErr)
		}
		return pm.m, nil
	}
	return nil, fmt.Errorf("no worker Machine in Cluster %s", capiCluster)
}
