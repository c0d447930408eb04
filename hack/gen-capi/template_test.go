package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// TestClusterTemplate reads contrib/cluster-api/templates/cluster-template.yaml
// as clusterctl generate cluster does (${VAR} and ${VAR:=DEFAULT}, no
// default only for clusterctl's own variables and the recipient), checks
// that its header documents every variable, and decodes each object
// strictly into the Go type of its kind: a misspelt or misplaced field
// fails here. TestClusterctl (test/e2e) applies the real clusterctl's
// output to a real management cluster.
func TestClusterTemplate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "cluster-api", "templates", "cluster-template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	header := ""
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		header += l + "\n"
	}
	values := map[string]string{
		"CLUSTER_NAME": "demo", "NAMESPACE": "default", "KUBERNETES_VERSION": "v1.37.2",
		"CONTROL_PLANE_MACHINE_COUNT": "3", "WORKER_MACHINE_COUNT": "1", "MACHINEADM_RECIPIENT": "hpke:p384:QUJD",
	}
	variable := regexp.MustCompile(`\$\{([A-Z0-9_]+)(:=([^}]*))?\}`)
	var missing []string
	out := variable.ReplaceAllStringFunc(string(b), func(m string) string {
		s := variable.FindStringSubmatch(m)
		if !strings.Contains(header, s[1]) {
			missing = append(missing, s[1]+" (not in the header)")
		}
		if v, ok := values[s[1]]; ok {
			return v
		}
		if s[2] == "" {
			missing = append(missing, s[1]+" (no default)")
		}
		return s[3]
	})
	if len(missing) > 0 {
		t.Fatalf("template variables: %v", missing)
	}
	var kinds []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, tm.Kind)
		var into any
		switch tm.Kind {
		case "Cluster":
			into = &clusterv1.Cluster{}
		case "MachineDeployment":
			into = &clusterv1.MachineDeployment{}
		case "MachineadmConfigTemplate":
			into = &bootstrapv1.MachineadmConfigTemplate{}
		case "MachineadmControlPlane":
			into = &cpv1.MachineadmControlPlane{}
		default:
			continue // the infrastructure provider's kinds
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Errorf("%s: %v", tm.Kind, err)
		}
		if cp, ok := into.(*cpv1.MachineadmControlPlane); ok && (cp.Spec.Replicas == nil || *cp.Spec.Replicas != 3 || cp.Spec.Version != "v1.37.2") {
			t.Errorf("MachineadmControlPlane: replicas %v version %q", cp.Spec.Replicas, cp.Spec.Version)
		}
	}
	slices.Sort(kinds)
	if want := []string{"Cluster", "DockerCluster", "DockerMachineTemplate", "DockerMachineTemplate", "MachineDeployment", "MachineadmConfigTemplate", "MachineadmControlPlane"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}
