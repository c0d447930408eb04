package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// examples returns the documented example specs by file name.
func examples(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("../../docs/examples/*.yaml")
	if err != nil || len(paths) < 3 {
		t.Fatalf("docs/examples: found %d specs (%v), want at least 3", len(paths), err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

// invalid loads data and returns the *InvalidSpecError it must fail with.
func invalid(t *testing.T, data []byte) *InvalidSpecError {
	t.Helper()
	l, err := Load(data, "test.yaml")
	var ise *InvalidSpecError
	if !errors.As(err, &ise) {
		t.Fatalf("Load: got %v, %v; want an *InvalidSpecError", l, err)
	}
	if !IsInvalidSpec(err) {
		t.Errorf("IsInvalidSpec(%v) = false", err)
	}
	return ise
}

// errorSet lists errors as sorted "path type" strings.
func errorSet(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+" "+string(e.Type))
	}
	slices.Sort(out)
	return out
}

func expectErrors(t *testing.T, ise *InvalidSpecError, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := errorSet(ise.Errors); !slices.Equal(got, want) {
		t.Errorf("errors:\n got  %q\n want %q\n%v", got, want, ise)
	}
}

func TestLoadExamples(t *testing.T) {
	for name, data := range examples(t) {
		t.Run(name, func(t *testing.T) {
			l, err := Load(data, name)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if l.APIVersion != v1alpha1.APIVersion {
				t.Errorf("APIVersion = %q", l.APIVersion)
			}
			s := l.Config.Spec
			if s.Role == "" || s.Action == "" || s.Kubernetes.ClusterName == "" || s.Report.Path == "" {
				t.Errorf("spec not defaulted: role %q action %q clusterName %q report.path %q", s.Role, s.Action, s.Kubernetes.ClusterName, s.Report.Path)
			}
			for _, w := range l.Warnings {
				t.Errorf("example has a warning; examples show good practice: %s", w)
			}
			// JSON is YAML: the same spec as JSON loads the same.
			js, err := yaml.YAMLToJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			lj, err := Load(js, name+".json")
			if err != nil {
				t.Fatalf("Load(JSON): %v", err)
			}
			if !reflect.DeepEqual(l.Config, lj.Config) {
				t.Errorf("YAML and JSON forms load differently")
			}
		})
	}
}

// structMappings lists the paths of every mapping in tree that decodes into
// a struct of type t (free-form maps such as sysctl are left out: any key
// is valid there).
func structMappings(tree map[string]any, t reflect.Type, path string, out *[]string) {
	*out = append(*out, path)
	for k, v := range tree {
		ft := jsonFieldType(t, k)
		for ft != nil && (ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice) {
			ft = ft.Elem()
		}
		if ft == nil || ft.Kind() != reflect.Struct {
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			structMappings(v, ft, join(path, k), out)
		case []any:
			for i, el := range v {
				if m, ok := el.(map[string]any); ok {
					structMappings(m, ft, join(path, k)+"["+strconv.Itoa(i)+"]", out)
				}
			}
		}
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// lookup returns the mapping at a path written as structMappings writes it.
func lookup(tree map[string]any, path string) map[string]any {
	if path == "" {
		return tree
	}
	cur := any(tree)
	for _, part := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		cur = cur.(map[string]any)[name]
		if hasIdx {
			i, _ := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			cur = cur.([]any)[i]
		}
	}
	return cur.(map[string]any)
}

// TestUnknownFieldEverywhere adds one unknown field to every struct mapping
// of every example in turn and expects exactly one error naming it.
func TestUnknownFieldEverywhere(t *testing.T) {
	root := reflect.TypeFor[v1alpha1.MachineBootstrapConfig]()
	for name, data := range examples(t) {
		var tree map[string]any
		if err := yaml.Unmarshal(data, &tree); err != nil {
			t.Fatal(err)
		}
		var paths []string
		structMappings(tree, root, "", &paths)
		if len(paths) < 8 {
			t.Fatalf("%s: only %d mappings found: %v", name, len(paths), paths)
		}
		for _, p := range paths {
			t.Run(name+"/"+p, func(t *testing.T) {
				var tree map[string]any
				_ = yaml.Unmarshal(data, &tree)
				lookup(tree, p)["colour"] = "blue"
				out, err := yaml.Marshal(tree)
				if err != nil {
					t.Fatal(err)
				}
				ise := invalid(t, out)
				expectErrors(t, ise, join(p, "colour")+" "+string(field.ErrorTypeInvalid))
				if !strings.Contains(ise.Error(), "unknown field") {
					t.Errorf("message does not say unknown field: %v", ise)
				}
			})
		}
	}
}

// workerDoc is the shared minimal worker spec.
const workerDoc = testspec.MinimalWorker

func TestThreeMistakesAllListed(t *testing.T) {
	// One unknown field, one mistyped field, one invalid value: decoding
	// and validation problems come back together.
	doc := strings.Replace(workerDoc, "  role: Worker\n", "  role: Worker\n  colour: blue\n", 1)
	doc = strings.Replace(doc, "{version: v1.37.2}", "{version: v1.37.2, clusterName: Bad_Name}", 1)
	doc += "    unsafeSkipCAVerification: \"no\"\n"
	ise := invalid(t, []byte(doc))
	expectErrors(t, ise, "spec.colour FieldValueInvalid", "spec.join.unsafeSkipCAVerification FieldValueTypeInvalid", "spec.kubernetes.clusterName FieldValueInvalid")

	// Three validation errors.
	doc = strings.NewReplacer("v1.37.2", "v1.37", "cp.demo.example:6443", "cp.demo.example", "/etc/machineadm/secrets/bootstrap-token", "token").Replace(workerDoc)
	expectErrors(t, invalid(t, []byte(doc)), "spec.kubernetes.version FieldValueInvalid", "spec.join.apiServerEndpoint FieldValueInvalid", "spec.join.token.file FieldValueInvalid")
}

func TestMistypedFields(t *testing.T) {
	ti := " " + string(field.ErrorTypeTypeInvalid)
	for _, tc := range []struct {
		name, add string
		want      []string
		detail    string
	}{
		{"scalar", "  node: {name: 5}\n", []string{"spec.node.name" + ti}, "got number, want string"},
		{"required scalar not repeated as missing", "", []string{"spec.kubernetes.version" + ti}, "got number, want string"},
		{"boolean", "  report: {console: \"yes\"}\n", []string{"spec.report.console" + ti}, "got string, want boolean"},
		{"list items", "  node: {kubelet: {extraArgs: [{name: a, value: b}, {name: c, value: 30}, {name: d, value: true}, {name: e, value: 31}]}}\n",
			[]string{"spec.node.kubelet.extraArgs[1].value" + ti, "spec.node.kubelet.extraArgs[3].value" + ti, "spec.node.kubelet.extraArgs[2].value" + ti}, "want string"},
		{"map values", "  host: {sysctl: {net.ipv4.ip_forward: 1, vm.swappiness: \"10\"}}\n", []string{"spec.host.sysctl[net.ipv4.ip_forward]" + ti}, "got number, want string"},
		{"scalar list items", "  host: {kernelModules: [1, overlay, 2]}\n", []string{"spec.host.kernelModules[0]" + ti, "spec.host.kernelModules[2]" + ti}, "want string"},
		{"object for list", "  node: {taints: {key: a, effect: NoSchedule}}\n", []string{"spec.node.taints" + ti}, "got object, want list"},
		{"integer", "  host: {containerd: {configVersion: \"3\"}}\n", []string{"spec.host.containerd.configVersion" + ti}, "got string, want integer"},
		{"fraction for integer", "  host: {containerd: {configVersion: 2.5}}\n", []string{"spec.host.containerd.configVersion" + ti}, "got number, want integer"},
		{"struct", "  host: {files: [{path: /a}, \"/b\"]}\n", []string{"spec.host.files[1]" + ti}, "got string, want mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := workerDoc + tc.add
			if tc.add == "" {
				doc = strings.Replace(workerDoc, "{version: v1.37.2}", "{version: 1.37}", 1)
			}
			ise := invalid(t, []byte(doc))
			expectErrors(t, ise, tc.want...)
			if !strings.Contains(ise.Error(), tc.detail) {
				t.Errorf("message lacks %q:\n%v", tc.detail, ise)
			}
		})
	}
}

func TestDuplicateKeys(t *testing.T) {
	dup := " " + string(field.ErrorTypeDuplicate)
	for _, tc := range []struct{ name, doc, want string }{
		{"top", strings.Replace(workerDoc, "kind: MachineBootstrapConfig\n", "kind: MachineBootstrapConfig\nkind: MachineBootstrapConfig\n", 1), "kind" + dup},
		{"field", strings.Replace(workerDoc, "  role: Worker\n", "  role: Worker\n  role: ControlPlane\n", 1), "spec.role" + dup},
		{"in list element", workerDoc + "  host:\n    files:\n      - {path: /a}\n      - {path: /b, mode: \"0600\", mode: \"0644\"}\n", "spec.host.files[1].mode" + dup},
		{"map key", workerDoc + "  host:\n    sysctl:\n      vm.swappiness: \"10\"\n      vm.swappiness: \"20\"\n", "spec.host.sysctl[vm.swappiness]" + dup},
		{"JSON", `{"apiVersion": "machineadm.io/v1alpha1", "kind": "MachineBootstrapConfig", "kind": "MachineBootstrapConfig", "spec": {"role": "Worker", "kubernetes": {"version": "v1.37.2"}, "join": {"apiServerEndpoint": "a.example:6443", "token": {"file": "/t"}, "unsafeSkipCAVerification": true}}}`, "kind" + dup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ise := invalid(t, []byte(tc.doc))
			expectErrors(t, ise, tc.want)
			if !strings.Contains(ise.Error(), "given twice (lines") {
				t.Errorf("message lacks the lines: %v", ise)
			}
		})
	}
}

