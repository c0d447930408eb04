package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/readlimit"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/spec"
)

// ReadSpec reads the spec at path, or standard input for "-", through the
// one bounded reader (pkg/readlimit): a regular file, opened without
// blocking (a FIFO, a device or a directory is refused), of at most
// spec.MaxSpecSize bytes (4 MiB). A missing path, an unreadable or
// non-regular file or a larger input is a *UsageError (exit code 2).
func ReadSpec(in io.Reader, path string) ([]byte, error) {
	if path == "" {
		return nil, Usagef("a machine spec is required: -f SPEC (a path, or - for standard input)")
	}
	var data []byte
	var err error
	if path == "-" {
		data, err = readlimit.Reader(in, spec.MaxSpecSize)
	} else {
		data, err = readlimit.File(path, spec.MaxSpecSize)
	}
	if err != nil {
		return nil, Usagef("reading machine spec: %v", err)
	}
	return data, nil
}

// LoadSpec reads, decodes, defaults and validates the spec at path and
// logs its warnings (by field, never the value).
func LoadSpec(in io.Reader, log *slog.Logger, path string) (*spec.Loaded, error) {
	data, err := ReadSpec(in, path)
	if err != nil {
		return nil, err
	}
	return LoadBytes(log, data, path)
}

// LoadBytes decodes, defaults and validates spec bytes read from path
// (the spec document of a sealed file) and logs the warnings.
//
// A sealed file whose clear spec is not the one its envelope was sealed
// with (CheckSealedDigest) is refused too, as every machine would refuse
// it: render does not ship what cannot open.
func LoadBytes(log *slog.Logger, data []byte, path string) (*spec.Loaded, error) {
	l, _, _, err := LoadSpecDoc(data, path)
	if err != nil {
		return nil, err
	}
	if err := CheckSealedDigest(data, path); err != nil {
		return nil, err
	}
	for _, w := range l.Warnings {
		log.Warn("spec warning", "field", w.Field, "message", w.Message)
	}
	return l, nil
}

// SplitSealed separates a machine spec from the SealedSecrets document
// that may follow it in the same file (seal.Split); a file without one is
// returned as it is. A malformed multi-document file, or a SealedSecrets
// document that seal.Parse refuses (unknown fields, bad base64, missing
// recipients...), is an invalid spec (exit code 2) naming each problem's
// field path under "SealedSecrets.". The envelope is not opened.
func SplitSealed(data []byte, path string) (specDoc, sealed []byte, err error) {
	specDoc, sealed, _, err = splitSealed(data, path)
	return specDoc, sealed, err
}

// splitSealed is SplitSealed that also returns the item paths of the
// envelope it parsed (nil for a file without one).
func splitSealed(data []byte, path string) (specDoc, sealed []byte, items []string, err error) {
	if !bytes.Contains(data, []byte(seal.Kind)) {
		return data, nil, nil, nil
	}
	specDoc, sealed, err = seal.Split(data)
	if err != nil {
		return nil, nil, nil, &spec.InvalidSpecError{Source: path, Errors: field.ErrorList{
			&field.Error{Type: field.ErrorTypeInvalid, BadValue: field.OmitValueType{}, Detail: err.Error()}}}
	}
	if sealed != nil {
		// A malformed envelope is bad input found without any key: refuse
		// it here, with its field paths, before any phase runs (exit 2),
		// and in config validate too.
		env, err := seal.Parse(sealed)
		if err != nil {
			var pe *seal.ParseError
			if !errors.As(err, &pe) {
				return nil, nil, nil, err
			}
			errs := field.ErrorList{}
			for _, fe := range pe.Errors {
				p := seal.Kind
				if fe.Path != "" {
					p += "." + fe.Path
				}
				errs = append(errs, &field.Error{Type: field.ErrorTypeInvalid, Field: p, BadValue: field.OmitValueType{}, Detail: fe.Detail})
			}
			return nil, nil, nil, &spec.InvalidSpecError{Source: path, Errors: errs}
		}
		items = make([]string, 0, len(env.Items))
		for p := range env.Items {
			items = append(items, p)
		}
	}
	return specDoc, sealed, items, nil
}

// LoadSpecDoc loads the spec document of data read from path (a sealed
// file's envelope is left closed: no key is needed) with spec.Load, and
// refuses a sealed file whose spec has no place for one of its envelope's
// items (checkSealedPlaces). It returns the envelope document and its item
// paths too, nil for a file without one. Warnings are in the
// *spec.Loaded, not logged. Errors are those of SplitSealed, spec.Load
// and checkSealedPlaces: each an invalid spec (exit code 2).
func LoadSpecDoc(data []byte, path string) (l *spec.Loaded, sealed []byte, items []string, err error) {
	specDoc, sealed, items, err := splitSealed(data, path)
	if err != nil {
		return nil, nil, nil, err
	}
	if l, err = spec.Load(specDoc, path); err != nil {
		return nil, nil, nil, err
	}
	if err := checkSealedPlaces(l.Config, items, path); err != nil {
		return nil, nil, nil, err
	}
	return l, sealed, items, nil
}

// CheckSealedDigest refuses a sealed file (data, read from path) whose
// clear spec was changed after sealing: the canonical digest of its spec
// document (seal.SpecDigest) is not the envelope's specDigest. That needs no key,
// so the commands that read a sealed file without opening it (config
// validate, render) say what the machine would say later
// (VerificationFailed there), as an invalid spec (exit code 2) at
// SealedSecrets.specDigest. A file without an envelope passes.
func CheckSealedDigest(data []byte, path string) error {
	specDoc, sealed, _, err := splitSealed(data, path)
	if err != nil || sealed == nil {
		return err
	}
	env, err := seal.Parse(sealed)
	if err != nil {
		return err
	}
	got, err := seal.SpecDigest(specDoc)
	if err != nil {
		return &spec.InvalidSpecError{Source: path, Errors: field.ErrorList{
			&field.Error{Type: field.ErrorTypeInvalid, Field: seal.Kind + ".specDigest", BadValue: field.OmitValueType{}, Detail: err.Error()}}}
	}
	if got != env.SpecDigest {
		return &spec.InvalidSpecError{Source: path, Errors: field.ErrorList{
			&field.Error{Type: field.ErrorTypeInvalid, Field: seal.Kind + ".specDigest", BadValue: field.OmitValueType{},
				Detail: fmt.Sprintf("%v: the clear spec's digest is %s, the envelope was sealed with %s; no machine opens it (edit the unsealed spec and seal it again)", seal.ErrSpecMismatch, got, env.SpecDigest)}}}
	}
	return nil
}

// checkSealedPlaces refuses a sealed file whose spec has no place for one
// of its envelope's items (sealspec.CheckPlaces: a field the spec lost, a
// sealed file content whose mode was widened beyond owner-only) as an
// invalid spec (exit code 2) naming the items, before any phase: the item
// paths are in the clear, so no key is needed to see it. items are the
// envelope's item paths (none: nothing to check).
func checkSealedPlaces(cfg *machineadm.MachineBootstrapConfig, items []string, path string) error {
	if len(items) == 0 {
		return nil
	}
	if err := sealspec.CheckPlaces(cfg, items); err != nil {
		_, hint := errclass.Of(err)
		return &spec.InvalidSpecError{Source: path, Errors: field.ErrorList{
			&field.Error{Type: field.ErrorTypeInvalid, Field: seal.Kind + ".items", BadValue: field.OmitValueType{}, Detail: err.Error() + " (" + hint + ")"}}}
	}
	return nil
}
