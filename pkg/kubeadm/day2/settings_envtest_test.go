//go:build !windows

// envtest cannot build for Windows (kept_envtest_test.go).

package day2

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/machineadm/machineadm/internal/testassets"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestUploadSettingsFailuresHaveTheirHint: a read of kubeadm-config the
// API server does not answer, and a store it refuses (a real
// ValidatingAdmissionPolicy on a real API server), are ControlPlaneUnhealthy
// with the kubeadm-config hint, not the class's generic hint about static
// pods; the refused store leaves the ConfigMap as it was.
func TestUploadSettingsFailuresHaveTheirHint(t *testing.T) {
	spec := exampleInit(t, nil)
	shortAPICallTimeout(t)
	wantHint := func(t *testing.T, err error, cause string) {
		t.Helper()
		var ce *errclass.Error
		if err == nil || !errors.As(err, &ce) {
			t.Fatalf("UploadSettings: %v, want a classified error", err)
		}
		if class, hint := errclass.Of(err); class != errclass.ControlPlaneUnhealthy || hint != kubeadmConfigHint {
			t.Errorf("UploadSettings: class %s, hint %q; want %s with the kubeadm-config hint", class, hint, errclass.ControlPlaneUnhealthy)
		}
		if !strings.Contains(err.Error(), cause) {
			t.Errorf("UploadSettings: %v, want it to say %q", err, cause)
		}
	}

	t.Run("no API server", func(t *testing.T) {
		// A loopback address nothing listens on any more.
		srv := httptest.NewServer(nil)
		url := srv.URL
		srv.Close()
		kc := filepath.Join(t.TempDir(), "admin.conf")
		data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster: {server: %q}\nusers:\n- name: admin\n  user: {}\ncontexts:\n- name: gone\n  context: {cluster: gone, user: admin}\ncurrent-context: gone\n", url)
		if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		stored, err := UploadSettings(kc, spec)
		if stored {
			t.Error("UploadSettings says it stored without an API server")
		}
		wantHint(t, err, "reading the cluster's kubeadm configuration")
	})

	t.Run("store refused", func(t *testing.T) {
		cfg := testassets.StartEnvtest(t)
		// The cluster's stored configuration differs from the spec's in
		// its image repository, so UploadSettings has something to store.
		stored := strings.Replace(clusterConfigurationDoc(t, spec), "imageRepository: registry.demo.example/k8s", "imageRepository: registry.demo.example/old", 1)
		if !strings.Contains(stored, "registry.demo.example/old") {
			t.Fatalf("the example's ClusterConfiguration has no imageRepository registry.demo.example/k8s:\n%s", stored)
		}
		seedCluster(t, cfg, stored)
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		denyKubeadmConfigUpdates(t, cs)
		_, kubeconfig := serveCountingProxy(t, cfg, t.TempDir())
		ok, err := UploadSettings(kubeconfig, spec)
		if ok {
			t.Error("UploadSettings says it stored a configuration the API server refused")
		}
		wantHint(t, err, "storing the cluster configuration in kubeadm-config")
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(t.Context(), kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey]; got != stored {
			t.Errorf("the refused store changed kubeadm-config:\n%s\nwant\n%s", got, stored)
		}
	})
}