func TestTypeMeta(t *testing.T) {
	body := "spec:\n  role: Worker\n"
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"unknown apiVersion", "apiVersion: machineadm.io/v1\nkind: MachineBootstrapConfig\n" + body, []string{"apiVersion FieldValueNotSupported"}},
		{"Kubernetes apiVersion", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n", []string{"apiVersion FieldValueNotSupported", "kind FieldValueNotSupported"}},
		{"missing apiVersion", "kind: MachineBootstrapConfig\n" + body, []string{"apiVersion FieldValueRequired"}},
		{"apiVersion not a string", "apiVersion: 1\nkind: MachineBootstrapConfig\n" + body, []string{"apiVersion FieldValueTypeInvalid"}},
		{"unknown kind", strings.Replace(workerDoc, "kind: MachineBootstrapConfig", "kind: MachineConfig", 1), []string{"kind FieldValueNotSupported"}},
		{"missing kind", strings.Replace(workerDoc, "kind: MachineBootstrapConfig\n", "", 1), []string{"kind FieldValueRequired"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, invalid(t, []byte(tc.doc)), tc.want...)
		})
	}
}

// TestNotASpec covers input that is no spec document at all: each gives
// one error about the whole document.
func TestNotASpec(t *testing.T) {
	for _, tc := range []struct{ name, doc, msg string }{
		{"empty", "", "the spec is empty"},
		{"blank", "  \n\t\n", "the spec is empty"},
		{"comments only", "# nothing here\n", "the spec is empty"},
		{"null", "null\n", "the spec is empty"},
		{"not YAML", "spec: [unclosed\n", "not a YAML or JSON document"},
		{"bad indentation", "apiVersion: a\n  kind: b\n kind: c\n", "not a YAML or JSON document"},
		{"list", "- role: Worker\n", "must be a YAML mapping"},
		{"scalar", "hello\n", "must be a YAML mapping"},
		{"two documents", workerDoc + "---\n" + workerDoc, "holds 2 YAML documents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ise := invalid(t, []byte(tc.doc))
			if len(ise.Errors) != 1 || ise.Errors[0].Field != "" || !strings.Contains(ise.Error(), tc.msg) {
				t.Errorf("want one document error containing %q, got:\n%v", tc.msg, ise)
			}
			if strings.Contains(ise.Error(), "<nil>") {
				t.Errorf("message shows a nil path:\n%v", ise)
			}
		})
	}
	// A trailing document separator is not a second document.
	if _, err := Load([]byte(workerDoc+"---\n"), "x"); err != nil {
		t.Errorf("trailing ---: %v", err)
	}
}

