package seal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/printable"
)

// ErrNoIdentity means no identity given to Open matched any recipient
// stanza of the envelope.
var ErrNoIdentity = errors.New("no identity matches a recipient of the envelope")

// ErrMachineMismatch means the envelope was sealed for another machine or
// cluster than the one opening it.
var ErrMachineMismatch = errors.New("the envelope was sealed for another machine or cluster")

// ErrSpecMismatch means the clear spec the envelope came with is not the
// one it was sealed with: its digest (SpecDigest) differs from the
// envelope's specDigest. The clear spec was edited after sealing (a node
// name, an endpoint, a file's path or mode), or the envelope was moved to
// another spec.
var ErrSpecMismatch = errors.New("the clear spec is not the one the envelope was sealed with")

// ErrAuthentication means an AES-GCM or HPKE authentication tag did not
// verify: a wrapped key, nonce, ciphertext, tag or authenticated header
// field was changed, or the identity is not the one the stanza was made for.
var ErrAuthentication = errors.New("message authentication failed")

// ErrUnavailable means a recipient's key service did not answer: it could
// not be reached (a network or name-resolution error, a timeout) or it
// answered with a status that says "try again" (HTTP 429 or 5xx, gRPC
// Unavailable). A recipient's Unwrap wraps such an error with it
// (sealkms.Unavailable); the envelope may be fine. Open returns it only
// when no recipient opened the envelope and at least one failed this way,
// classified errclass.PayloadUnavailable (exit code 1, run again) rather
// than VerificationFailed.
var ErrUnavailable = errors.New("the key service did not answer")

// openHint is the report hint of every OpenError.
const openHint = "The sealed secrets did not open with this machine's identity: check that the image holds the key the spec was sealed to " +
	"(`machineadm unseal --check -f SEALED --identity FILE`), that the spec was sealed for this machine name, and that neither the envelope nor the clear spec beside it was changed after sealing; reseal with `machineadm seal`."

// OpenError is returned by every failure to open an envelope. Path names
// the part that failed ("recipients[1]", "items[spec.join.token]", or ""
// for the whole envelope); Err is ErrNoIdentity, ErrMachineMismatch,
// ErrSpecMismatch, ErrAuthentication or a recipient's own error. Its error class is
// errclass.VerificationFailed (see Classified).
type OpenError struct {
	// Path is the envelope field that failed, empty for the whole envelope.
	Path string
	// Err is the cause.
	Err error
}

func (e *OpenError) Error() string {
	if e.Path == "" {
		return "sealed secrets: " + e.Err.Error()
	}
	return "sealed secrets: " + e.Path + ": " + e.Err.Error()
}

func (e *OpenError) Unwrap() error { return e.Err }

// unavailableHint is the report hint of an OpenError caused by
// ErrUnavailable.
const unavailableHint = "The key service the envelope is sealed to did not answer (network, throttling or an outage); nothing was changed. " +
	"Check that this machine reaches it, then run the same command again."

// Classified wraps e as an *errclass.Error with a hint for a person, as
// the report records it: class PayloadUnavailable when its cause is
// ErrUnavailable (the key service did not answer), else
// VerificationFailed.
func (e *OpenError) Classified() *errclass.Error {
	if errors.Is(e.Err, ErrUnavailable) {
		return errclass.New(errclass.PayloadUnavailable, unavailableHint, e)
	}
	return errclass.New(errclass.VerificationFailed, openHint, e)
}

// openErr builds an OpenError already wrapped with its class, so that
// errors.As finds both the *OpenError and the *errclass.Error.
func openErr(path string, err error) error {
	return (&OpenError{Path: path, Err: err}).Classified()
}

// IsOpenError reports whether err is (or wraps) an *OpenError.
func IsOpenError(err error) bool {
	var oe *OpenError
	return errors.As(err, &oe)
}

// FieldError is one problem of a malformed envelope, at a field path such
// as "recipients[0].wrappedKey" or "items[spec.join.token]".
type FieldError struct {
	// Path of the field, relative to the envelope document.
	Path string
	// Detail says what is wrong; it never contains secret material.
	Detail string
}

// ParseError lists every problem of a malformed envelope. Its class is
// errclass.InvalidSpec: a malformed envelope is bad input, found without
// any key.
type ParseError struct {
	// Errors are the problems, in document order.
	Errors []FieldError
}

func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid SealedSecrets document (%d problem(s)):", len(e.Errors))
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		if fe.Path != "" {
			b.WriteString(fe.Path)
			b.WriteString(": ")
		}
		b.WriteString(fe.Detail)
	}
	return b.String()
}

// Classified wraps e as an *errclass.Error of class InvalidSpec.
func (e *ParseError) Classified() *errclass.Error {
	return errclass.New(errclass.InvalidSpec, "Reseal the spec with `machineadm seal`; the SealedSecrets document was changed or truncated.", e)
}

// add records a problem. Paths carry map keys from the document (item
// paths) and details may carry a decoder's message: both are escaped
// (printable.Show) so that no control character of the input, such as a
// terminal escape sequence, reaches a console or a report raw.
func (e *ParseError) add(path, format string, args ...any) {
	e.Errors = append(e.Errors, FieldError{Path: printable.Show(path, printable.Ident), Detail: printable.Show(fmt.Sprintf(format, args...), printable.Text)})
}

func (e *ParseError) orNil() error {
	if len(e.Errors) == 0 {
		return nil
	}
	return e.Classified()
}
