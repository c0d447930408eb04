//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/machineadm/machineadm/internal/testsambadc"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
)

// Names of TestClusterAPI's objects (namespace default).
const (
	capiNS      = "default"
	capiCluster = "e2e"
	capiCP      = "e2e-cp-0"
	capiMD      = "e2e-workers"
	capiBad     = "e2e-wrong-recipient"
	// capiADJoin is a worker that joins the AD domain (adjoin.go) before
	// the cluster; its name is its computer account's (15 characters at most).
	capiADJoin       = "e2e-adjoin"
	capiADJoinSecret = "e2e-ad-join"
	capiUpTimeout    = 14 * time.Minute
)

// TestClusterAPI is the Cluster API e2e (issue 11): cp1, bootstrapped by
// machineadm as in scenario 1, is the management cluster (capi_mgmt.go);
// it runs Cluster API's own core controllers and machineadm-controller as
// Deployments, and the nspawn test infrastructure provider (capi_infra.go,
// in the test binary) creates a workload cluster of nspawn machines:
//   - the controllers' pods Running and Ready on cp1, and never restarted;
//   - one control-plane Machine and a MachineDeployment of two workers:
//     every Machine Running with a nodeRef, the Nodes Ready,
//     BootstrapSucceeded True on every MachineadmConfig;
//   - a worker Machine whose config has spec.host.domainJoin, its
//     password from a Secret: it joins the samba AD DC in the harness
//     namespace (adjoin.go) with adcli, its computer account is in the
//     DC's database and its Node is Ready;
//   - the MachineDeployment scaled to three: a third Node Ready;
//   - a Machine whose config seals to a recipient its image has no key
//     for: BootstrapSucceeded False with class VerificationFailed (posted
//     to the report receiver on cp1), and no Node;
//   - no data Secret holds a PEM private key, a bootstrap token, a
//     certificate key or any of the cluster's CA keys in the clear, in any
//     encoding (pkg/capi/leakcheck).
//
// The machines of earlier tests are stopped first; cp1 is stopped at the
// end. Lines "TIMING capi-…" are the figures: the management cluster up,
// its controllers ready, Machine creation to its Node Ready, the Cluster's
// creation to all three Nodes Ready, the scale.
func TestClusterAPI(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	start := time.Now()

	// The AD DC comes up while the management cluster does.
	var ad struct {
		dc       *testsambadc.DC
		password string
		err      error
	}
	dcDone := make(chan struct{})
	dcStart := time.Now()
	go func() {
		defer close(dcDone)
		ad.dc, ad.password, ad.err = e.startADDC(ctx)
		timing(t, "capi-ad-dc-up", time.Since(dcStart))
	}()
	t.Cleanup(func() {
		<-dcDone
		if ad.dc != nil {
			ad.dc.Stop()
		}
	})
	ce := e.startCAPI(ctx, t, providerOptions{})
	mc, recipient, p := ce.mc, ce.recipient, ce.p
	_, wrongRecipient := e.capiKeygen(ctx, t, "elsewhere")

	<-dcDone
	if ad.err != nil {
		fatalln(t, ad.err)
	}
	t.Logf("AD DC %s (%s) at %s: provisioned in %s, serving after %s", adDCName, adRealm, adDCIP,
		ad.dc.Provisioned.Round(time.Second), ad.dc.Serving.Round(time.Second))
	c := mc.c
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				fatalf(t, "create %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	created := time.Now()
	create(
		capiClusterObject(),
		infraObject("NspawnCluster", capiCluster, nil),
		&bootstrapv1.MachineadmConfig{
			ObjectMeta: metav1.ObjectMeta{Name: capiCP, Namespace: capiNS},
			Spec:       capiConfigSpec(t, recipient, true),
		},
		infraObject("NspawnMachine", capiCP, nil),
		capiMachine(capiCP, true),
		&bootstrapv1.MachineadmConfigTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: capiMD, Namespace: capiNS},
			Spec: bootstrapv1.MachineadmConfigTemplateSpec{Template: bootstrapv1.MachineadmConfigTemplateResource{
				Spec: capiConfigSpec(t, recipient, false),
			}},
		},
		infraObject("NspawnMachineTemplate", capiMD, map[string]any{"template": map[string]any{"spec": map[string]any{}}}),
		&clusterv1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: capiMD, Namespace: capiNS},
			Spec: clusterv1.MachineDeploymentSpec{
				ClusterName: capiCluster,
				Replicas:    ptrTo(int32(2)),
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"pool": capiMD}},
				Template: clusterv1.MachineTemplateSpec{
					ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"pool": capiMD}},
					Spec: clusterv1.MachineSpec{
						ClusterName: capiCluster,
						Version:     kubernetesVersion,
						Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: bootstrapv1.GroupVersion.Group, Kind: "MachineadmConfigTemplate", Name: capiMD}},
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraGroup, Kind: "NspawnMachineTemplate", Name: capiMD},
					},
				},
			},
		},
		// The Machine whose config seals to a key its image lacks.
		&bootstrapv1.MachineadmConfig{
			ObjectMeta: metav1.ObjectMeta{Name: capiBad, Namespace: capiNS},
			Spec:       capiConfigSpec(t, wrongRecipient, false),
		},
		infraObject("NspawnMachine", capiBad, nil),
		capiMachine(capiBad, false),
		// The domain-joining worker, its password from a Secret.
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: capiADJoinSecret, Namespace: capiNS},
			StringData: map[string]string{"password": ad.password},
		},
		&bootstrapv1.MachineadmConfig{
			ObjectMeta: metav1.ObjectMeta{Name: capiADJoin, Namespace: capiNS},
			Spec:       capiADJoinSpec(t, recipient),
		},
		infraObject("NspawnMachine", capiADJoin, map[string]any{"image": adImage}),
		capiMachine(capiADJoin, false),
	)
	t.Logf("Cluster API objects created %s after the start", time.Since(start).Round(time.Second))

	w := &capiWatcher{c: c, tokens: map[string]string{}, allowHex: servedAgentDigests(t, e)}
	// 1 control-plane Machine + 2 workers + the domain-joining worker
	// Running with Ready Nodes.
	good, err := w.waitMachines(ctx, 4, capiUpTimeout)
	if err != nil {
		fatalln(t, err)
	}
	allReady := created
	for _, m := range good {
		timing(t, "capi-machine-to-node-ready-"+m.name, m.ready.Sub(m.created))
		if m.ready.After(allReady) {
			allReady = m.ready
		}
	}
	timing(t, "capi-cluster-create-to-4-nodes-ready", allReady.Sub(created))
	w.checkConfigs(ctx, t, good)
	if n := p.checkAgentDownloads(t); n < 2 {
		errorf(t, "%d workers downloaded their agent from the management cluster, want at least 2", n)
	}
	// The domain-joining worker's computer account is in the DC's database.
	if names, err := ad.dc.Computers(ctx); err != nil {
		errorln(t, err)
	} else if !slices.Contains(names, strings.ToUpper(capiADJoin)+"$") {
		errorf(t, "the DC's computer accounts %q lack %s$", names, strings.ToUpper(capiADJoin))
	} else {
		t.Logf("the DC's computer accounts: %q", names)
	}

	// Scale the MachineDeployment to 3.
	md := &clusterv1.MachineDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: capiMD}, md); err != nil {
		fatalln(t, err)
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptrTo(int32(3))
	scaled := time.Now()
	if err := c.Patch(ctx, md, patch); err != nil {
		fatalln(t, err)
	}
	all, err := w.waitMachines(ctx, 5, 8*time.Minute)
	if err != nil {
		fatalln(t, err)
	}
	for _, m := range all {
		if m.created.After(scaled) {
			timing(t, "capi-scale-machine-to-node-ready-"+m.name, m.ready.Sub(m.created))
		}
	}
	timing(t, "capi-scale-to-3-to-node-ready", time.Since(scaled))
	w.checkConfigs(ctx, t, all)

	// The wrong recipient: VerificationFailed reaches the config before any
	// Node exists.
	if err := w.waitBootstrapFailed(ctx, capiBad, "VerificationFailed", 5*time.Minute); err != nil {
		fatalln(t, err)
	}
	if cfg, err := w.configOf(ctx, capiBad); err == nil {
		if c := meta(cfg, "BootstrapSucceeded"); c != nil {
			t.Logf("MachineadmConfig %s: BootstrapSucceeded=%s reason=%s message=%q (through the report receiver on %s)", capiBad, c.Status, c.Reason, c.Message, capiReportAddr)
		}
	}
	bad := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: capiBad}, bad); err != nil {
		fatalln(t, err)
	}
	if bad.Status.NodeRef.Name != "" {
		errorf(t, "Machine %s has a nodeRef %q", capiBad, bad.Status.NodeRef.Name)
	}
	if cs, err := w.workload(ctx); err == nil {
		if _, err := cs.CoreV1().Nodes().Get(ctx, capiBad, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			errorf(t, "Node %s: want NotFound, got %v", capiBad, err)
		}
	}

	// No data Secret holds a secret in the clear, nor the domain password.
	w.checkLeaks(ctx, t, ad.password)
	// The controllers ran the whole test in the management cluster.
	if err := mc.checkControllers(ctx, t); err != nil {
		errorln(t, err)
	}
	timing(t, "capi-total", time.Since(start))
}

