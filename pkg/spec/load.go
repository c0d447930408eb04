// Package spec reads machine spec documents: it decodes them strictly by
// apiVersion, applies that version's defaults, converts them to the hub
// types and validates them, reporting every problem with its field path.
package spec

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
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

// Error lists one problem per line as "path: message". Whoever built the
// error, each line quotes at most MaxQuotedValue bytes of a value, the
// source, paths and details have their control characters escaped
// (newInvalid), and at most 100 problems are listed.
func (e *InvalidSpecError) Error() string {
	var b strings.Builder
	shown := newInvalid(e.Source, e.Errors)
	fmt.Fprintf(&b, "invalid machine spec %s: %d error(s)", shown.Source, len(e.Errors))
	for _, fe := range shown.Errors {
		b.WriteString("\n  ")
		if fe.Field == "" {
			b.WriteString(fe.ErrorBody()) // the whole document
		} else {
			b.WriteString(fe.Error())
		}
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

// LoadFile reads a spec from path, or from standard input when path is
// "-", through ReadSource (regular files only, at most MaxSpecSize bytes).
func LoadFile(path string) (*Loaded, error) {
	data, err := ReadSource(path, os.Stdin)
	if err != nil {
		return nil, err
	}
	return Load(data, path)
}

// Load decodes, defaults, converts and validates one spec document. source
// names it in errors. Any problem returns an *InvalidSpecError listing all
// problems found: decoding problems (unknown, duplicate or mistyped
// fields) and validation errors together, except validation errors at or
// below a field that could not be decoded. A document with a key given
// twice is not validated: which value counts is ambiguous. A document of
// more than MaxSpecSize bytes is refused before it is parsed.
func Load(data []byte, source string) (*Loaded, error) {
	if err := checkSize(data, source); err != nil {
		return nil, err
	}
	cfg, apiVersion, errs := decode(data, true)
	var warnings []validation.Warning
	if cfg != nil && !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Type == field.ErrorTypeDuplicate }) {
		res := validation.Validate(cfg)
		errs = append(errs, notBelow(res.Errors, errs)...)
		warnings = res.Warnings
	}
	if len(errs) > 0 {
		return nil, newInvalid(source, errs)
	}
	return &Loaded{Config: cfg, APIVersion: apiVersion, Warnings: warnings}, nil
}

// DecodeNoDefaults decodes and converts a spec without defaulting or
// validating it, as `config migrate` needs. Decoding problems return an
// *InvalidSpecError.
func DecodeNoDefaults(data []byte, source string) (*machineadm.MachineBootstrapConfig, string, error) {
	if err := checkSize(data, source); err != nil {
		return nil, "", err
	}
	cfg, apiVersion, errs := decode(data, false)
	if len(errs) > 0 {
		return nil, "", newInvalid(source, errs)
	}
	return cfg, apiVersion, nil
}

// Migrate decodes a spec of any supported apiVersion without defaulting or
// validating it and returns it as a document of the newest version
// (machineadm.LatestAPIVersion and machineadm.Kind set), as `config migrate` prints
// it. An older version is converted through the chain in versions; a
// document already of the newest version comes back as it was decoded.
// Decoding problems return an *InvalidSpecError.
func Migrate(data []byte, source string) (*machineadm.MachineBootstrapConfig, error) {
	cfg, _, err := DecodeNoDefaults(data, source)
	if err != nil {
		return nil, err
	}
	cfg.APIVersion, cfg.Kind = machineadm.LatestAPIVersion, machineadm.Kind
	return cfg, nil
}

// notBelow returns the errors of list whose field is neither one of the
// fields of decodeErrs nor below one: a mistyped field is left unset, and
// "required" for it would repeat the type error.
func notBelow(list, decodeErrs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range list {
		shadowed := false
		for _, d := range decodeErrs {
			if d.Type == field.ErrorTypeTypeInvalid && (e.Field == d.Field || strings.HasPrefix(e.Field, d.Field+".") || strings.HasPrefix(e.Field, d.Field+"[")) {
				shadowed = true
				break
			}
		}
		if !shadowed {
			out = append(out, e)
		}
	}
	return out
}
