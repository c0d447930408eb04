package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// version is one supported apiVersion of the spec.
type version struct {
	// root is the Go type of a document of this version.
	root reflect.Type
	// decode strictly decodes JSON into this version, applies its defaults
	// when asked and converts it to the hub. It returns a hub spec
	// whenever the document could be decoded at all, together with the
	// problems found; unknown fields are skipped and mistyped fields left
	// unset.
	decode func(data []byte, defaults bool) (*machineadm.MachineBootstrapConfig, field.ErrorList, error)
}

// versions maps each supported apiVersion to its decoder. The newest
// version is the hub (machineadm.LatestAPIVersion: its types are the hub's
// types), so it decodes without conversion. An older version decodes into
// its own types, applies its own defaults and converts into the next
// version, and so on to the hub (see docs/design.md, "Adding a spec
// version"): a new version adds its row here.
var versions = map[string]version{
	machineadm.LatestAPIVersion: {root: reflect.TypeFor[machineadm.MachineBootstrapConfig](), decode: decodeLatest},
}

// decode reads one YAML or JSON spec document. It returns the hub spec
// (nil when the document cannot be decoded at all), the document's
// apiVersion, and every problem found on the way.
func decode(data []byte, defaults bool) (*machineadm.MachineBootstrapConfig, string, field.ErrorList) {
	if strings.TrimSpace(string(data)) == "" {
		return nil, "", field.ErrorList{docError("the spec is empty; it needs apiVersion, kind and spec")}
	}
	// The strict conversion refuses duplicate keys without a path, and
	// later documents and tags are dropped silently: in each case checkYAML
	// (a second parse, so only then: a tag needs a "!", a merge key "<<")
	// names the problem.
	jsonData, err := yaml.YAMLToJSONStrict(data)
	needCheck := err != nil || bytes.HasPrefix(data, []byte("---")) || bytes.Contains(data, []byte("\n---")) || bytes.IndexByte(data, '!') >= 0 || bytes.Contains(data, []byte("<<"))
	if err != nil {
		jsonData, err = yaml.YAMLToJSON(data)
	}
	if err != nil {
		// Never the raw message: the converter may quote a value.
		return nil, "", field.ErrorList{conversionError(err, data)}
	}
	if bytes.Equal(bytes.TrimSpace(jsonData), []byte("null")) {
		return nil, "", field.ErrorList{docError("the spec is empty; it needs apiVersion, kind and spec")}
	}
	var meta struct {
		APIVersion json.RawMessage `json:"apiVersion"`
		Kind       json.RawMessage `json:"kind"`
	}
	if err := json.Unmarshal(jsonData, &meta); err != nil {
		var top any
		_ = json.Unmarshal(jsonData, &top)
		return nil, "", field.ErrorList{docError("must be a YAML mapping with apiVersion, kind and spec, not a " + jsonKind(top))}
	}

	var errs field.ErrorList
	apiVersion, aok := rawString(meta.APIVersion)
	v, known := versions[apiVersion]
	switch {
	case isNull(meta.APIVersion):
		errs = append(errs, field.Required(field.NewPath("apiVersion"), machineadm.LatestAPIVersion))
	case !aok:
		errs = append(errs, field.TypeInvalid(field.NewPath("apiVersion"), field.OmitValueType{}, "must be a string such as "+machineadm.LatestAPIVersion))
	case !known:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), apiVersion, supportedVersions()))
	}
	switch kind, ok := rawString(meta.Kind); {
	case isNull(meta.Kind):
		errs = append(errs, field.Required(field.NewPath("kind"), machineadm.Kind))
	case !ok:
		errs = append(errs, field.NotSupported(field.NewPath("kind"), string(meta.Kind), []string{machineadm.Kind}))
	case kind != machineadm.Kind:
		errs = append(errs, field.NotSupported(field.NewPath("kind"), kind, []string{machineadm.Kind}))
	}
	if needCheck {
		errs = append(errs, checkYAML(data, v.root)...)
	}
	if len(errs) > 0 && !known {
		return nil, apiVersion, errs
	}
	cfg, decodeErrs, err := v.decode(jsonData, defaults)
	errs = append(errs, decodeErrs...)
	if err != nil {
		errs = append(errs, field.InternalError(nil, err))
		return nil, apiVersion, errs
	}
	return cfg, apiVersion, errs
}

// decodeLatest decodes a document of the newest version, which is the hub.
func decodeLatest(data []byte, defaults bool) (*machineadm.MachineBootstrapConfig, field.ErrorList, error) {
	var hub machineadm.MachineBootstrapConfig
	errs, ok := strictUnmarshal(data, &hub)
	if !ok {
		return nil, errs, nil
	}
	if defaults {
		machineadm.SetDefaults(&hub)
	}
	return &hub, errs, nil
}

// rawString decodes a JSON string; ok is false for any other JSON value.
func rawString(raw json.RawMessage) (s string, ok bool) {
	return s, json.Unmarshal(raw, &s) == nil && len(raw) > 0 && raw[0] == '"'
}

// isNull reports an absent or null JSON value.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// maxTypeErrors bounds how many decoding passes one document gets.
const maxTypeErrors = 32

// strictUnmarshal decodes JSON into out and turns unknown, duplicate and
// mistyped fields into field errors with their paths. The JSON decoder
// stops at the first mistyped field, so every value of that kind at that
// path is removed and decoding retried, to report every problem in one
// pass. ok is false when out could not be filled at all.
func strictUnmarshal(data []byte, out any) (errs field.ErrorList, ok bool) {
	for range maxTypeErrors {
		strictErrs, err := sigsjson.UnmarshalStrict(data, out)
		if err == nil {
			for _, se := range strictErrs {
				errs = append(errs, strictError(se))
			}
			return errs, true
		}
		tm, isType := parseTypeError(err)
		if !isType {
			return append(errs, docError(err.Error())), false
		}
		var tree any
		if json.Unmarshal(data, &tree) != nil {
			return append(errs, tm.error(parsePath(tm.dotted))), false
		}
		_, found := prune(tree, strings.Split(tm.dotted, "."), tm.got, nil)
		if len(found) == 0 {
			// Cannot locate the value: report the decoder's path and stop.
			return append(errs, tm.error(parsePath(tm.dotted))), false
		}
		for _, p := range found {
			errs = append(errs, tm.error(p))
		}
		if data, err = json.Marshal(tree); err != nil {
			return errs, false
		}
		reset(out)
	}
	return append(errs, docError(fmt.Sprintf("more than %d mistyped fields; fix these first", maxTypeErrors))), false
}

// reset zeroes the value out points to before another decoding pass.
func reset(out any) {
	v := reflect.ValueOf(out).Elem()
	v.Set(reflect.Zero(v.Type()))
}

func supportedVersions() []string {
	out := make([]string, 0, len(versions))
	for v := range versions {
		out = append(out, v)
	}
	return out
}
