//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The clusterctl test's fixed names.
const (
	// clusterctlProviderVersion is the version directory of machineadm's
	// providers in the local repository; contrib/cluster-api/metadata.yaml
	// maps its release series (v0.1) to contract v1beta2.
	clusterctlProviderVersion = "v0.1.0"
	// clusterctlNS is where the generated Cluster is applied.
	clusterctlNS = "clusterctl-e2e"
	// clusterctlCluster is the generated Cluster's name.
	clusterctlCluster = "ctl"
	// clusterctlTimeout bounds each clusterctl command.
	clusterctlTimeout = 5 * time.Minute
)

// TestClusterctl runs the real clusterctl (built by components.sh from the
// Cluster API module that gives the core manager) against the Cluster API
// e2e's management cluster (capi_mgmt.go: cp1 with Cluster API's core
// controllers and machineadm-controller), from a local provider
// repository of file:// URLs in a temporary directory, with no network:
//   - `clusterctl init --bootstrap machineadm --control-plane machineadm`
//     installs both providers from contrib/cluster-api as committed
//     (bootstrap-components.yaml, control-plane-components.yaml,
//     metadata.yaml) and waits for their Deployment: clusterctl's
//     inventory then lists both, their CRDs carry clusterctl's labels, and
//     there is still exactly one machineadm-controller Deployment, Available,
//     its pod never restarted;
//   - `clusterctl generate cluster --from
//     contrib/cluster-api/templates/cluster-template.yaml` with 3
//     control-plane Machines and 1 worker, for the test infrastructure
//     provider's kinds, gives objects that the API server accepts in a
//     server-side dry run (Cluster API's webhooks, the CRDs' schemas and
//     CEL rules) and then for real; Cluster API's Cluster controller takes
//     ownership of the MachineadmControlPlane, which needs the core
//     manager's aggregated access to the kind.
//
// The harness installs the core components itself (cert-manager replaced
// by its own serving certificate), so it records them in clusterctl's
// inventory as clusterctl would have (a Provider "cluster-api" at the
// module's version), and clusterctl's cert-manager probe (create an Issuer
// and a Certificate, then delete them) finds stand-in CRDs of those two
// kinds: no cert-manager runs, and nothing of machineadm uses it.
func TestClusterctl(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	clusterctl := filepath.Join(e.cache, "bin/clusterctl")
	for _, p := range []string{clusterctl, filepath.Join(e.cache, "clusterctl/metadata.yaml"), filepath.Join(e.cache, "clusterctl/clusterctl-api.yaml")} {
		if _, err := os.Stat(p); err != nil {
			fatalf(t, "missing %s: run `make e2e-prepare` first", p)
		}
	}
	stopAllMachines(t, e)
	mc := e.startManagementCluster(ctx, t)
	failed := true
	defer func() {
		if failed {
			mc.dumpLogs(t)
		}
	}()
	_, recipient := e.capiKeygen(ctx, t, "clusterctl")
	controllerRef, err := imageRef(e.controllerImage())
	if err != nil {
		fatalln(t, err)
	}
	dir := t.TempDir()
	cfg := writeClusterctlRepository(t, e, dir, controllerRef)
	kubeconfig := filepath.Join(mc.m.Root, "etc/kubernetes/admin.conf")
	run := func(env []string, args ...string) []byte {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, clusterctlTimeout)
		defer cancel()
		cmd := exec.CommandContext(cctx, clusterctl, append(args, "--config", cfg, "--kubeconfig", kubeconfig)...)
		// A home of its own: clusterctl keeps overrides and caches there.
		cmd.Env = append(append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"),
			"CLUSTERCTL_DISABLE_VERSIONCHECK=true"), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			fatalf(t, "clusterctl %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, tail(stderr.String(), 60), tail(string(out), 20))
		}
		name := args[0]
		if name == "generate" {
			name += " " + args[1]
		}
		t.Logf("clusterctl %s: %s\n%s", name, time.Since(start).Round(100*time.Millisecond), tail(stderr.String(), 30))
		return out
	}
	c := mc.c

	recordCoreProvider(ctx, t, mc, e)
	createCertManagerStandIn(ctx, t, mc)

	// init.
	started := time.Now()
	run(nil, "init", "--bootstrap", "machineadm:"+clusterctlProviderVersion, "--control-plane", "machineadm:"+clusterctlProviderVersion,
		"--wait-providers", "--wait-provider-timeout", "240", "-v", "3")
	timing(t, "clusterctl-init", time.Since(started))
	providers := &unstructured.UnstructuredList{}
	providers.SetAPIVersion("clusterctl.cluster.x-k8s.io/v1alpha3")
	providers.SetKind("ProviderList")
	if err := c.List(ctx, providers); err != nil {
		fatalln(t, err)
	}
	got := map[string]string{}
	for _, p := range providers.Items {
		typ, _, _ := unstructured.NestedString(p.Object, "type")
		ver, _, _ := unstructured.NestedString(p.Object, "version")
		got[p.GetNamespace()+"/"+p.GetName()] = typ + " " + ver
	}
	t.Logf("clusterctl inventory: %v", got)
	for k, v := range map[string]string{
		"machineadm-system/bootstrap-machineadm":     "BootstrapProvider " + clusterctlProviderVersion,
		"machineadm-system/control-plane-machineadm": "ControlPlaneProvider " + clusterctlProviderVersion,
	} {
		if got[k] != v {
			errorf(t, "inventory: %s is %q, want %q", k, got[k], v)
		}
	}
	for crd, provider := range map[string]string{
		"machineadmconfigs.bootstrap.machineadm.io":                  "bootstrap-machineadm",
		"machineadmconfigtemplates.bootstrap.machineadm.io":          "bootstrap-machineadm",
		"machineadmcontrolplanes.controlplane.machineadm.io":         "control-plane-machineadm",
		"machineadmcontrolplanetemplates.controlplane.machineadm.io": "control-plane-machineadm",
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, u); err != nil {
			fatalln(t, err)
		}
		l := u.GetLabels()
		if _, ok := l["clusterctl.cluster.x-k8s.io"]; !ok || l["cluster.x-k8s.io/provider"] != provider || l["cluster.x-k8s.io/v1beta2"] != "v1alpha1" {
			errorf(t, "CRD %s labels %v: want clusterctl's label, provider %s and the contract label", crd, l, provider)
		}
	}
	deps, err := mc.cs.AppsV1().Deployments("machineadm-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalln(t, err)
	}
	if len(deps.Items) != 1 || deps.Items[0].Name != "machineadm-controller" || deps.Items[0].Labels["cluster.x-k8s.io/provider"] != "bootstrap-machineadm" {
		var names []string
		for _, d := range deps.Items {
			names = append(names, d.Name+" "+d.Labels["cluster.x-k8s.io/provider"])
		}
		fatalf(t, "machineadm-system Deployments after init: %v, want only machineadm-controller of bootstrap-machineadm", names)
	}
	// clusterctl merge-patches the committed Deployment over the
	// harness's: Recreate, so that its new pod (host network, one node)
	// never waits for the old one's host ports.
	if s := deps.Items[0].Spec.Strategy; s.Type != appsv1.RecreateDeploymentStrategyType || s.RollingUpdate != nil {
		errorf(t, "machineadm-controller after init: strategy %+v, want Recreate", s)
	}
	if err := mc.waitControllers(ctx, controllersReadyTimeout); err != nil {
		fatalln(t, err)
	}
	if err := mc.checkControllers(ctx, t); err != nil {
		fatalln(t, err)
	}

	// generate cluster.
	template := filepath.Join(e.repo, "contrib/cluster-api/templates/cluster-template.yaml")
	env := []string{
		"MACHINEADM_RECIPIENT=" + recipient,
		"INFRASTRUCTURE_API_GROUP=" + infraGroup, "INFRASTRUCTURE_API_VERSION=" + infraVersion,
		"INFRASTRUCTURE_CLUSTER_KIND=NspawnCluster", "INFRASTRUCTURE_MACHINE_TEMPLATE_KIND=NspawnMachineTemplate",
	}
	vars := string(run(nil, "generate", "cluster", clusterctlCluster, "--from", template, "--list-variables"))
	if !strings.Contains(vars, "MACHINEADM_RECIPIENT") {
		errorf(t, "--list-variables does not list MACHINEADM_RECIPIENT:\n%s", vars)
	}
	out := run(env, "generate", "cluster", clusterctlCluster, "--from", template, "--kubernetes-version", kubernetesVersion,
		"--control-plane-machine-count", "3", "--worker-machine-count", "1", "--target-namespace", clusterctlNS)
	objs, err := splitManifests(out)
	if err != nil {
		fatalf(t, "generated template: %v\n%s", err, out)
	}
	var kinds []string
	for _, u := range objs {
		kinds = append(kinds, u.GetKind())
	}
	slices.Sort(kinds)
	want := []string{"Cluster", "MachineDeployment", "MachineadmConfigTemplate", "MachineadmControlPlane", "NspawnCluster", "NspawnMachineTemplate", "NspawnMachineTemplate"}
	if !slices.Equal(kinds, want) {
		fatalf(t, "generated kinds %v, want %v", kinds, want)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterctlNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalln(t, err)
	}
	for _, dry := range []bool{true, false} {
		for _, u := range objs {
			opts := []client.PatchOption{client.ForceOwnership, client.FieldOwner("clusterctl-e2e")}
			if dry {
				opts = append(opts, client.DryRunAll)
			}
			if err := c.Patch(ctx, u.DeepCopy(), client.Apply, opts...); err != nil {
				fatalf(t, "apply (dry run %v) %s %s: %v", dry, u.GetKind(), u.GetName(), err)
			}
		}
	}
	mcp := &unstructured.Unstructured{}
	mcp.SetAPIVersion("controlplane.machineadm.io/v1alpha1")
	mcp.SetKind("MachineadmControlPlane")
	var owners []metav1.OwnerReference
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: clusterctlNS, Name: clusterctlCluster + "-control-plane"}, mcp); err != nil {
			return false, nil
		}
		owners = mcp.GetOwnerReferences()
		return slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.Kind == "Cluster" && o.Name == clusterctlCluster }), nil
	})
	if err != nil {
		fatalf(t, "MachineadmControlPlane %s/%s-control-plane: owners %v, want the Cluster %s (Cluster API's Cluster controller): %v", clusterctlNS, clusterctlCluster, owners, clusterctlCluster, err)
	}
	replicas, _, _ := unstructured.NestedInt64(mcp.Object, "spec", "replicas")
	version, _, _ := unstructured.NestedString(mcp.Object, "spec", "version")
	if replicas != 3 || version != kubernetesVersion {
		errorf(t, "MachineadmControlPlane: replicas %d version %q, want 3 %s", replicas, version, kubernetesVersion)
	}
	t.Logf("generated Cluster %s/%s applied: %d objects; the Cluster owns its MachineadmControlPlane", clusterctlNS, clusterctlCluster, len(objs))
	failed = false
}

