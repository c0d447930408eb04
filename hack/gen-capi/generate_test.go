package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/kubernetes/third_party/forked/golang/expansion"
	"sigs.k8s.io/yaml"
)

// TestManifestsCurrent regenerates the manifests with the pinned
// controller-gen (built from hack/tools; about 80 s cold, cached after)
// and fails when the committed ones in contrib/cluster-api differ: run
// `make capi-manifests`.
func TestManifestsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-gen; skipped with -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cg := filepath.Join(t.TempDir(), "controller-gen")
	build := exec.Command("go", "build", "-o", cg, "sigs.k8s.io/controller-tools/cmd/controller-gen")
	build.Dir = filepath.Join(root, "hack", "tools")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building controller-gen: %v\n%s", err, b)
	}
	out := t.TempDir()
	if err := generate(cg, root, out); err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join(root, "contrib", "cluster-api")
	var stale []string
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(committed, rel))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, rel)
		}
		return nil
	})
	if len(stale) > 0 {
		t.Fatalf("stale manifests in contrib/cluster-api (run make capi-manifests): %s", strings.Join(stale, ", "))
	}
	// The contract label is what Cluster API reads to find the version.
	b, _ := os.ReadFile(filepath.Join(committed, "bootstrap-components.yaml"))
	if n := bytes.Count(b, []byte(ContractLabel+": "+ContractValue)); n != 4 {
		t.Fatalf("bootstrap-components.yaml: %d CRDs carry %s: %s, want 4 (two bootstrap, two control-plane)", n, ContractLabel, ContractValue)
	}
}

