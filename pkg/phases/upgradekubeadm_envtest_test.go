//go:build !windows

// envtest cannot build for Windows (upgrade_systemd_envtest_test.go).

package phases

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/internal/testassets"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/kubeadm/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// TestKubeadmUploadConfigFailureHasItsHint runs kubeadm's upgrade apply
// phase upload-config/kubeadm of a Systemd first control plane through
// the upgrade workflow's leaf (kubeadmUpgradePhase, KubeadmPhase,
// runKubeadmUpgrade, day2.UpgradeRunner, kubeadm's own phase) against a
// real API server (envtest), with an admin credential that may read
// what kubeadm's upgrade data reads but not write: the phase fails, and
// the run's error and its outcome report carry the phase's hint from
// KubeadmUpgradePhases, not ControlPlaneUnhealthy's about static pods.
// With the rights that hint names (create, get and update ConfigMaps,
// Roles and RoleBindings in kube-system) both upload-config phases pass.
func TestKubeadmUploadConfigFailureHasItsHint(t *testing.T) {
	rc, cs := seededEnvtest(t)
	ctx := t.Context()

	// The admin credential is a user with the reads of kubeadm's upgrade
	// data (the kubeadm-config, kubelet-config and kube-proxy
	// ConfigMaps, this host's Node) and nothing else.
	const user = "upgrader"
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant := func(name string, rules ...rbacv1.PolicyRule) {
		t.Helper()
		if _, err := cs.RbacV1().Roles(metav1.NamespaceSystem).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().RoleBindings(metav1.NamespaceSystem).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	uc := rest.CopyConfig(rc)
	uc.Impersonate = rest.ImpersonationConfig{UserName: user}
	ucs, err := kubernetes.NewForConfig(uc)
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer reads the rules from an informer: wait, bounded,
	// until the user may do what was granted last.
	mayDo := func(verb, group, resource string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			r, err := ucs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: metav1.NamespaceSystem, Verb: verb, Group: group, Resource: resource},
			}}, metav1.CreateOptions{})
			if err == nil && r.Status.Allowed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("user %s may not %s %s in kube-system within 60 s: %v", user, verb, resource, err)
			}
		}
	}
	grant("reader", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}})
	mayDo("get", "", "configmaps")

	d := systemdApplyAs(t, rc, user)
	cfg := d.Config
	if !FirstControlPlane(cfg) || !systemdRuntime(cfg) {
		t.Fatal("the example is not a Systemd first control plane")
	}

	w := &Workflow{Phases: []Phase{kubeadmUpgradePhase(cfg)}}
	runPhase := func(name string) (string, error) {
		t.Helper()
		return w.Run(ctx, d, &recordObs{}, RunOptions{Only: upgrade.PhaseKubeadm + "/" + name})
	}

	failed, err := runPhase("upload-config/kubeadm")
	if err == nil {
		t.Fatal("upload-config/kubeadm with a credential that may not write ConfigMaps passed")
	}
	if want := upgrade.PhaseKubeadm + "/upload-config/kubeadm"; failed != want {
		t.Errorf("failed phase %q, want %q", failed, want)
	}
	if !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("the failure is not RBAC's: %v", err)
	}
	if class, hint := errclass.Of(err); class != errclass.ControlPlaneUnhealthy || hint != hintKubeadmUploadKubeadm {
		t.Errorf("class %s, hint %q; want %s with upload-config/kubeadm's hint", class, hint, errclass.ControlPlaneUnhealthy)
	}
	rec := report.NewRecorder(report.Meta{Command: "upgrade"}, nil, nil, nil)
	rec.Fail(failed, err)
	if err := rec.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, _ := rec.Report(); rep.ErrorClass != errclass.ControlPlaneUnhealthy || rep.Hint != hintKubeadmUploadKubeadm {
		t.Errorf("the report: class %s, hint %q; want %s with upload-config/kubeadm's hint", rep.ErrorClass, rep.Hint, errclass.ControlPlaneUnhealthy)
	}

	// The rights the hint names are enough for both upload-config phases.
	grant("upload-config", rbacv1.PolicyRule{Verbs: []string{"create", "get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		rbacv1.PolicyRule{Verbs: []string{"create", "get", "update"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}})
	mayDo("update", rbacv1.GroupName, "rolebindings")
	for _, name := range []string{"upload-config/kubeadm", "upload-config/kubelet"} {
		if _, err := runPhase(name); err != nil {
			t.Errorf("%s with the rights its hint names: %v", name, err)
		}
	}
	stored, err := configutil.FetchInitConfigurationFromCluster(cs, nil, "test", false, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if stored.KubernetesVersion != "v1.37.2" {
		t.Errorf("kubeadm-config stores version %s after upload-config/kubeadm, want v1.37.2", stored.KubernetesVersion)
	}
	for _, role := range []string{"kubeadm:nodes-kubeadm-config", kubeadmconstants.KubeletBaseConfigMapRole} {
		if _, err := cs.RbacV1().RoleBindings(metav1.NamespaceSystem).Get(ctx, role, metav1.GetOptions{}); err != nil {
			t.Errorf("the RoleBinding %s upload-config makes: %v", role, err)
		}
	}
}

// shortAPICalls sets timeouts.kubernetesAPICall of the
// UpgradeConfiguration at path to 2 s: kubeadm retries a refused create or
// update for that long. kubeadm's timeouts are its globals, set by each
// configuration it loads: they are put back when t ends.
func shortAPICalls(t *testing.T, path string) {
	t.Helper()
	saved := kubeadmapi.GetActiveTimeouts().DeepCopy()
	t.Cleanup(func() { kubeadmapi.SetActiveTimeouts(saved) })
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c kubeadmv1beta4.UpgradeConfiguration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	if c.Timeouts == nil {
		c.Timeouts = &kubeadmv1beta4.Timeouts{}
	}
	c.Timeouts.KubernetesAPICall = &metav1.Duration{Duration: 2 * time.Second}
	if data, err = yaml.Marshal(&c); err != nil {
		t.Fatal(err)
	}
	if _, err := configutil.BytesToUpgradeConfiguration(data); err != nil {
		t.Fatalf("kubeadm refused the UpgradeConfiguration: %v", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestKubeadmPostUpgradeHintNamesWhatTheDataReads runs kubeadm's upgrade
// apply phase post-upgrade of a static-pod control plane through the
// workflow's leaf against envtest, where the cluster holds what the
// phase's hint says kubeadm's upgrade data reads (the kubeadm-config,
// kubelet-config and kube-proxy ConfigMaps, this host's Node) and the
// credential may read it all: the data's build still fails, at this
// node's kube-apiserver mirror Pod (its advertise-address annotation),
// which `upgrade apply` reads on a static-pod control plane, after
// polling for kubeadm's API call timeout ("context deadline exceeded").
// The failure is not a Timeout whose hint is the network's, and the
// hints (the failure's, post-upgrade's) send the operator to the Pod.
func TestKubeadmPostUpgradeHintNamesWhatTheDataReads(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	for _, p := range []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/manifests/kube-apiserver.yaml"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists: this machine is a node, and the test must not reach its cluster", p)
		}
	}
	rc := testassets.StartEnvtest(t)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	kubeadmtest.SeedCluster(t, cs, storedClusterConfiguration)

	l := loadExample(t, "control-plane-init.yaml")
	cfg := l.Config
	if systemdRuntime(cfg) || upgradeVerb(cfg) != "apply" {
		t.Fatal("the example is not a static-pod first control plane")
	}
	root := t.TempDir()
	writeAdminConf(t, rc, root)
	d := testData(t)
	d.Config, d.Root = cfg, root
	d.Upgrade = &UpgradeRun{Plan: &upgrade.Plan{From: "v1.37.0", To: "v1.37.2", Steps: []upgrade.Step{{Phase: upgrade.PhaseKubeadm}}}}
	path, err := upgradeConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	shortAPICalls(t, path)
	var all []string
	for _, k := range KubeadmUpgradePhases("apply") {
		all = append(all, k.Name)
	}
	// The runner runKubeadmUpgrade makes for static pods, with the
	// envtest admin as its credential instead of /etc/kubernetes/admin.conf.
	d.Upgrade.kubeadm = &day2.UpgradeRunner{Verb: "apply", ConfigPath: path, All: all, Kubeconfig: adminConf(d)}

	w := &Workflow{Phases: []Phase{kubeadmUpgradePhase(cfg)}}
	failed, err := w.Run(t.Context(), d, &recordObs{}, RunOptions{Only: upgrade.PhaseKubeadm + "/post-upgrade"})
	if err == nil {
		t.Fatal("post-upgrade passed on a cluster without this node's kube-apiserver mirror Pod")
	}
	if want := upgrade.PhaseKubeadm + "/post-upgrade"; failed != want {
		t.Errorf("failed phase %q, want %q", failed, want)
	}
	if !strings.Contains(err.Error(), "getAPIEndpoint") {
		t.Fatalf("the failure is not the mirror Pod's: %v", err)
	}
	// kubeadm reports only its poll's deadline: the class is not
	// Timeout, and the hint names the mirror Pod.
	if class, hint := errclass.Of(err); class != errclass.ControlPlaneUnhealthy || !strings.Contains(hint, "kube-apiserver mirror Pod") {
		t.Errorf("class %s, hint %q; want %s with a hint about this node's kube-apiserver mirror Pod", class, hint, errclass.ControlPlaneUnhealthy)
	}
	if !strings.Contains(hintKubeadmPostUpgrade, "kube-apiserver mirror Pod") {
		t.Errorf("post-upgrade's hint does not name this node's kube-apiserver mirror Pod, which its data reads: %s", hintKubeadmPostUpgrade)
	}
}

// TestKubeadmControlPlaneKeepsTheSettingsHint: on a static-pod first
// control plane whose settings and version change together, the
// workflow's kubeadm/control-plane leaf first stores the spec's settings
// (day2.UploadSettings, real, against a loopback API server that refuses
// everything): its failure keeps the hint it was born with (the
// kubeadm-config ConfigMap's rights), which the leaf's own hint, about
// static pods and their backups, must not replace.
func TestKubeadmControlPlaneKeepsTheSettingsHint(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps \"kubeadm-config\" is forbidden: User \"admin\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-system\"","reason":"Forbidden","code":403}`)
	}))
	t.Cleanup(srv.Close)
	// kubeadm retries the read for its API call timeout (a minute by
	// default): 1 s, its globals put back after.
	saved := kubeadmapi.GetActiveTimeouts().DeepCopy()
	t.Cleanup(func() { kubeadmapi.SetActiveTimeouts(saved) })
	short := saved.DeepCopy()
	short.KubernetesAPICall = &metav1.Duration{Duration: time.Second}
	kubeadmapi.SetActiveTimeouts(short)

	cfg := loadExample(t, "control-plane-init.yaml").Config
	if systemdRuntime(cfg) || !FirstControlPlane(cfg) {
		t.Fatal("the example is not a static-pod first control plane")
	}
	root := t.TempDir()
	writeAdminConf(t, &rest.Config{Host: srv.URL, BearerToken: "x", TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}, root)
	d := testData(t)
	d.Config, d.Root = cfg, root
	d.Upgrade = &UpgradeRun{Plan: &upgrade.Plan{From: "v1.37.0", To: "v1.37.2", Steps: []upgrade.Step{{Phase: upgrade.PhaseControlPlane}, {Phase: upgrade.PhaseKubeadm}}}}
	// kubeadm itself must not run: the store comes first and fails.
	defer func(old func(context.Context, *Data, string, string) error) { kubeadmUpgrade = old }(kubeadmUpgrade)
	kubeadmUpgrade = func(context.Context, *Data, string, string) error {
		t.Error("kubeadm's control-plane phase ran after a failed store of the settings")
		return nil
	}
	w := &Workflow{Phases: []Phase{kubeadmUpgradePhase(cfg)}}
	failed, err := w.Run(t.Context(), d, &recordObs{}, RunOptions{Only: upgrade.PhaseKubeadm + "/control-plane"})
	if err == nil {
		t.Fatal("the control-plane leaf passed against an API server that refuses everything")
	}
	if want := upgrade.PhaseKubeadm + "/control-plane"; failed != want {
		t.Errorf("failed phase %q, want %q", failed, want)
	}
	class, hint := errclass.Of(err)
	if class != errclass.ControlPlaneUnhealthy || !strings.HasPrefix(hint, "machineadm could not read or update the cluster's kubeadm configuration") {
		t.Errorf("class %s, hint %q; want %s with UploadSettings' hint (kubeadm-config), not the leaf's (%v)", class, hint, errclass.ControlPlaneUnhealthy, err)
	}
}

// TestKubeadmBootstrapTokenEscalationHasItsHint runs kubeadm's upgrade
// apply phase bootstrap-token of a Systemd first control plane through
// the workflow's leaf against envtest, with an admin credential that may
// write the RBAC objects but does not hold the rights they grant: the API
// server refuses the ClusterRoleBinding to system:node-bootstrapper as
// an escalation, listing the certificatesigningrequests rights it would
// grant. The failure is the phase's (its hint names the objects and
// "holds the rights they grant"), not the join's TLS bootstrap
// (TLSBootstrapFailed, "the kubelet got no client certificate").
func TestKubeadmBootstrapTokenEscalationHasItsHint(t *testing.T) {
	rc, cs := seededEnvtest(t)
	ctx := t.Context()
	// The user may read what kubeadm's upgrade data reads and create, get
	// and update the RBAC objects, and nothing else (no bind, no
	// escalate, no certificatesigningrequests).
	const user = "upgrader"
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	write := []string{"create", "get", "update"}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"nodes", "configmaps"}},
		{Verbs: write, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	uc := rest.CopyConfig(rc)
	uc.Impersonate = rest.ImpersonationConfig{UserName: user}
	ucs, err := kubernetes.NewForConfig(uc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := ucs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
		}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s may not create clusterrolebindings within 60 s: %v", user, err)
		}
	}

	d := systemdApplyAs(t, rc, user)
	cfg := d.Config

	w := &Workflow{Phases: []Phase{kubeadmUpgradePhase(cfg)}}
	failed, err := w.Run(ctx, d, &recordObs{}, RunOptions{Only: upgrade.PhaseKubeadm + "/bootstrap-token"})
	if err == nil {
		t.Fatal("bootstrap-token passed with a credential that does not hold the rights its bindings grant")
	}
	if want := upgrade.PhaseKubeadm + "/bootstrap-token"; failed != want {
		t.Errorf("failed phase %q, want %q", failed, want)
	}
	if !strings.Contains(err.Error(), "certificatesigningrequests") {
		t.Fatalf("the failure is not RBAC's escalation check: %v", err)
	}
	if class, hint := errclass.Of(err); class != errclass.ControlPlaneUnhealthy || hint != hintKubeadmBootstrapToken {
		t.Errorf("class %s, hint %q; want %s with bootstrap-token's hint", class, hint, errclass.ControlPlaneUnhealthy)
	}
}

// systemdApplyAs is the Data of `machineadm upgrade` on the example's
// Systemd first control plane (a kubeadm-only plan, v1.37.0 to v1.37.2)
// against rc's API server as user (admin.conf impersonates it), with the
// kubeadm runner runKubeadmUpgrade makes for that spec, except that
// kubeadm's API calls give up after 2 s instead of its default minute
// (kubeadm sets its timeouts from the UpgradeConfiguration it loads).
func systemdApplyAs(t *testing.T, rc *rest.Config, user string) *Data {
	t.Helper()
	cfg := loadExample(t, "control-plane-systemd.yaml").Config
	root := t.TempDir()
	deliverSecrets(t, root, cfg)
	writeAdminConf(t, rc, root)
	d := testData(t)
	d.Config, d.Root = cfg, root
	d.Upgrade = &UpgradeRun{Plan: &upgrade.Plan{From: "v1.37.0", To: "v1.37.2", Steps: []upgrade.Step{{Phase: upgrade.PhaseKubeadm}}}}
	kc, err := clientcmd.LoadFromFile(adminConf(d))
	if err != nil {
		t.Fatal(err)
	}
	kc.AuthInfos["admin"].Impersonate = user
	if err := clientcmd.WriteToFile(*kc, adminConf(d)); err != nil {
		t.Fatal(err)
	}
	path, err := upgradeConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	shortAPICalls(t, path)
	var all []string
	for _, k := range KubeadmUpgradePhases("apply") {
		all = append(all, k.Name)
	}
	yamlDocs, err := specInitYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := day2.LocalEndpoint(yamlDocs)
	if err != nil {
		t.Fatal(err)
	}
	d.Upgrade.kubeadm = &day2.UpgradeRunner{Verb: "apply", ConfigPath: path, All: all,
		Local: &day2.LocalControlPlane{Endpoint: ep, AdminKubeconfig: adminConf(d), Addons: day2.SystemdAddons(adminConf(d))}}
	return d
}

// seededEnvtest starts an envtest API server seeded with kubeadm's
// cluster objects (storedClusterConfiguration) for a test that runs
// kubeadm's upgrade phases in-process, and returns its config and a
// client; it skips the test where kubeadm cannot run (an unstamped build,
// or a host whose kubelet.conf kubeadm would read this node's name from).
func seededEnvtest(t *testing.T) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	if _, err := os.Stat("/etc/kubernetes/kubelet.conf"); err == nil {
		t.Skip("/etc/kubernetes/kubelet.conf exists: kubeadm would read this node's name from it")
	}
	rc := testassets.StartEnvtest(t)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	kubeadmtest.SeedCluster(t, cs, storedClusterConfiguration)
	return rc, cs
}
