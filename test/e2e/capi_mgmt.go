//go:build e2e

package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	controlplanev1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// managementCluster is the Cluster API e2e's management cluster: the
// cluster of a control-plane machine named cp1 that `machineadm bootstrap`
// initialises exactly as in scenario 1 (CA set from `machineadm pki
// init`, spec and secrets delivered as files). It runs the controllers as
// Deployments, from images imported into cp1's containerd at boot like
// every other e2e image:
//   - Cluster API's core manager (Cluster, Machine, MachineSet,
//     MachineDeployment, … controllers and their webhooks), built by
//     components.sh from sigs.k8s.io/cluster-api (module
//     hack/e2e/tools/capi) and deployed from the core components its
//     release kustomization renders (components.sh), with a serving
//     certificate the test makes in place of cert-manager's;
//   - machineadm-controller from `make image-controller`'s image, deployed
//     from contrib/cluster-api/bootstrap-components.yaml as committed, its
//     report receiver on cp1's address.
//
// The nspawn test infrastructure provider (capi_infra.go) runs in the test
// binary, which has to drive systemd-nspawn on the host, and reaches the
// management cluster through cp1's admin kubeconfig, like every client of
// the test.
type managementCluster struct {
	m   *Machine
	cfg *rest.Config // cp1's admin.conf, no client timeout (watches)
	c   client.Client
	cs  *kubernetes.Clientset
	dir string   // logs (0700)
	log *os.File // dir/nspawn-provider.log
}

// Where the management cluster's pieces come from and what they are
// called.
const (
	// localImagesDir is where the repository's bin/images (make
	// image-controller) is mounted read-only in the management machine.
	localImagesDir = "/var/lib/machineadm-e2e/local-images"
	// capiImageName is the cache's image of Cluster API's core manager
	// (images.sh), named like Cluster API's own.
	capiImageName = "cluster-api-controller"
	// capiWebhookPort is where Cluster API's manager serves its webhooks
	// (its --webhook-port default) on cp1's network namespace.
	capiWebhookPort = 9443
	// capiHealthPort moves Cluster API's manager's health probes off
	// :9440, which machineadm-controller's Deployment takes: both run in
	// cp1's network namespace, where a port is taken once.
	capiHealthPort = 9441
	// capiReportPort is machineadm-controller's report receiver.
	capiReportPort = 9445
	// capiWebhookSecret is the Secret Cluster API's Deployment mounts its
	// serving certificate from (cert-manager's Certificate would fill it).
	capiWebhookSecret = "capi-webhook-service-cert"
	// e2eFieldManager creates the management cluster's objects.
	e2eFieldManager = "machineadm-e2e"
)

// Bounds of the management cluster's start.
const (
	crdEstablishedTimeout   = time.Minute
	controllersReadyTimeout = 4 * time.Minute
	webhookReadyTimeout     = 90 * time.Second
)

// capiReportAddr is machineadm-controller's report receiver: cp1's
// address on the harness bridge, which the workload machines reach.
var capiReportAddr = net.JoinHostPort(cp1.IP, strconv.Itoa(capiReportPort))

// capiController is one controller Deployment in the management cluster.
type capiController struct{ namespace, name string }

var capiControllers = []capiController{
	{"capi-system", "capi-controller-manager"},
	{"machineadm-system", "machineadm-controller"},
}

// managementScheme knows the core, CRD, Cluster API core and machineadm
// bootstrap and control-plane types.
func managementScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme, controlplanev1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// controllerImage is `make image-controller`'s image tarball.
func (e *env) controllerImage() string {
	return getenv("MACHINEADM_CONTROLLER_IMAGE", filepath.Join(e.repo, "bin/images/machineadm-controller.tar"))
}