func TestInvalidSpecErrorText(t *testing.T) {
	doc := strings.Replace(workerDoc, "{version: v1.37.2}", "{version: v1.37.2, clusterName: Bad_Name}", 1) + "  colour: blue\n"
	msg := invalid(t, []byte(doc)).Error()
	lines := strings.Split(msg, "\n")
	if lines[0] != "invalid machine spec test.yaml: 2 error(s)" || len(lines) != 3 {
		t.Fatalf("unexpected text:\n%s", msg)
	}
	if !strings.HasPrefix(lines[1], "  spec.colour: ") || !strings.HasPrefix(lines[2], "  spec.kubernetes.clusterName: Invalid value: \"Bad_Name\"") {
		t.Errorf("lines are not \"path: message\":\n%s", msg)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(good, []byte(workerDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := LoadFile(good); err != nil || l.Config.Spec.Role != machineadm.RoleWorker {
		t.Errorf("LoadFile(%s) = %v, %v", good, l, err)
	}
	_, err := LoadFile(filepath.Join(dir, "missing.yaml"))
	if !IsInvalidSpec(err) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("LoadFile(missing) = %v, want an *InvalidSpecError naming the file", err)
	}
}

func TestDecodeNoDefaults(t *testing.T) {
	cfg, v, err := DecodeNoDefaults([]byte(workerDoc), "w.yaml")
	if err != nil || v != v1alpha1.APIVersion {
		t.Fatalf("DecodeNoDefaults: %v, %q", err, v)
	}
	if cfg.Spec.Kubernetes.ClusterName != "" || cfg.Spec.Action != "" || cfg.Spec.Report.Console != nil {
		t.Errorf("defaults were applied: %+v", cfg.Spec)
	}
	if _, _, err := DecodeNoDefaults([]byte(workerDoc+"  colour: blue\n"), "w.yaml"); !IsInvalidSpec(err) || !strings.Contains(err.Error(), "spec.colour") {
		t.Errorf("unknown field: got %v", err)
	}
	// Validation errors are not its business.
	if _, _, err := DecodeNoDefaults([]byte(strings.Replace(workerDoc, "v1.37.2", "latest", 1)), "w.yaml"); err != nil {
		t.Errorf("DecodeNoDefaults validated: %v", err)
	}
}

// TestYAMLMergeKeysRefused: a merge key ("<<") is refused with the path
// of its mapping, wherever it is; it was resolved with the merged value
// winning over the mapping's own key (name: w1 next to <<: {name: w2}
// named the node w2), so the spec read differently from what it said.
func TestYAMLMergeKeysRefused(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"merged key over an own key", workerDoc + "  node: {name: w1, <<: {name: w2}}\n", "spec.node"},
		{"merge from an anchor", strings.Replace(workerDoc, "  join:\n", "  x0: &j {apiServerEndpoint: evil.example:6443}\n  join:\n    <<: *j\n", 1), "spec.join"},
		{"a merge alone", workerDoc + "  node: {<<: {name: w2}}\n", "spec.node"},
		{"merge of a list", workerDoc + "  node: {<<: [{name: w1}, {name: w2}]}\n", "spec.node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ise := invalid(t, []byte(tc.doc))
			if !strings.Contains(ise.Error(), tc.want+": ") || !strings.Contains(ise.Error(), "merge key") {
				t.Errorf("error does not name the merge key at %s: %v", tc.want, ise)
			}
		})
	}
}