// TestReportReceiverWiring checks the Deployment and Service that carry
// the report receiver: the Service selects the controller's pods and
// targets the container's named port, the container binds that port and
// takes --report-url from the environment, and the clusterctl variables
// have defaults clusterctl accepts (a variable whose default text is
// empty counts as missing there) that, substituted, leave the URL empty
// (receiver off) and the Service a ClusterIP.
func TestReportReceiverWiring(t *testing.T) {
	var b bytes.Buffer
	for _, d := range []map[string]any{deployment(), reportService()} {
		y, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	// clusterctl's rule: ${VAR:=DEFAULT} with VAR unset becomes DEFAULT;
	// an empty DEFAULT is an error.
	vars := regexp.MustCompile(`\$\{([A-Z0-9_]+):=([^}]*)\}`)
	found := map[string]string{}
	defaulted := vars.ReplaceAllStringFunc(b.String(), func(m string) string {
		s := vars.FindStringSubmatch(m)
		found[s[1]] = s[2]
		return s[2]
	})
	for _, v := range []string{ReportURLVariable, ReportServiceTypeVariable} {
		if d, ok := found[v]; !ok || d == "" {
			t.Fatalf("variable %s: default %q (found %v); clusterctl needs a non-empty default text", v, d, found)
		}
	}
	docs := strings.Split(defaulted, "---\n")[1:]
	var svc struct {
		Spec struct {
			Type     string
			Selector map[string]string
			Ports    []struct {
				Port       int
				TargetPort string `json:"targetPort"`
			}
		}
	}
	var dep struct {
		Spec struct {
			Template struct {
				Metadata struct{ Labels map[string]string }
				Spec     struct {
					Containers []struct {
						Args  []string
						Env   []struct{ Name, Value string }
						Ports []struct {
							Name          string
							ContainerPort int `json:"containerPort"`
						}
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(docs[0]), &dep); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != "ClusterIP" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != ReportPort {
		t.Fatalf("Service: %+v", svc.Spec)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Metadata.Labels[k] != v {
			t.Fatalf("the Service selects %s=%s, the pods are labelled %v", k, v, dep.Spec.Template.Metadata.Labels)
		}
	}
	c := dep.Spec.Template.Spec.Containers[0]
	port := false
	for _, p := range c.Ports {
		port = port || (p.Name == svc.Spec.Ports[0].TargetPort && p.ContainerPort == ReportPort)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	v, defined := env[ReportURLVariable]
	if !port || !defined || v != "" ||
		!containsString(c.Args, fmt.Sprintf("--report-bind-address=:%d", ReportPort)) ||
		!containsString(c.Args, "--report-url=$("+ReportURLVariable+")") {
		t.Fatalf("container: ports %+v, env %v, args %v", c.Ports, env, c.Args)
	}
	// The kubelet expands $(VAR) in args from the container's env (its own
	// expansion code): a defined, empty variable gives an explicitly empty
	// --report-url=, which pkg/capi/manager reads as "receiver off"; a set
	// one gives the URL.
	for _, url := range []string{"", "http://192.0.2.10:30945"} {
		env[ReportURLVariable] = url
		mapping := expansion.MappingFuncFor(env)
		var args []string
		for _, a := range c.Args {
			args = append(args, expansion.Expand(a, mapping))
		}
		if !containsString(args, "--report-url="+url) {
			t.Fatalf("URL %q: the container runs with %v", url, args)
		}
	}
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestCoreManagerRole: the committed bootstrap-components.yaml carries a
// ClusterRole that Cluster API's core manager aggregates (the label) and
// that covers MachineadmConfigs and their templates with the verbs the
// core controllers use.
func TestCoreManagerRole(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "cluster-api", "bootstrap-components.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var r struct {
			Kind     string
			Metadata struct{ Labels map[string]string }
			Rules    []struct{ APIGroups, Resources, Verbs []string }
		}
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil || r.Kind != "ClusterRole" || r.Metadata.Labels[AggregateToManagerLabel] != "true" {
			continue
		}
		for _, rule := range r.Rules {
			if !slices.Contains(rule.APIGroups, "bootstrap.machineadm.io") {
				continue
			}
			for _, res := range []string{"machineadmconfigs", "machineadmconfigtemplates"} {
				if !slices.Contains(rule.Resources, res) {
					t.Errorf("aggregated role lacks %s", res)
				}
			}
			for _, v := range []string{"get", "list", "watch", "create", "patch", "delete"} {
				if !slices.Contains(rule.Verbs, v) {
					t.Errorf("aggregated role lacks verb %s", v)
				}
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("bootstrap-components.yaml has no ClusterRole labelled %s for bootstrap.machineadm.io", AggregateToManagerLabel)
	}
}

// TestControlPlaneComponents: the committed control-plane-components.yaml
// holds the Namespace of bootstrap-components.yaml and every
// controlplane.machineadm.io CRD, equal to the bootstrap file's, and
// nothing that runs (no Deployment, Service or RBAC): the one Deployment,
// which needs those CRDs to start, is the bootstrap provider's.
func TestControlPlaneComponents(t *testing.T) {
	read := func(name string) map[string][]map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "cluster-api", name))
		if err != nil {
			t.Fatal(err)
		}
		byKind := map[string][]map[string]any{}
		for _, doc := range strings.Split(string(b), "\n---\n")[1:] {
			o := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			k, _ := o["kind"].(string)
			byKind[k] = append(byKind[k], o)
		}
		return byKind
	}
	name := func(o map[string]any) string { return o["metadata"].(map[string]any)["name"].(string) }
	boot, cp := read("bootstrap-components.yaml"), read(ControlPlaneComponentsFile)
	for k := range cp {
		if k != "Namespace" && k != "CustomResourceDefinition" {
			t.Errorf("%s has a %s: only the Namespace and CRDs belong there", ControlPlaneComponentsFile, k)
		}
	}
	if len(cp["Namespace"]) != 1 || name(cp["Namespace"][0]) != Namespace {
		t.Errorf("%s: Namespaces %v, want one, %s", ControlPlaneComponentsFile, cp["Namespace"], Namespace)
	}
	if n := len(boot["Deployment"]); n != 1 {
		t.Errorf("bootstrap-components.yaml: %d Deployments, want 1", n)
	}
	want := map[string]map[string]any{}
	for _, crd := range boot["CustomResourceDefinition"] {
		if strings.HasSuffix(name(crd), "."+controlPlaneGroup) {
			want[name(crd)] = crd
		}
	}
	if len(want) != 2 {
		t.Fatalf("bootstrap-components.yaml: %d %s CRDs, want 2", len(want), controlPlaneGroup)
	}
	for _, crd := range cp["CustomResourceDefinition"] {
		w, ok := want[name(crd)]
		if !ok {
			t.Errorf("%s: CRD %s is not a %s CRD of bootstrap-components.yaml", ControlPlaneComponentsFile, name(crd), controlPlaneGroup)
			continue
		}
		if !reflect.DeepEqual(w, crd) {
			t.Errorf("%s: CRD %s differs from bootstrap-components.yaml's", ControlPlaneComponentsFile, name(crd))
		}
		if labels(crd)[ContractLabel] != ContractValue {
			t.Errorf("%s: CRD %s lacks %s: %s", ControlPlaneComponentsFile, name(crd), ContractLabel, ContractValue)
		}
		delete(want, name(crd))
	}
	if len(want) > 0 {
		t.Errorf("%s lacks CRDs %v", ControlPlaneComponentsFile, want)
	}
}
