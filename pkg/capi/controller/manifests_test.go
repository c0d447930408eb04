//go:build !windows

package controller

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drone/envsubst/v2"
	"github.com/drone/envsubst/v2/parse"
)

// clusterctlVariables lists the variables of a components file as
// clusterctl v1.14.2 sees them (cmd/clusterctl/client/yamlprocessor
// SimpleProcessor, which parses with drone/envsubst as here): each name
// with the text of its default; an empty text means clusterctl requires
// the variable.
func clusterctlVariables(t *testing.T, data []byte) map[string]string {
	t.Helper()
	tree, err := parse.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.FuncNode:
			if _, ok := vars[n.Param]; ok {
				return
			}
			var b strings.Builder
			for _, a := range n.Args {
				switch a := a.(type) {
				case *parse.FuncNode:
					b.WriteString("${" + a.Param + "}")
				case *parse.TextNode:
					b.WriteString(a.Value)
				}
			}
			vars[n.Param] = b.String()
		}
	}
	walk(tree.Root)
	return vars
}

// TestBootstrapComponentsAccepted renders
// contrib/cluster-api/bootstrap-components.yaml as clusterctl init does
// (drone/envsubst, clusterctl's substitution engine) for the receiver's
// variables unset and set, and applies every object to the API server as
// a server-side dry run: the result must be YAML the API server takes,
// with the receiver off and a ClusterIP Service by default, and the
// values given otherwise.
func TestBootstrapComponentsAccepted(t *testing.T) {
	requireEnv(t)
	raw, err := os.ReadFile("../../../contrib/cluster-api/bootstrap-components.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vars := clusterctlVariables(t, raw)
	for _, v := range []string{"MACHINEADM_REPORT_URL", "MACHINEADM_REPORT_SERVICE_TYPE"} {
		if d, ok := vars[v]; !ok || d == "" {
			t.Fatalf("clusterctl sees variable %s without a default (%v): clusterctl init would require it", v, vars)
		}
	}
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "machineadm-system"}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		url     string
		svcType string
	}{
		{"unset", nil, "", "ClusterIP"},
		{"NodePort", map[string]string{"MACHINEADM_REPORT_SERVICE_TYPE": "NodePort", "MACHINEADM_REPORT_URL": "http://192.0.2.10:30945"}, "http://192.0.2.10:30945", "NodePort"},
		{"LoadBalancer behind TLS", map[string]string{"MACHINEADM_REPORT_SERVICE_TYPE": "LoadBalancer", "MACHINEADM_REPORT_URL": "https://[2001:db8::10]:443/machineadm/"}, "https://[2001:db8::10]:443/machineadm/", "LoadBalancer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := envsubst.Eval(string(raw), func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatalf("substitution: %v", err)
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
			kinds := map[string]int{}
			for {
				u := &unstructured.Unstructured{}
				if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("the rendered components do not parse: %v", err)
				}
				if len(u.Object) == 0 {
					continue
				}
				kinds[u.GetKind()]++
				if err := k8s.Patch(ctx, u, client.Apply, client.DryRunAll, client.FieldOwner("clusterctl-test"), client.ForceOwnership); err != nil {
					t.Fatalf("the API server refuses %s %s: %v", u.GetKind(), u.GetName(), err)
				}
				switch u.GetKind() {
				case "Service":
					if typ, _, _ := unstructured.NestedString(u.Object, "spec", "type"); typ != tc.svcType {
						t.Errorf("Service type %q, want %q", typ, tc.svcType)
					}
				case "Deployment":
					cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
					env, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
					found := false
					for _, e := range env {
						e := e.(map[string]any)
						if e["name"] == "MACHINEADM_REPORT_URL" {
							found = true
							if v, _ := e["value"].(string); v != tc.url {
								t.Errorf("MACHINEADM_REPORT_URL = %q, want %q", v, tc.url)
							}
						}
					}
					if !found {
						t.Errorf("no MACHINEADM_REPORT_URL in the container's env %v", env)
					}
				}
			}
			for _, k := range []string{"Namespace", "CustomResourceDefinition", "Deployment", "Service", "ClusterRole"} {
				if kinds[k] == 0 {
					t.Errorf("no %s among the rendered objects %v", k, kinds)
				}
			}
		})
	}
}