// startManagementCluster boots cp1, bootstraps its cluster with
// machineadm, installs Cluster API's core components, machineadm's
// bootstrap components and the test provider's CRDs, and waits until both
// controllers run and Cluster API's webhooks answer the API server. cp1
// is stopped when the test ends, and its directory moved aside so that a
// later test boots its own cp1.
func (e *env) startManagementCluster(ctx context.Context, t *testing.T) *managementCluster {
	t.Helper()
	coreComponents := filepath.Join(e.cache, "capi/core-components.yaml")
	bootstrapComponents := filepath.Join(e.repo, "contrib/cluster-api/bootstrap-components.yaml")
	for _, p := range []string{coreComponents, e.imagePath(capiImageName), e.controllerImage(), bootstrapComponents} {
		if _, err := os.Stat(p); err != nil {
			fatalf(t, "missing %s: run `make image-controller` and `make e2e-prepare` first", p)
		}
	}
	capiRef, err := imageRef(e.imagePath(capiImageName))
	if err != nil {
		fatalln(t, err)
	}
	controllerRef, err := imageRef(e.controllerImage())
	if err != nil {
		fatalln(t, err)
	}
	mc := &managementCluster{dir: filepath.Join(e.runDir, "capi-management")}
	if err := os.MkdirAll(mc.dir, 0o700); err != nil {
		fatalln(t, err)
	}
	// controller-runtime's log (the test's clients and the nspawn
	// provider's manager) and the provider's own lines.
	logFile, err := os.OpenFile(filepath.Join(mc.dir, "nspawn-provider.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		fatalln(t, err)
	}
	mc.log = logFile
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))
	// Registered before the boot, so a failed boot is cleaned up too.
	t.Cleanup(func() {
		mc.stop(t, e)
		logFile.Close()
	})

	// cp1 and its cluster, as scenario 1 makes them; the controllers'
	// images preloaded besides the control plane's.
	start := time.Now()
	// A management cluster made earlier in this run (TestClusterAPI's before
	// TestClusterctl's) left its CA set: each gets a new one.
	secrets, err := e.makeSecrets(ctx, unusedPath(filepath.Join(e.runDir, "capi-management-pki")))
	if err != nil {
		fatalln(t, err)
	}
	images := append(slices.Clone(controlPlaneImages), nodeImages...)
	images = append(images, capiImageName, localImagesDir+"/"+filepath.Base(e.controllerImage()))
	ms := e.bootMachinesWith(ctx, t, bootOptions{prepare: func(m *Machine) error {
		m.BindRO = append(m.BindRO, filepath.Dir(e.controllerImage())+":"+localImagesDir)
		if err := m.WriteFile("/etc/systemd/network/10-host0.network", []byte(managementNetworkdConfig()), 0o644); err != nil {
			return err
		}
		return m.WriteFile("/etc/machineadm-e2e/images.list", []byte(strings.Join(images, "\n")+"\n"), 0o644)
	}}, cp1)
	mc.m = ms[0]
	if err := deliver(mc.m, controlPlaneSpec(cp1, v1alpha1.ActionInit, ""), secrets); err != nil {
		fatalln(t, err)
	}
	mustBootstrap(ctx, t, mc.m, initPhases, true)
	if mc.cs, err = adminClient(mc.m); err != nil {
		fatalln(t, err)
	}
	if _, err := waitNodesReady(ctx, mc.cs, readyTimeout, cp1.Name); err != nil {
		dumpDiagnostics(ctx, t, mc.m)
		fatalln(t, err)
	}
	if err := waitStaticPodsRunning(ctx, mc.cs, cp1.Name, podTimeout); err != nil {
		dumpDiagnostics(ctx, t, mc.m)
		fatalln(t, err)
	}
	// The controllers reach the API server through the kubernetes
	// Service's ClusterIP (in-cluster configuration), which kube-proxy's
	// rules on cp1 route.
	if err := waitDaemonPodsRunning(ctx, mc.cs, "kube-proxy", podTimeout, cp1.Name); err != nil {
		dumpDiagnostics(ctx, t, mc.m)
		fatalln(t, err)
	}
	if mc.cfg, err = clientcmd.BuildConfigFromFlags("", filepath.Join(mc.m.Root, "etc/kubernetes/admin.conf")); err != nil {
		fatalln(t, err)
	}
	scheme, err := managementScheme()
	if err != nil {
		fatalln(t, err)
	}
	if mc.c, err = client.New(mc.cfg, client.Options{Scheme: scheme}); err != nil {
		fatalln(t, err)
	}
	timing(t, "capi-management-cluster-up", time.Since(start))

	// The controllers.
	deployed := time.Now()
	ca, cert, key, err := webhookServingCert()
	if err != nil {
		fatalln(t, err)
	}
	core, err := readManifests(coreComponents, nil)
	if err != nil {
		fatalln(t, err)
	}
	core, err = capiCoreComponents(core, capiRef, ca, cert, key)
	if err != nil {
		fatalln(t, err)
	}
	// The report receiver's base URL, as a user gives it to clusterctl
	// init: cp1's address, where the receiver listens on the host network.
	boot, err := readManifests(bootstrapComponents, map[string]string{"MACHINEADM_REPORT_URL": "http://" + capiReportAddr})
	if err != nil {
		fatalln(t, err)
	}
	boot, err = machineadmComponents(boot, controllerRef)
	if err != nil {
		fatalln(t, err)
	}
	infra, err := readManifests(filepath.Join(e.repo, "test/e2e/testdata/capi"), nil)
	if err != nil {
		fatalln(t, err)
	}
	if err := mc.install(ctx, slices.Concat(core, boot, infra)); err != nil {
		fatalln(t, err)
	}
	if err := mc.waitControllers(ctx, controllersReadyTimeout); err != nil {
		mc.dumpLogs(t)
		fatalln(t, err)
	}
	if err := mc.waitWebhooks(ctx, webhookReadyTimeout); err != nil {
		mc.dumpLogs(t)
		fatalln(t, err)
	}
	timing(t, "capi-management-controllers-ready", time.Since(deployed))
	if err := mc.checkControllers(ctx, t); err != nil {
		fatalln(t, err)
	}
	return mc
}