// capiEnv is the Cluster API tests' common setup.
type capiEnv struct {
	mc        *managementCluster
	p         *nspawnProvider
	recipient string // the recipient of the identity every machine image carries
}

// startCAPI stops the machines of earlier tests, starts the management
// cluster (Cluster API's core controllers and machineadm-controller, with
// the control-plane provider), makes the machines' identity and starts
// the nspawn provider. If the test fails, the controllers' and the
// provider's logs, the Cluster API objects and the machines' cloud-init
// output are logged at its end.
func (e *env) startCAPI(ctx context.Context, t *testing.T, opts providerOptions) *capiEnv {
	t.Helper()
	stopAllMachines(t, e)
	mc := e.startManagementCluster(ctx, t)
	identity, recipient := e.capiKeygen(ctx, t, "image")
	p := startNspawnProvider(ctx, t, e, mc, identity, opts)
	// Registered after the provider's cleanup, so it runs before the
	// machines stop.
	t.Cleanup(func() {
		if t.Failed() {
			mc.dumpLogs(t)
			t.Logf("nspawn provider log:\n%s", mc.logTail("nspawn-provider", 60))
			dumpCAPIState(context.Background(), t, mc.c)
			p.dumpMachines(t)
		}
	})
	return &capiEnv{mc: mc, p: p, recipient: recipient}
}