// writeClusterctlRepository writes the local provider repository and
// clusterctl's configuration into dir and returns the configuration's
// path: {dir}/repository/{provider label}/{version}/{components file}
// beside metadata.yaml, as clusterctl's local repositories are laid out;
// the core provider's metadata.yaml and components are the module's
// (components.sh), machineadm's come from contrib/cluster-api. The
// controller's image is overridden to the one the management cluster
// preloaded, and the report receiver's URL is the harness's.
func writeClusterctlRepository(t *testing.T, e *env, dir, controllerRef string) string {
	t.Helper()
	contrib := filepath.Join(e.repo, "contrib/cluster-api")
	type file struct{ from, to string }
	core := filepath.Join(dir, "repository/cluster-api", capiVersion(t, e))
	boot := filepath.Join(dir, "repository/bootstrap-machineadm", clusterctlProviderVersion)
	cp := filepath.Join(dir, "repository/control-plane-machineadm", clusterctlProviderVersion)
	for _, f := range []file{
		{filepath.Join(e.cache, "clusterctl/metadata.yaml"), filepath.Join(core, "metadata.yaml")},
		{filepath.Join(e.cache, "capi/core-components.yaml"), filepath.Join(core, "core-components.yaml")},
		{filepath.Join(contrib, "metadata.yaml"), filepath.Join(boot, "metadata.yaml")},
		{filepath.Join(contrib, "bootstrap-components.yaml"), filepath.Join(boot, "bootstrap-components.yaml")},
		{filepath.Join(contrib, "metadata.yaml"), filepath.Join(cp, "metadata.yaml")},
		{filepath.Join(contrib, "control-plane-components.yaml"), filepath.Join(cp, "control-plane-components.yaml")},
	} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			fatalln(t, err)
		}
		if err := os.MkdirAll(filepath.Dir(f.to), 0o755); err != nil {
			fatalln(t, err)
		}
		if err := os.WriteFile(f.to, b, 0o644); err != nil {
			fatalln(t, err)
		}
	}
	i := strings.LastIndex(controllerRef, ":")
	j := strings.LastIndex(controllerRef, "/")
	if i < 0 || j < 0 || i < j {
		fatalf(t, "controller image %q: want REPOSITORY/NAME:TAG", controllerRef)
	}
	cfg := map[string]any{
		"providers": []any{
			map[string]any{"name": "cluster-api", "type": "CoreProvider", "url": "file://" + filepath.Join(core, "core-components.yaml")},
			map[string]any{"name": "machineadm", "type": "BootstrapProvider", "url": "file://" + filepath.Join(boot, "bootstrap-components.yaml")},
			map[string]any{"name": "machineadm", "type": "ControlPlaneProvider", "url": "file://" + filepath.Join(cp, "control-plane-components.yaml")},
		},
		"images": map[string]any{
			"bootstrap-machineadm": map[string]any{"repository": controllerRef[:j], "tag": controllerRef[i+1:]},
		},
		"MACHINEADM_REPORT_URL": "http://" + capiReportAddr,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		fatalln(t, err)
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		fatalln(t, err)
	}
	return path
}

