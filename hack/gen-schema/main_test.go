package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/spec"
)

// atRoot makes the repository root the working directory, as `make
// schema` runs the generator there.
func atRoot(t *testing.T) {
	t.Helper()
	t.Chdir("../..")
}

// TestGeneratedFilesUpToDate fails when a committed schema or reference
// differs from a fresh generation: a Go type or doc comment changed
// without `make schema`.
func TestGeneratedFilesUpToDate(t *testing.T) {
	atRoot(t)
	files, err := generate(roots)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("generated %d files, want the schema and the reference", len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%s: %v; run `make schema` and commit the result", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date (first difference at line %d); run `make schema` (go run ./hack/gen-schema) and commit the result", name, firstDiffLine(got, want))
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// compileSchema loads the committed spec schema with a JSON Schema
// validator that is not the generator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const path = specSchema
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

func instance(t *testing.T, yamlDoc []byte) any {
	t.Helper()
	js, err := yaml.YAMLToJSON(yamlDoc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestExamplesMatchSchema(t *testing.T) {
	atRoot(t)
	s := compileSchema(t)
	paths, _ := filepath.Glob("docs/examples/*.yaml")
	if len(paths) < 3 {
		t.Fatalf("found %d examples", len(paths))
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(instance(t, data)); err != nil {
			t.Errorf("%s does not match the schema:\n%v", p, err)
		}
	}
}

// worker is the shared minimal worker spec.
const worker = testspec.MinimalWorker

// TestSchemaAndLoaderAgree feeds the schema and the loader the same
// structurally broken specs: both must refuse each, and the schema must
// name the same location.
func TestSchemaAndLoaderAgree(t *testing.T) {
	atRoot(t)
	s := compileSchema(t)
	if _, err := spec.Load([]byte(worker), "worker"); err != nil {
		t.Fatalf("the base spec is invalid: %v", err)
	}
	if err := s.Validate(instance(t, []byte(worker))); err != nil {
		t.Fatalf("the base spec does not match the schema: %v", err)
	}
	for _, tc := range []struct{ name, doc, where string }{
		{"unknown field", worker + "  colour: blue\n", "/spec"},
		{"unknown nested field", strings.Replace(worker, "{version: v1.37.2}", "{version: v1.37.2, verison: x}", 1), "/spec/kubernetes"},
		{"role not in enum", strings.Replace(worker, "role: Worker", "role: Master", 1), "/spec/role"},
		{"apiVersion other", strings.Replace(worker, machineadm.LatestAPIVersion, "machineadm.io/v1", 1), "/apiVersion"},
		{"kind other", strings.Replace(worker, "kind: MachineBootstrapConfig", "kind: Machine", 1), "/kind"},
		{"required missing", strings.Replace(worker, "  kubernetes: {version: v1.37.2}\n", "", 1), "/spec"},
		{"wrong type", worker + "  report: {console: \"yes\"}\n", "/spec/report/console"},
		{"list item wrong type", worker + "  host: {kernelModules: [overlay, 2]}\n", "/spec/host/kernelModules/1"},
		{"map value wrong type", worker + "  host: {sysctl: {vm.swappiness: 10}}\n", "/spec/host/sysctl/vm.swappiness"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := spec.Load([]byte(tc.doc), tc.name); err == nil {
				t.Errorf("the loader accepts it")
			}
			err := s.Validate(instance(t, []byte(tc.doc)))
			if err == nil {
				t.Fatalf("the schema accepts it")
			}
			if !strings.Contains(err.Error(), "'"+tc.where+"'") {
				t.Errorf("schema error does not point at %s:\n%v", tc.where, err)
			}
		})
	}
}

// TestDocumentedDefaults checks the doc comments against SetDefaults:
// every default the code applies is mentioned in its field's comment, and
// a literal default written there ("Default \"24h\"") is the one applied.
func TestDocumentedDefaults(t *testing.T) {
	atRoot(t)
	r := roots[0]
	s, err := reflectSchema(r)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := r.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]row{}
	for _, sec := range sections(s, r.Type.Name()) {
		for _, rw := range sec.Rows {
			rows[rw.Path] = rw
		}
	}
	if len(defs) < 20 {
		t.Fatalf("only %d defaults found; specDefaults lost track: %v", len(defs), defs)
	}
	for path, byCond := range defs {
		rw, ok := rows[path]
		if !ok {
			t.Errorf("%s: defaulted, but not a field of the schema", path)
			continue
		}
		if !strings.Contains(strings.ToLower(rw.Description), "default") {
			t.Errorf("%s: SetDefaults sets %v but the doc comment does not mention a default", path, byCond)
		}
	}
	for path, rw := range rows {
		lit := documentedDefault(rw.Description)
		if lit == "" || strings.Contains(lit, "<") {
			continue // no literal, or a template such as "https://<host>"
		}
		applied := defs[path]
		if len(applied) == 0 {
			if lit != "false" && lit != "0" && lit != `""` {
				t.Errorf("%s: the comment documents default %s, SetDefaults applies none", path, lit)
			}
			continue
		}
		match := false
		for _, v := range applied {
			match = match || v == lit
		}
		if !match {
			t.Errorf("%s: the comment documents default %s, SetDefaults applies %v", path, lit, applied)
		}
	}
}

func TestDocumentedDefaultParsing(t *testing.T) {
	for desc, want := range map[string]string{
		`TTL is how long. Default "24h".`:                     `"24h"`,
		`BindPort is the port. Default 6443. kubeadm field.`:  `6443`,
		`Console writes. Default true.`:                       `true`,
		`Usages. Default ["signing", "authentication"].`:      `["signing","authentication"]`,
		`Action is Init or Join. Default: Join.`:              ``,
		`CgroupDriver is "systemd" (default) or "cgroupfs".`:  `"systemd"`,
		`Runner. Only "StaticPods" (the default) is built.`:   `"StaticPods"`,
		`Name of the node. Default: the host name.`:           ``,
		`Nothing about it.`:                                   ``,
		`Encoding: "" (plain text, default), "base64" or gz.`: ``,
	} {
		if got := documentedDefault(desc); got != want {
			t.Errorf("documentedDefault(%q) = %q, want %q", desc, got, want)
		}
	}
}

func TestReferenceListsEveryField(t *testing.T) {
	atRoot(t)
	ref, err := os.ReadFile(roots[0].Reference)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reflectSchema(roots[0])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sec := range sections(s, roots[0].Type.Name()) {
		for _, rw := range sec.Rows {
			n++
			if !bytes.Contains(ref, []byte("| `"+rw.Path+"` |")) {
				t.Errorf("%s missing from %s", rw.Path, roots[0].Reference)
			}
			if rw.Description == "" {
				t.Errorf("%s has no doc comment", rw.Path)
			}
		}
	}
	// Spot checks of paths through lists, pointers and inlined structs.
	for _, p := range []string{"spec.controlPlane.apiServer.extraArgs[].name", "spec.node.taints[].effect", "spec.host.containerd.registries[].mirrors[].url", "spec.report.console"} {
		if !bytes.Contains(ref, []byte("| `"+p+"` |")) {
			t.Errorf("%s missing", p)
		}
	}
	if n < 100 {
		t.Errorf("only %d fields in the reference", n)
	}
}

func TestTypedStringConstsRefusesPartialLists(t *testing.T) {
	out, bad := map[string][]string{}, map[string]bool{}
	const src = `package p
type Mode string
type Other string
const (
	ModeA Mode = "a"
	ModeB Mode = "b"
	prefix = "x"
	OtherA Other = "a"
	OtherB Other = prefix + "b"
)`
	f := parseSource(t, src)
	collectConsts(f, "example.com/p", out, bad)
	if got := strings.Join(out["example.com/p.Mode"], ","); got != "a,b" || !bad["example.com/p.Other"] {
		t.Errorf("Mode = %q (want a,b); Other marked bad = %v (want true)", got, bad["example.com/p.Other"])
	}
}

func parseSource(t *testing.T, src string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