func ptrTo[T any](v T) *T { return &v }

// capiClusterObject is the test's Cluster: no control-plane provider, the
// nspawn provider's NspawnCluster as infrastructure.
func capiClusterObject() *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: capiCluster, Namespace: capiNS},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{podSubnet}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}},
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraGroup, Kind: "NspawnCluster", Name: capiCluster},
		},
	}
}

// capiKeygen makes an hpke identity with machineadm keygen and returns its
// file and recipient. A test that starts its Cluster API environment after
// another in the same run (TestControlPlaneProvider after TestClusterAPI)
// gets a new file beside the earlier one: keygen never replaces one.
func (e *env) capiKeygen(ctx context.Context, t *testing.T, name string) (string, string) {
	t.Helper()
	path := unusedPath(filepath.Join(e.runDir, "capi-identity-"+name))
	out, err := exec.CommandContext(ctx, e.machineadm, "keygen", "--type", "hpke", "--out", path).Output()
	if err != nil {
		fatalf(t, "machineadm keygen: %v", exitDetail(err))
	}
	return path, strings.TrimSpace(string(out))
}

// capiConfigSpec is the MachineadmConfig of the e2e machines: what a
// kubelet 1.37 in an nspawn machine needs (spec.go), secrets sealed to
// recipient; the control plane's agent is in its image, workers name no
// agent source and download the build machineadm-controller serves.
func capiConfigSpec(t *testing.T, recipient string, controlPlane bool) bootstrapv1.MachineadmConfigSpec {
	t.Helper()
	raw := func(v any) *apiextensionsv1.JSON {
		b, err := json.Marshal(v)
		if err != nil {
			fatalln(t, err)
		}
		return &apiextensionsv1.JSON{Raw: b}
	}
	rc := upstreamResolvConf()
	s := bootstrapv1.MachineadmConfigSpec{
		Format:     bootstrapv1.FormatCloudConfig,
		Agent:      bootstrapv1.AgentSource{URL: "file:///usr/local/bin/machineadm"},
		Recipients: []string{recipient},
		Kubernetes: bootstrapv1.KubernetesSpec{ImageRepository: imageRepository},
		Node: bootstrapv1.NodeSpec{
			IgnorePreflightErrors: ignoredPreflight,
			Kubelet:               bootstrapv1.Kubelet{Config: raw(kubeletConfig())},
		},
		Host: bootstrapv1.HostSpec{
			Sysctl: map[string]string{"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"},
			Files:  []bootstrapv1.File{{Path: rc.Path, Mode: rc.Mode, Content: rc.Content}},
			Containerd: &bootstrapv1.Containerd{
				CgroupDriver: cgroupDriver, SandboxImage: pauseImage, RestrictOOMScoreAdj: true,
				Runtimes: []bootstrapv1.Runtime{{Name: "runc", Options: raw(map[string]any{"NoNewKeyring": true})}},
			},
		},
	}
	if controlPlane {
		s.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
	} else {
		s.Agent = bootstrapv1.AgentSource{}
	}
	return s
}