// managementNetworkdConfig is cp1's network in the Cluster API e2e: the
// scenarios' (networkdConfig) plus a default route through the harness
// bridge address, as the workload machines have (capiNetworkdConfig).
// Host-network pods, the controllers, reach the API server at the
// kubernetes Service's ClusterIP: kube-proxy's rules rewrite it to cp1's
// address only after the kernel found a route for it, and without one
// connect fails at once ("network is unreachable"). The harness's
// namespace routes nothing further, so the network stays closed.
func managementNetworkdConfig() string {
	return strings.Replace(networkdConfig(cp1.IP, allHosts()), "[Network]\n", "[Network]\nGateway="+bridgeIP+"\n", 1)
}

// imageRef reads the reference a docker-archive tarball (e2e-images)
// names in its manifest.json.
func imageRef(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("%s: no manifest.json: %w", path, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
			return "", fmt.Errorf("%s: manifest.json: %w", path, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) == 0 {
			return "", fmt.Errorf("%s: manifest.json names no image", path)
		}
		return m[0].RepoTags[0], nil
	}
}

// clusterctlVariable is a variable of clusterctl's template syntax
// (${NAME} or ${NAME:=DEFAULT}).
var clusterctlVariable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:=([^}]*))?\}`)

// readManifests reads the Kubernetes objects of a multi-document YAML
// file, or of every .yaml file of a directory, resolving clusterctl's
// variables as `clusterctl init` does: the value in vars, else the
// default; a variable with neither is an error.
func readManifests(path string, vars map[string]string) ([]*unstructured.Unstructured, error) {
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.yaml")); err != nil {
			return nil, err
		}
		sort.Strings(files)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var unset []string
		b = clusterctlVariable.ReplaceAllFunc(b, func(v []byte) []byte {
			m := clusterctlVariable.FindSubmatch(v)
			if val, ok := vars[string(m[1])]; ok {
				return []byte(val)
			}
			if len(m[2]) == 0 {
				unset = append(unset, string(m[1]))
				return v
			}
			return m[3]
		})
		if len(unset) > 0 {
			return nil, fmt.Errorf("%s: clusterctl variables without a default: %v", f, unset)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue // an empty document (comments only)
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// webhookURL is how cp1's kube-apiserver reaches a path of Cluster API's
// webhook server. Both run in cp1's network namespace (the API server is
// a static pod on the host network, the manager's Deployment asks for it
// too), so loopback always reaches it: no dependence on the webhook
// Service's Endpoints following the pod's readiness, nor on kube-proxy's
// rules for the API server's own connections.
func webhookURL(path string) *string {
	u := fmt.Sprintf("https://127.0.0.1:%d%s", capiWebhookPort, path)
	return &u
}

// capiCoreComponents turns Cluster API's rendered core components into
// what this management cluster runs, changing only what cert-manager and
// a registry would otherwise provide and what cp1's network namespace
// needs:
//   - cert-manager's Certificate and Issuer are left out: the Secret they
//     would fill holds the serving certificate made here, and caBundle on
//     the CRDs' conversion webhooks and the webhook configurations is its
//     CA (cert-manager's CA injector would set it);
//   - every webhook client configuration is webhookURL;
//   - the manager's Deployment runs the imported image (the release's
//     imagePullPolicy Always would pull), on the host network of cp1,
//     with its health probes on capiHealthPort.
func capiCoreComponents(objs []*unstructured.Unstructured, image string, ca, cert, key []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	deployments := 0
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		switch {
		case gvk.Group == "cert-manager.io":
			continue
		case gvk.Kind == "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := convert(u, crd); err != nil {
				return nil, err
			}
			if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
				c.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: webhookURL("/convert"), CABundle: ca}
			}
			if err := convertBack(crd, u); err != nil {
				return nil, err
			}
		case gvk.Kind == "MutatingWebhookConfiguration":
			wc := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := convert(u, wc); err != nil {
				return nil, err
			}
			for i := range wc.Webhooks {
				if err := loopbackWebhook(&wc.Webhooks[i].ClientConfig, ca); err != nil {
					return nil, fmt.Errorf("%s %s: %w", gvk.Kind, wc.Webhooks[i].Name, err)
				}
			}
			if err := convertBack(wc, u); err != nil {
				return nil, err
			}
		case gvk.Kind == "ValidatingWebhookConfiguration":
			wc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := convert(u, wc); err != nil {
				return nil, err
			}
			for i := range wc.Webhooks {
				if err := loopbackWebhook(&wc.Webhooks[i].ClientConfig, ca); err != nil {
					return nil, fmt.Errorf("%s %s: %w", gvk.Kind, wc.Webhooks[i].Name, err)
				}
			}
			if err := convertBack(wc, u); err != nil {
				return nil, err
			}
		case gvk.Kind == "Deployment" && u.GetName() == "capi-controller-manager":
			d := &appsv1.Deployment{}
			if err := convert(u, d); err != nil {
				return nil, err
			}
			c, err := managerContainer(d)
			if err != nil {
				return nil, err
			}
			c.Image, c.ImagePullPolicy = image, corev1.PullIfNotPresent
			c.Args = setArg(c.Args, "--health-addr", fmt.Sprintf(":%d", capiHealthPort))
			for i := range c.Ports {
				if c.Ports[i].Name == "healthz" {
					c.Ports[i].ContainerPort = capiHealthPort
				}
			}
			onManagementNode(d)
			if err := convertBack(d, u); err != nil {
				return nil, err
			}
			deployments++
		}
		out = append(out, u)
	}
	if deployments != 1 {
		return nil, fmt.Errorf("core components: %d Deployments capi-controller-manager, want 1", deployments)
	}
	out = append(out, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": capiWebhookSecret, "namespace": "capi-system"},
		"type":     string(corev1.SecretTypeTLS),
		"data": map[string]any{
			"ca.crt": b64(ca), "tls.crt": b64(cert), "tls.key": b64(key),
		},
	}})
	return out, nil
}

// loopbackWebhook points a webhook's client configuration at webhookURL
// with the serving certificate's CA.
func loopbackWebhook(cc *admissionregistrationv1.WebhookClientConfig, ca []byte) error {
	if cc.Service == nil || cc.Service.Path == nil {
		return errors.New("no service path in clientConfig")
	}
	*cc = admissionregistrationv1.WebhookClientConfig{URL: webhookURL(*cc.Service.Path), CABundle: ca}
	return nil
}

// machineadmComponents takes contrib/cluster-api/bootstrap-components.yaml
// as committed (its variables resolved, MACHINEADM_REPORT_URL set) and
// changes only what this management cluster needs: the Deployment runs
// `make image-controller`'s image on the host network of cp1. Its report
// receiver (--report-bind-address) must listen on capiReportPort: on the
// host network that is cp1's address, where the workload machines post
// (they are outside the management cluster and its Service network, as a
// NodePort or LoadBalancer Service would serve them elsewhere).
// The components must grant Cluster API's core manager access to
// MachineadmConfigs with an aggregated ClusterRole (label
// cluster.x-k8s.io/aggregate-to-manager): without it clusterctl init would
// give a core manager that cannot read them, so its absence is an error.
func machineadmComponents(objs []*unstructured.Unstructured, image string) (out []*unstructured.Unstructured, err error) {
	deployments := 0
	aggregated := false
	for _, u := range objs {
		switch gvk := u.GroupVersionKind(); {
		case gvk.Kind == "Deployment" && u.GetName() == "machineadm-controller":
			d := &appsv1.Deployment{}
			if err := convert(u, d); err != nil {
				return nil, err
			}
			c, err := managerContainer(d)
			if err != nil {
				return nil, err
			}
			c.Image = image
			if bind := argValue(c.Args, "--report-bind-address"); !strings.HasSuffix(bind, fmt.Sprintf(":%d", capiReportPort)) {
				return nil, fmt.Errorf("Deployment machineadm-controller: --report-bind-address %q, want port %d", bind, capiReportPort)
			}
			onManagementNode(d)
			agentSecret, err := serveAgents(d, c)
			if err != nil {
				return nil, err
			}
			out = append(out, agentSecret)
			if err := convertBack(d, u); err != nil {
				return nil, err
			}
			deployments++
		case gvk.Kind == "ClusterRole" && u.GetLabels()[capiAggregateLabel] == "true":
			r := &rbacv1.ClusterRole{}
			if err := convert(u, r); err != nil {
				return nil, err
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.APIGroups, bootstrapv1.GroupVersion.Group) && slices.Contains(rule.Verbs, "get") {
					aggregated = true
				}
			}
		}
		out = append(out, u)
	}
	if deployments != 1 {
		return nil, fmt.Errorf("bootstrap components: %d Deployments machineadm-controller, want 1", deployments)
	}
	if !aggregated {
		return nil, fmt.Errorf("bootstrap components: no ClusterRole labelled %s grants Cluster API's core manager access to %s (clusterctl init would leave the core manager unable to read MachineadmConfigs)",
			capiAggregateLabel, bootstrapv1.GroupVersion.Group)
	}
	return out, nil
}

// capiAggregateLabel marks the ClusterRoles Cluster API's core manager's
// role aggregates: how a provider outside *.cluster.x-k8s.io lets the core
// controllers read and patch its objects.
const capiAggregateLabel = "cluster.x-k8s.io/aggregate-to-manager"

// managerContainer is a controller Deployment's container "manager".
func managerContainer(d *appsv1.Deployment) (*corev1.Container, error) {
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "manager" {
			return c, nil
		}
	}
	return nil, fmt.Errorf("Deployment %s has no container manager", d.Name)
}

// onManagementNode runs a controller Deployment's pod on cp1's host
// network, pinned to cp1 (the cluster's only node: a control-plane node,
// whose taint the controllers' Deployments tolerate already). The host
// network is how the controllers reach the workload machines' API servers
// and serve the report receiver on the bridge, and how the API server
// reaches Cluster API's webhooks on loopback. On the host network every
// containerPort is a host port, and one node has room for one pod of
// them: the Deployment is replaced by Recreate (old pod gone, then the
// new one), as machineadm's own Deployment is, since a rolling update's
// new pod would stay Pending for the old one's ports (what a later
// `clusterctl init` rolling the controller ran into).
func onManagementNode(d *appsv1.Deployment) {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	p := &d.Spec.Template.Spec
	p.HostNetwork = true
	if p.NodeSelector == nil {
		p.NodeSelector = map[string]string{}
	}
	p.NodeSelector[corev1.LabelHostname] = cp1.Name
	if !slices.ContainsFunc(p.Tolerations, func(t corev1.Toleration) bool {
		return t.Key == "node-role.kubernetes.io/control-plane"
	}) {
		p.Tolerations = append(p.Tolerations, corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
	}
}

// setArg sets flag (--name) to value in args, replacing "--name=..." or
// "--name ..." when present.
func setArg(args []string, flag, value string) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], flag+"="):
			continue
		case args[i] == flag:
			i++ // and its value
			continue
		}
		out = append(out, args[i])
	}
	return append(out, flag+"="+value)
}

// argValue is the value of flag (--name=value or --name value) in args,
// or "".
func argValue(args []string, flag string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func convert(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

func convertBack(from runtime.Object, u *unstructured.Unstructured) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
	if err != nil {
		return err
	}
	gvk := u.GroupVersionKind()
	if gvk.Empty() {
		gvk = from.GetObjectKind().GroupVersionKind()
	}
	u.Object = m
	u.SetGroupVersionKind(gvk)
	return nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// webhookServingCert makes a CA and, signed by it, the serving certificate
// of Cluster API's webhook server (ECDSA P-256, valid for a day): for
// 127.0.0.1 (webhookURL) and the webhook Service's names. PEM; nothing is
// written to disk.
func webhookServingCert() (ca, cert, key []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "machineadm-e2e-capi-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "capi-webhook-service.capi-system.svc"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"capi-webhook-service.capi-system.svc", "capi-webhook-service.capi-system.svc.cluster.local"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// install creates the objects: Namespaces and CRDs first, then, once the
// CRDs are established, everything else.
func (mc *managementCluster) install(ctx context.Context, objs []*unstructured.Unstructured) error {
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })
	var crds []string
	for i, u := range objs {
		if rank(u) == 2 && (i == 0 || rank(objs[i-1]) < 2) {
			if err := mc.waitEstablished(ctx, crds, crdEstablishedTimeout); err != nil {
				return err
			}
		}
		if err := mc.c.Create(ctx, u, client.FieldOwner(e2eFieldManager)); err != nil {
			return fmt.Errorf("create %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u.GetName())
		}
	}
	return nil
}

// waitEstablished waits until every named CRD is Established.
func (mc *managementCluster) waitEstablished(ctx context.Context, names []string, timeout time.Duration) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pending = nil
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := mc.c.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				pending = append(pending, n+": "+err.Error())
				continue
			}
			if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				pending = append(pending, n)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("CRDs not Established within %s: %v: %w", timeout, pending, err)
	}
	return nil
}

// controllerPods lists a controller Deployment's pods.
func (mc *managementCluster) controllerPods(ctx context.Context, ctl capiController) ([]corev1.Pod, error) {
	d, err := mc.cs.AppsV1().Deployments(ctl.namespace).Get(ctx, ctl.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	l, err := mc.cs.CoreV1().Pods(ctl.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// waitControllers waits until both controller Deployments are Available.
func (mc *managementCluster) waitControllers(ctx context.Context, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var state []string
		ready := 0
		for _, ctl := range capiControllers {
			d, err := mc.cs.AppsV1().Deployments(ctl.namespace).Get(ctx, ctl.name, metav1.GetOptions{})
			if err != nil {
				state = append(state, fmt.Sprintf("%s: %v", ctl.name, err))
				continue
			}
			if d.Status.AvailableReplicas >= 1 && d.Status.UpdatedReplicas == d.Status.Replicas {
				ready++
				continue
			}
			pods, _ := mc.controllerPods(ctx, ctl)
			s := fmt.Sprintf("%s: %d/%d available", ctl.name, d.Status.AvailableReplicas, d.Status.Replicas)
			for i := range pods {
				s += fmt.Sprintf(" [%s %s]", pods[i].Name, podState(&pods[i]))
			}
			state = append(state, s)
		}
		last = strings.Join(state, "; ")
		return ready == len(capiControllers), nil
	})
	if err != nil {
		return fmt.Errorf("controllers not Available within %s (last: %s): %w", timeout, last, err)
	}
	return nil
}

// waitWebhooks waits until cp1's API server gets answers from Cluster
// API's webhooks: a server-side dry run of the test's Cluster goes
// through its defaulting and validating webhooks, and succeeds or is
// denied by them; a webhook that cannot be called fails the request with
// "failed calling webhook".
func (mc *managementCluster) waitWebhooks(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		err := mc.c.Create(actx, capiClusterObject(), client.DryRunAll)
		if err == nil || strings.Contains(err.Error(), "denied the request") {
			return true, nil
		}
		if actx.Err() == nil || last == nil {
			last = err
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("Cluster API's webhooks not answering within %s (last: %v): %w", timeout, last, err)
	}
	return nil
}

// checkControllers checks that each controller runs one pod, Running and
// Ready on cp1, that never restarted.
func (mc *managementCluster) checkControllers(ctx context.Context, t *testing.T) error {
	t.Helper()
	var errs []error
	for _, ctl := range capiControllers {
		pods, err := mc.controllerPods(ctx, ctl)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(pods) != 1 {
			errs = append(errs, fmt.Errorf("%s/%s: %d pods, want 1", ctl.namespace, ctl.name, len(pods)))
			continue
		}
		p := &pods[0]
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		switch {
		case p.Status.Phase != corev1.PodRunning || !podReady(p):
			errs = append(errs, fmt.Errorf("pod %s/%s not Running and Ready: %s", p.Namespace, p.Name, podState(p)))
		case p.Spec.NodeName != cp1.Name:
			errs = append(errs, fmt.Errorf("pod %s/%s on %q, want %s", p.Namespace, p.Name, p.Spec.NodeName, cp1.Name))
		case restarts > 0:
			errs = append(errs, fmt.Errorf("pod %s/%s restarted %d times", p.Namespace, p.Name, restarts))
		default:
			t.Logf("management cluster: pod %s/%s Running and Ready on %s, image %s", p.Namespace, p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image)
		}
	}
	return errors.Join(errs...)
}

// controllerLog is the log of a controller's pod (at most limit bytes, the
// end of it when tail > 0 lines), or why there is none.
func (mc *managementCluster) controllerLog(ctx context.Context, ctl capiController, tail int64) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	pods, err := mc.controllerPods(ctx, ctl)
	if err != nil || len(pods) == 0 {
		return fmt.Sprintf("(no pod: %v)", err)
	}
	opts := &corev1.PodLogOptions{LimitBytes: ptrTo(int64(8 << 20))}
	if tail > 0 {
		opts.TailLines = &tail
	}
	b, err := mc.cs.CoreV1().Pods(ctl.namespace).GetLogs(pods[0].Name, opts).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(no log of %s: %v)", pods[0].Name, err)
	}
	return string(b)
}

// dumpLogs logs the last lines of each controller's log.
func (mc *managementCluster) dumpLogs(t *testing.T) {
	t.Helper()
	if mc.cs == nil {
		return
	}
	for _, ctl := range capiControllers {
		t.Logf("%s log (last 40 lines):\n%s", ctl.name, strings.TrimSpace(mc.controllerLog(context.Background(), ctl, 40)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := mc.cs.CoreV1().Pods("kube-system").GetLogs("kube-apiserver-"+cp1.Name, &corev1.PodLogOptions{TailLines: ptrTo(int64(20))}).DoRaw(ctx)
	t.Logf("management kube-apiserver log (last 20 lines, %v):\n%s", err, strings.TrimSpace(string(b)))
}

// stop saves the controllers' logs in dir (kept with a failed run's
// directory under MACHINEADM_E2E_KEEP=1), stops cp1 and moves its
// directory aside for a later test's cp1.
func (mc *managementCluster) stop(t *testing.T, e *env) {
	if mc.cs != nil {
		for _, ctl := range capiControllers {
			_ = os.WriteFile(filepath.Join(mc.dir, ctl.name+".log"), []byte(mc.controllerLog(context.Background(), ctl, 0)), 0o600)
		}
	}
	dir := filepath.Join(e.runDir, cp1.Name)
	e.mu.Lock()
	var m *Machine
	for _, x := range e.machines {
		if x.Dir == dir {
			m = x
		}
	}
	e.mu.Unlock()
	if m == nil {
		return
	}
	if err := e.stopMachine(m); err != nil {
		errorf(t, "stop the management machine %s: %v", m.Name, err)
		return
	}
	if err := os.Rename(dir, unusedPath(dir+".capi-management")); err != nil {
		errorf(t, "moving %s aside: %v", dir, err)
	}
}

// logTail is the last n lines of a log file of dir, for failure messages.
func (mc *managementCluster) logTail(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(mc.dir, name+".log"))
	return strings.TrimSpace(tail(string(b), n))
}

// unusedPath is p, or p-2, p-3, … : the first that does not exist, for a
// directory a later test of the same run makes again under that name.
func unusedPath(p string) string {
	q := p
	for i := 2; ; i++ {
		if _, err := os.Lstat(q); os.IsNotExist(err) {
			return q
		}
		q = fmt.Sprintf("%s-%d", p, i)
	}
}
