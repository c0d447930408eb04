// Command gen-schema writes the JSON Schemas and the field references of
// machineadm's public documents from their Go types and doc comments:
//
//	docs/schema/machinebootstrapconfig.v1alpha1.json  JSON Schema (draft 2020-12) of the newest spec version
//	docs/spec-reference.md                            every field: path, type, default, description
//	docs/schema/bootstrapreport.v1alpha1.json         JSON Schema of the outcome report (docs/report.md)
//
// The spec's schema is named by machineadm.LatestVersion. The schema of an
// older, frozen version stays committed as it was last generated.
//
// Run it from the repository root with `make schema` (go run ./hack/gen-schema).
// With -check it writes nothing and exits 1 when a committed file differs
// from a fresh generation; the tests in this directory do the same check.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/report"
)

// module is the Go module path; doc comments are looked up under it.
const module = "github.com/machineadm/machineadm"

// specSchema is the JSON Schema file of the newest spec version.
const specSchema = "docs/schema/machinebootstrapconfig." + machineadm.LatestVersion + ".json"

// root is one published document type.
type root struct {
	// Type is the Go type whose JSON form the schema describes.
	Type reflect.Type
	// Schema is the output path of the JSON Schema, relative to the
	// repository root.
	Schema string
	// Consts pins top-level string properties to one value, for example
	// apiVersion and kind.
	Consts map[string]string
	// Reference is the output path of the Markdown field reference; empty
	// for none.
	Reference string
	// Defaults returns the defaults applied to the document (see
	// specDefaults); nil when the document has none.
	Defaults func() (defaults, error)
}

// roots lists every generated document. To publish another document, add
// one entry here (the outcome report below is the one-line form; add
// Reference: "docs/<name>-reference.md" for a field reference), then run
// `make schema` and commit the new files. Named string types with
// constants declared in their package (like Role, or the report's Class)
// become enums automatically.
var roots = []root{
	{
		Type:      reflect.TypeFor[machineadm.MachineBootstrapConfig](),
		Schema:    specSchema,
		Consts:    map[string]string{"apiVersion": machineadm.LatestAPIVersion, "kind": machineadm.Kind},
		Reference: "docs/spec-reference.md",
		Defaults:  specDefaults,
	},
	{
		Type:   reflect.TypeFor[report.BootstrapReport](),
		Schema: "docs/schema/bootstrapreport.v1alpha1.json",
		Consts: map[string]string{"apiVersion": report.APIVersion, "kind": report.Kind},
	},
}

func main() {
	check := flag.Bool("check", false, "write nothing; exit 1 when a generated file is missing or differs")
	flag.Parse()
	if _, err := os.Stat("go.mod"); err != nil {
		fmt.Fprintln(os.Stderr, "gen-schema: run from the repository root (make schema)")
		os.Exit(2)
	}
	files, err := generate(roots)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-schema:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	stale := 0
	for _, name := range names {
		old, _ := os.ReadFile(name)
		if bytes.Equal(old, files[name]) {
			continue
		}
		if *check {
			fmt.Fprintf(os.Stderr, "gen-schema: %s is out of date; run `make schema`\n", name)
			stale++
			continue
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "gen-schema:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(name, files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen-schema:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", name)
	}
	if stale > 0 {
		os.Exit(1)
	}
}

// generate returns the content of every output file by path. It reads doc
// comments from the source tree, so the working directory must be the
// repository root.
func generate(roots []root) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, r := range roots {
		s, err := reflectSchema(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Type, err)
		}
		data, err := marshalSchema(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Type, err)
		}
		files[r.Schema] = data
		if r.Reference == "" {
			continue
		}
		var defs defaults
		if r.Defaults != nil {
			if defs, err = r.Defaults(); err != nil {
				return nil, fmt.Errorf("%s defaults: %w", r.Type, err)
			}
		}
		files[r.Reference] = renderReference(r, s, defs)
	}
	return files, nil
}