// capiADJoinSpec is capiConfigSpec of a worker that joins the e2e's AD
// domain with adcli first, the password from Secret capiADJoinSecret.
func capiADJoinSpec(t *testing.T, recipient string) bootstrapv1.MachineadmConfigSpec {
	s := capiConfigSpec(t, recipient, false)
	s.Host.DomainJoin = &bootstrapv1.DomainJoin{
		Domain:           adDomain,
		DomainController: adDCIP,
		Credentials: &bootstrapv1.DomainCredentials{
			Username: "Administrator",
			PasswordFrom: bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{
				Name: capiADJoinSecret, Key: "password"}},
		},
		Linux: &bootstrapv1.LinuxDomainJoin{WriteKrb5Conf: true},
	}
	return s
}

// capiMachine is a Machine with a MachineadmConfig and an NspawnMachine of
// the same name.
func capiMachine(name string, controlPlane bool) *clusterv1.Machine {
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: capiNS, Labels: map[string]string{}},
		Spec: clusterv1.MachineSpec{
			ClusterName: capiCluster,
			Version:     kubernetesVersion,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "MachineadmConfig", Name: name}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraGroup, Kind: "NspawnMachine", Name: name},
		},
	}
	if controlPlane {
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	return m
}

// infraObject is an object of the test infrastructure provider.
func infraObject(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(infraGVK(kind))
	u.SetName(name)
	u.SetNamespace(capiNS)
	if spec == nil {
		spec = map[string]any{}
	}
	u.Object["spec"] = spec
	return u
}

// capiWatcher follows the Cluster's Machines and the workload cluster.
type capiWatcher struct {
	c      client.Client
	cs     *kubernetes.Clientset
	tokens map[string]string // bootstrap tokens seen in the workload cluster, by ID
	// allowHex are the served agent builds' digests: in the bootstrap
	// data, 64 hex digits that are not a certificate key.
	allowHex []string
}

// upMachine is a Machine Running with a Ready Node.
type upMachine struct {
	name, node     string
	created, ready time.Time
}

func (w *capiWatcher) workload(ctx context.Context) (*kubernetes.Clientset, error) {
	if w.cs != nil {
		return w.cs, nil
	}
	cl := &clusterv1.Cluster{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: capiCluster}, cl); err != nil {
		return nil, err
	}
	cs, err := workloadClient(ctx, w.c, cl)
	if err == nil {
		w.cs = cs
	}
	return cs, err
}