// capiVersion is the Cluster API release the cache's core components
// come from (its stamp, components.sh: "VERSION kustomize …").
func capiVersion(t *testing.T, e *env) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.cache, "capi/.stamp"))
	if err != nil {
		fatalln(t, err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 || !strings.HasPrefix(f[0], "v") {
		fatalf(t, "capi/.stamp %q: no version", b)
	}
	return f[0]
}

// recordCoreProvider writes clusterctl's inventory CRD (the module's
// clusterctl-api.yaml) and the entry for the core provider that the
// harness installed itself, so that clusterctl init adds providers to it
// instead of installing the core components again.
func recordCoreProvider(ctx context.Context, t *testing.T, mc *managementCluster, e *env) {
	t.Helper()
	objs, err := readManifests(filepath.Join(e.cache, "clusterctl/clusterctl-api.yaml"), nil)
	if err != nil {
		fatalln(t, err)
	}
	if err := mc.install(ctx, objs); err != nil {
		fatalln(t, err)
	}
	names := []string{}
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			names = append(names, u.GetName())
		}
	}
	if err := mc.waitEstablished(ctx, names, crdEstablishedTimeout); err != nil {
		fatalln(t, err)
	}
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3", "kind": "Provider",
		"metadata": map[string]any{"name": "cluster-api", "namespace": "capi-system", "labels": map[string]any{
			"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": "cluster-api"}},
		"providerName": "cluster-api", "type": "CoreProvider", "version": capiVersion(t, e),
	}}
	if err := mc.c.Create(ctx, p); err != nil {
		fatalln(t, err)
	}
}