// TestUploadSettingsNeedsTheRightsItsHintNames: kubeadmConfigHint names
// the rights a credential needs for UploadSettings' store (kubeadm's
// uploadconfig creates the ConfigMap before it gets and updates it, then
// creates or updates a Role and a RoleBinding). A credential with get and
// update on kubeadm-config alone is refused (and the hint must not say
// that those suffice); one with exactly the rights the hint names stores.
func TestUploadSettingsNeedsTheRightsItsHintNames(t *testing.T) {
	spec := exampleInit(t, nil)
	shortAPICallTimeout(t)
	const named = "may create, get and update ConfigMaps, Roles and RoleBindings in kube-system"
	if !strings.Contains(kubeadmConfigHint, named) {
		t.Fatalf("kubeadmConfigHint does not say %q: %s", named, kubeadmConfigHint)
	}
	cfg := testassets.StartEnvtest(t)
	stored := strings.Replace(clusterConfigurationDoc(t, spec), "imageRepository: registry.demo.example/k8s", "imageRepository: registry.demo.example/old", 1)
	seedCluster(t, cfg, stored)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// A user with rules, impersonated through a proxy whose kubeconfig
	// UploadSettings reads.
	as := func(t *testing.T, user string, rules []rbacv1.PolicyRule) string {
		t.Helper()
		if _, err := cs.RbacV1().Roles(metav1.NamespaceSystem).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := cs.RbacV1().RoleBindings(metav1.NamespaceSystem).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		uc := rest.CopyConfig(cfg)
		uc.Impersonate = rest.ImpersonationConfig{UserName: user}
		// The authorizer reads its rules from an informer: wait, bounded,
		// until the user may read kubeadm-config.
		ucs, err := kubernetes.NewForConfig(uc)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if _, err := ucs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{}); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("user %s cannot read kubeadm-config within 60 s: %v", user, err)
			}
		}
		_, kc := serveCountingProxy(t, uc, t.TempDir())
		return kc
	}
	get := func() string {
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey]
	}

	kc := as(t, "get-update-only", []rbacv1.PolicyRule{{
		Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kubeadmconstants.KubeadmConfigConfigMap},
	}})
	if ok, err := UploadSettings(kc, spec); ok || err == nil {
		t.Errorf("UploadSettings with get and update on kubeadm-config alone: stored %v, %v; want refused", ok, err)
	}
	if got := get(); got != stored {
		t.Fatalf("a refused store changed kubeadm-config:\n%s", got)
	}

	// kubeadm's uploadconfig stores the ConfigMap before the Role: a
	// credential that may store ConfigMaps but not Roles has stored the
	// settings when it fails, and says so.
	kc = as(t, "configmaps-only", []rbacv1.PolicyRule{
		{Verbs: []string{"create", "get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
	})
	ok, err := UploadSettings(kc, spec)
	if err == nil || !ok {
		t.Errorf("UploadSettings that stores the ConfigMap and fails at the Role: stored %v, %v; want stored and the error", ok, err)
	}
	if class, hint := errclass.Of(err); class != errclass.ControlPlaneUnhealthy || hint != kubeadmConfigHint {
		t.Errorf("UploadSettings failing at the Role: class %s, hint %q; want %s with the kubeadm-config hint", class, hint, errclass.ControlPlaneUnhealthy)
	}
	if got := get(); got == stored || !strings.Contains(got, "registry.demo.example/k8s") {
		t.Fatalf("kubeadm-config after a store that failed at the Role:\n%s\nwant the spec's image repository", got)
	}
	// Put the old configuration back for the next user.
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey] = stored
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	kc = as(t, "named-rights", []rbacv1.PolicyRule{
		{Verbs: []string{"create", "get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		{Verbs: []string{"create", "get", "update"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}},
	})
	ok, err = UploadSettings(kc, spec)
	if err != nil || !ok {
		t.Fatalf("UploadSettings with the rights kubeadmConfigHint names: stored %v, %v; want stored", ok, err)
	}
	if got := get(); got == stored || !strings.Contains(got, "registry.demo.example/k8s") {
		t.Errorf("kubeadm-config after the store:\n%s\nwant the spec's image repository", got)
	}
}

// denyKubeadmConfigUpdates makes the API server refuse every update of
// kube-system/kubeadm-config (a ValidatingAdmissionPolicy and its
// binding) and waits, bounded, until it does: the policy takes effect
// some time after it is created.
func denyKubeadmConfigUpdates(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	deny := admissionregistrationv1.Deny
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-kubeadm-config"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{kubeadmconstants.KubeadmConfigConfigMap},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			FailurePolicy: func() *admissionregistrationv1.FailurePolicyType { f := admissionregistrationv1.Fail; return &f }(),
			Validations:   []admissionregistrationv1.Validation{{Expression: "false", Message: "kubeadm-config is read-only in this test"}},
		},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-kubeadm-config"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{deny},
		},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A dry-run update goes through admission and changes nothing.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
		if err == nil {
			probe := cm.DeepCopy()
			probe.Annotations = map[string]string{"machineadm.io/probe": "1"}
			_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, probe, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && strings.Contains(err.Error(), "read-only in this test") {
				return
			}
		}
		// Any other answer (accepted: the policy is not active yet; a
		// passing 429 or timeout on a loaded machine) is tried again
		// until the deadline.
		if time.Now().After(deadline) {
			t.Fatalf("the ValidatingAdmissionPolicy did not refuse an update of kubeadm-config within 60 s (last answer: %v)", err)
		}
	}
}

// shortAPICallTimeout sets kubeadm's API call timeout to 2 s until t
// ends: kubeadm retries a read the API server does not answer, and a
// refused store, for that long (1 min by default). Not for parallel
// tests: the timeout is kubeadm's global.
func shortAPICallTimeout(t *testing.T) {
	t.Helper()
	saved := kubeadmapi.GetActiveTimeouts().DeepCopy()
	short := saved.DeepCopy()
	short.KubernetesAPICall = &metav1.Duration{Duration: 2 * time.Second}
	kubeadmapi.SetActiveTimeouts(short)
	t.Cleanup(func() { kubeadmapi.SetActiveTimeouts(saved) })
}