// collectTokens remembers the bootstrap tokens now in the workload
// cluster: the leak check looks for them (they are deleted once their
// Machine has a Node).
func (w *capiWatcher) collectTokens(ctx context.Context) {
	cs, err := w.workload(ctx)
	if err != nil {
		return
	}
	l, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "type=bootstrap.kubernetes.io/token"})
	if err != nil {
		return
	}
	for _, s := range l.Items {
		id, sec := string(s.Data["token-id"]), string(s.Data["token-secret"])
		if id != "" && sec != "" {
			w.tokens[id] = id + "." + sec
		}
	}
}

// waitMachines waits until want Machines of the Cluster other than the
// wrong-recipient one are Running with a nodeRef whose Node is Ready.
func (w *capiWatcher) waitMachines(ctx context.Context, want int, timeout time.Duration) ([]upMachine, error) {
	var up []upMachine
	var last string
	err := wait.PollUntilContextTimeout(ctx, 3*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		w.collectTokens(ctx)
		ms := &clusterv1.MachineList{}
		if err := w.c.List(ctx, ms, client.InNamespace(capiNS), client.MatchingLabels{clusterv1.ClusterNameLabel: capiCluster}); err != nil {
			last = err.Error()
			return false, nil
		}
		up = nil
		var state []string
		for _, m := range ms.Items {
			if m.Name == capiBad {
				continue
			}
			s := fmt.Sprintf("%s phase=%s node=%q", m.Name, m.Status.Phase, m.Status.NodeRef.Name)
			if m.Status.Phase == string(clusterv1.MachinePhaseRunning) && m.Status.NodeRef.Name != "" {
				if cs, err := w.workload(ctx); err == nil {
					if n, err := cs.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{}); err == nil {
						if r := nodeReadyTime(n); !r.IsZero() {
							up = append(up, upMachine{name: m.Name, node: n.Name, created: m.CreationTimestamp.Time, ready: r})
							s += " ready"
						}
					}
				}
			}
			state = append(state, s)
		}
		sort.Strings(state)
		last = strings.Join(state, "; ")
		return len(up) >= want, nil
	})
	if err != nil {
		return up, fmt.Errorf("%d Machines Running with Ready Nodes not reached within %s (last: %s): %w", want, timeout, last, err)
	}
	return up, nil
}

// checkConfigs checks BootstrapSucceeded True on the configs of the
// Machines that are up (the condition follows the Node annotation within
// the controller's poll).
func (w *capiWatcher) checkConfigs(ctx context.Context, t *testing.T, up []upMachine) {
	t.Helper()
	for _, m := range up {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			cfg, err := w.configOf(ctx, m.name)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			c := meta(cfg, "BootstrapSucceeded")
			last = fmt.Sprintf("%+v", c)
			return c != nil && c.Status == metav1.ConditionTrue, nil
		})
		if err != nil {
			errorf(t, "Machine %s: BootstrapSucceeded not True: %s: %v", m.name, last, err)
		}
	}
}

// configOf returns the MachineadmConfig of a Machine.
func (w *capiWatcher) configOf(ctx context.Context, machine string) (*bootstrapv1.MachineadmConfig, error) {
	m := &clusterv1.Machine{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: machine}, m); err != nil {
		return nil, err
	}
	cfg := &bootstrapv1.MachineadmConfig{}
	err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg)
	return cfg, err
}

func meta(cfg *bootstrapv1.MachineadmConfig, t string) *metav1.Condition {
	for i := range cfg.Status.Conditions {
		if cfg.Status.Conditions[i].Type == t {
			return &cfg.Status.Conditions[i]
		}
	}
	return nil
}

// waitBootstrapFailed waits for BootstrapSucceeded False with reason on
// the config.
func (w *capiWatcher) waitBootstrapFailed(ctx context.Context, name, reason string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		cfg := &bootstrapv1.MachineadmConfig{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: name}, cfg); err != nil {
			last = err.Error()
			return false, nil
		}
		c := meta(cfg, "BootstrapSucceeded")
		last = fmt.Sprintf("%+v outcome=%+v", c, cfg.Status.Outcome)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason, nil
	})
	if err != nil {
		return fmt.Errorf("MachineadmConfig %s: BootstrapSucceeded False/%s not reached within %s (last: %s): %w", name, reason, timeout, last, err)
	}
	return nil
}

