// Package spec reads machine spec documents: it decodes them strictly by
// apiVersion, applies that version's defaults, converts them to the hub
// types and validates them, reporting every problem with its field path.
package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
)

// InvalidSpecError is returned for a spec that cannot be used: unreadable,
// not YAML, an unknown apiVersion or kind, unknown or mistyped fields, or
// failed validation. The CLI maps it to exit code 2.
type InvalidSpecError struct {
	// Source names where the spec came from (a path or "-").
	Source string
	// Errors lists every problem, each with its field path.
	Errors field.ErrorList
}

// Error lists one problem per line as "path: message".
func (e *InvalidSpecError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid machine spec %s: %d error(s)", e.Source, len(e.Errors))
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// IsInvalidSpec reports whether err is (or wraps) an *InvalidSpecError.
func IsInvalidSpec(err error) bool {
	var ise *InvalidSpecError
	return errors.As(err, &ise)
}

// Loaded is a spec read and checked by Load.
type Loaded struct {
	// Config is the defaulted hub spec.
	Config *machineadm.MachineBootstrapConfig
	// APIVersion is the version the document was written in.
	APIVersion string
	// Warnings are problems that do not make the spec invalid.
	Warnings []validation.Warning
}

// version is one supported apiVersion of the spec.
type version struct {
	// decode strictly decodes JSON into this version, applies its defaults
	// and converts it to the hub.
	decode func(data []byte, defaults bool) (*machineadm.MachineBootstrapConfig, field.ErrorList, error)
}

// versions maps each supported apiVersion to its decoder. A new version is
// added here beside the old ones.
var versions = map[string]version{
	v1alpha1.APIVersion: {decode: decodeV1alpha1},
}

// LatestAPIVersion is the newest spec version machineadm writes.
const LatestAPIVersion = v1alpha1.APIVersion

// LoadFile reads a spec from path, or from standard input when path is "-".
func LoadFile(path string) (*Loaded, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, &InvalidSpecError{Source: path, Errors: field.ErrorList{field.InternalError(nil, fmt.Errorf("reading spec: %w", err))}}
	}
	return Load(data, path)
}

// Load decodes, defaults, converts and validates one spec document. source
// names it in errors. Any problem returns an *InvalidSpecError listing all
// problems found.
func Load(data []byte, source string) (*Loaded, error) {
	cfg, apiVersion, errs := decode(data, true)
	if len(errs) > 0 {
		return nil, &InvalidSpecError{Source: source, Errors: errs}
	}
	res := validation.Validate(cfg)
	if len(res.Errors) > 0 {
		return nil, &InvalidSpecError{Source: source, Errors: res.Errors}
	}
	return &Loaded{Config: cfg, APIVersion: apiVersion, Warnings: res.Warnings}, nil
}

// DecodeNoDefaults decodes and converts a spec without defaulting or
// validating it, as `config migrate` needs.
func DecodeNoDefaults(data []byte, source string) (*machineadm.MachineBootstrapConfig, string, error) {
	cfg, apiVersion, errs := decode(data, false)
	if len(errs) > 0 {
		return nil, "", &InvalidSpecError{Source: source, Errors: errs}
	}
	return cfg, apiVersion, nil
}

func decode(data []byte, defaults bool) (*machineadm.MachineBootstrapConfig, string, field.ErrorList) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, "", field.ErrorList{field.Invalid(nil, "", "not a YAML or JSON document: "+err.Error())}
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(jsonData, &meta); err != nil {
		return nil, "", field.ErrorList{field.Invalid(nil, "", "not a YAML mapping: "+err.Error())}
	}
	var errs field.ErrorList
	v, ok := versions[meta.APIVersion]
	if !ok {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), meta.APIVersion, supportedVersions()))
	}
	if meta.Kind != v1alpha1.Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), meta.Kind, []string{v1alpha1.Kind}))
	}
	if len(errs) > 0 {
		return nil, "", errs
	}
	cfg, errs, err := v.decode(jsonData, defaults)
	if err != nil {
		errs = append(errs, field.InternalError(nil, err))
	}
	return cfg, meta.APIVersion, errs
}

func decodeV1alpha1(data []byte, defaults bool) (*machineadm.MachineBootstrapConfig, field.ErrorList, error) {
	var ext v1alpha1.MachineBootstrapConfig
	errs := strictUnmarshal(data, &ext)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	if defaults {
		v1alpha1.SetDefaults(&ext)
	}
	hub, err := v1alpha1.ConvertToHub(&ext)
	return hub, nil, err
}

// maxTypeErrors bounds how many mistyped fields one decode reports.
const maxTypeErrors = 32

// strictUnmarshal decodes JSON into out and turns unknown, duplicate and
// mistyped fields into field errors with their paths. The JSON decoder
// stops at the first mistyped field, so that field is removed and decoding
// retried, to report every problem in one pass.
func strictUnmarshal(data []byte, out any) field.ErrorList {
	var errs field.ErrorList
	for range maxTypeErrors {
		strictErrs, err := sigsjson.UnmarshalStrict(data, out)
		if err == nil {
			for _, se := range strictErrs {
				errs = append(errs, strictError(se))
			}
			return errs
		}
		fe, dotted := typeError(err)
		errs = append(errs, fe)
		var tree any
		if dotted == "" || json.Unmarshal(data, &tree) != nil || !deletePath(tree, dotted) {
			return errs
		}
		if data, err = json.Marshal(tree); err != nil {
			return errs
		}
	}
	return errs
}

func supportedVersions() []string {
	out := make([]string, 0, len(versions))
	for v := range versions {
		out = append(out, v)
	}
	return out
}