// createCertManagerStandIn creates CRDs for cert-manager's Issuer and
// Certificate (cert-manager.io/v1, any content): what clusterctl's probe
// for an installed cert-manager creates and deletes. A stand-in, not
// cert-manager: there is no controller behind them.
func createCertManagerStandIn(ctx context.Context, t *testing.T, mc *managementCluster) {
	t.Helper()
	var objs []*unstructured.Unstructured
	var names []string
	for _, k := range []struct{ kind, plural string }{{"Issuer", "issuers"}, {"Certificate", "certificates"}} {
		name := k.plural + ".cert-manager.io"
		names = append(names, name)
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"machineadm.io/e2e": "cert-manager-stand-in"}},
			"spec": map[string]any{
				"group": "cert-manager.io", "scope": "Namespaced",
				"names": map[string]any{"kind": k.kind, "listKind": k.kind + "List", "plural": k.plural, "singular": strings.ToLower(k.kind)},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}})
	}
	if err := mc.install(ctx, objs); err != nil {
		fatalln(t, err)
	}
	if err := mc.waitEstablished(ctx, names, crdEstablishedTimeout); err != nil {
		fatalln(t, err)
	}
}

// splitManifests parses a multi-document YAML stream into objects.
func splitManifests(b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(b), "\n---") {
		doc = strings.TrimSpace(doc)
		if doc == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("%w in:\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}