// checkLeaks runs pkg/capi/leakcheck, with its token and certificate-key
// shapes on, over every data Secret of the namespace, looking besides for
// the cluster's CA keys, the certificate key and every bootstrap token
// seen in the workload cluster.
func (w *capiWatcher) checkLeaks(ctx context.Context, t *testing.T, domainPassword string) {
	t.Helper()
	known := [][]byte{[]byte(domainPassword)}
	names := []string{"the domain join password"}
	for _, s := range []string{"ca", "etcd", "proxy", "sa"} {
		sec := &corev1.Secret{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: capiCluster + "-" + s}, sec); err != nil {
			errorf(t, "secret %s-%s: %v", capiCluster, s, err)
			continue
		}
		known = append(known, sec.Data["tls.key"])
		names = append(names, sec.Name+" tls.key")
	}
	ck := &corev1.Secret{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: capiCluster + "-machineadm-certificate-key"}, ck); err == nil {
		known = append(known, ck.Data["value"])
		names = append(names, "certificate key")
	}
	for _, tok := range w.tokens {
		known = append(known, []byte(tok))
	}
	names = append(names, fmt.Sprintf("%d bootstrap tokens", len(w.tokens)))
	if len(w.tokens) == 0 {
		errorf(t, "leak check: no bootstrap token was ever seen in the workload cluster")
	}
	cfgs := &bootstrapv1.MachineadmConfigList{}
	if err := w.c.List(ctx, cfgs, client.InNamespace(capiNS)); err != nil {
		fatalln(t, err)
	}
	checked := 0
	for _, cfg := range cfgs.Items {
		if cfg.Status.DataSecretName == "" {
			errorf(t, "MachineadmConfig %s has no data Secret", cfg.Name)
			continue
		}
		ds := &corev1.Secret{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cfg.Status.DataSecretName}, ds); err != nil {
			errorln(t, err)
			continue
		}
		for k, v := range ds.Data {
			if f := leakcheck.Check(v, leakcheck.Options{Known: known, AllowHex: w.allowHex}); len(f) > 0 {
				errorf(t, "data Secret %s key %s holds secrets in the clear: %v", ds.Name, k, f)
			}
		}
		for k, v := range ds.Annotations {
			if f := leakcheck.Check([]byte(v), leakcheck.Options{Known: known, AllowHex: w.allowHex}); len(f) > 0 {
				errorf(t, "data Secret %s annotation %s holds secrets in the clear: %v", ds.Name, k, f)
			}
		}
		checked++
	}
	t.Logf("leak check: %d data Secrets clean of PEM private keys, token and certificate-key shapes and %s", checked, strings.Join(names, ", "))
}

// dumpCAPIState logs the Cluster API objects' state after a failure.
func dumpCAPIState(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: capiNS, Name: capiCluster}, cl); err == nil {
		b, _ := json.Marshal(cl.Status)
		t.Logf("Cluster %s status: %s", cl.Name, b)
	}
	ms := &clusterv1.MachineList{}
	if err := c.List(ctx, ms, client.InNamespace(capiNS)); err == nil {
		for _, m := range ms.Items {
			var conds []string
			for _, x := range m.Status.Conditions {
				if x.Status != metav1.ConditionTrue {
					conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", x.Type, x.Status, x.Reason, x.Message))
				}
			}
			t.Logf("Machine %s phase=%s node=%q %s", m.Name, m.Status.Phase, m.Status.NodeRef.Name, strings.Join(conds, " "))
		}
	}
	cfgs := &bootstrapv1.MachineadmConfigList{}
	if err := c.List(ctx, cfgs, client.InNamespace(capiNS)); err == nil {
		for _, cfg := range cfgs.Items {
			var conds []string
			for _, x := range cfg.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", x.Type, x.Status, x.Reason, x.Message))
			}
			t.Logf("MachineadmConfig %s data=%q %s", cfg.Name, cfg.Status.DataSecretName, strings.Join(conds, " "))
		}
	}
}