// TestForeignYAMLTagsRefused: a tag outside the YAML core schema, local
// (!vault) or global (!!binary), on a value, a key, a list item or a
// mapping, is refused with the node's path; it was dropped and the value
// read as plain text. Core tags stay allowed.
func TestForeignYAMLTagsRefused(t *testing.T) {
	inv := " " + string(field.ErrorTypeInvalid)
	for _, tc := range []struct{ name, doc, want string }{
		{"vault on a token", strings.Replace(workerDoc, "token: {file: /etc/machineadm/secrets/bootstrap-token}", "token: {value: !vault abcdef.0123456789abcdef}", 1), "spec.join.token.value" + inv},
		{"binary on a list item", workerDoc + "  host:\n    kernelModules: [overlay, !!binary YnJfbmV0ZmlsdGVy]\n", "spec.host.kernelModules[1]" + inv},
		{"tag on a map key", workerDoc + "  host:\n    sysctl:\n      !k vm.swappiness: \"10\"\n", "spec.host.sysctl[vm.swappiness]" + inv},
		{"tag on a mapping", strings.Replace(workerDoc, "  join:\n", "  join: !ref\n", 1), "spec.join" + inv},
		{"tag on the document", "--- !cfg\n" + workerDoc, "<document>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ise := invalid(t, []byte(tc.doc))
			if tc.want != "<document>" {
				expectErrors(t, ise, tc.want)
			}
			if !strings.Contains(ise.Error(), "YAML tag") || !strings.Contains(ise.Error(), "is not supported") {
				t.Errorf("message does not name the tag: %v", ise)
			}
		})
	}
	ok := workerDoc + "  host:\n    sysctl:\n      vm.swappiness: !!str 10\n    kernelModules: !!seq [overlay]\n"
	if _, err := Load([]byte(ok), "ok.yaml"); err != nil {
		t.Errorf("core tags refused: %v", err)
	}
}
