package spec

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/printable"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// MaxSpecSize bounds a machine spec document: 4 MiB, far more than any
// spec needs (the largest example is a few KiB; inline file contents and
// CA bundles stay well below), so that `-f /dev/zero` or a runaway file
// is refused at once instead of exhausting memory.
const MaxSpecSize = 4 << 20

// ReadSource reads the spec document at path: standard input (stdin) when
// path is "-", otherwise a regular file. Whatever the source, at most
// MaxSpecSize bytes are accepted; a path naming a FIFO, a device or a
// directory is refused without blocking (pipe such input to "-f -"
// instead). Errors are an *InvalidSpecError (exit code 2) whose message
// names the source and the limit.
func ReadSource(path string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = readlimit.Reader(stdin, MaxSpecSize)
	} else {
		data, err = readlimit.File(path, MaxSpecSize)
	}
	if err != nil {
		return nil, newInvalid(path, field.ErrorList{docError(fmt.Sprintf("reading the machine spec: %v", err))})
	}
	return data, nil
}

// checkSize refuses a document larger than MaxSpecSize, however it was
// read.
func checkSize(data []byte, source string) error {
	if len(data) > MaxSpecSize {
		return newInvalid(source, field.ErrorList{docError(fmt.Sprintf("the machine spec is %d bytes, more than the %d allowed", len(data), MaxSpecSize))})
	}
	return nil
}

// Bounds of what an error quotes from the input, so that a huge value is
// never echoed back whole.
const (
	// MaxQuotedValue is how many bytes of a bad value an error shows: a
	// value longer than MaxQuotedValue+32 is cut to MaxQuotedValue bytes
	// and says how long it was.
	MaxQuotedValue = 128
	// maxDetail bounds an error's detail text (which may quote input, as
	// YAML parser messages do).
	maxDetail = 1024
	// maxFieldPath bounds a field path (map keys come from the input).
	maxFieldPath = 512
	// maxErrorLine bounds one line of InvalidSpecError.Error:
	// path, type, quoted value and detail with their separators.
	maxErrorLine = maxFieldPath + 4*MaxQuotedValue + maxDetail + 3*truncateSlack + 64
	// maxErrors bounds how many problems one error lists.
	maxErrors = 100
)

// newInvalid builds the *InvalidSpecError for source with errs bounded:
// at most maxErrors problems, each with its path, quoted value and detail
// cut to their limits.
func newInvalid(source string, errs field.ErrorList) *InvalidSpecError {
	out := make(field.ErrorList, 0, min(len(errs), maxErrors+1))
	for i, e := range errs {
		if i == maxErrors {
			out = append(out, docError(fmt.Sprintf("%d more problem(s) not shown", len(errs)-maxErrors)))
			break
		}
		c := *e
		// A path carries map keys from the input (labels[KEY],
		// sysctl[KEY]) and a detail may repeat input: escape their
		// control characters, so that no terminal escape sequence reaches
		// a console, a report or a Cluster API condition raw. Values are
		// quoted by field.Error already.
		c.Field = truncate(printable.Show(c.Field, printable.Ident), maxFieldPath)
		c.Detail = truncate(printable.Show(c.Detail, printable.Text), maxDetail)
		switch v := c.BadValue.(type) {
		case string:
			c.BadValue = truncate(v, MaxQuotedValue)
			if q := strconv.QuoteToASCII(v); q != strconv.Quote(v) {
				// Quoted with every non-ASCII rune escaped, as names are
				// shown (printable.Ident): a homoglyph in "wоrker-1" is as
				// visible as a zero-width space.
				c.BadValue = asciiQuoted(c.BadValue.(string))
			}
		case asciiQuoted:
		case nil, bool, int, int32, int64, uint32, uint64, float32, float64, field.OmitValueType:
		default:
			// Lists and maps: show their Go form, cut.
			c.BadValue = truncate(fmt.Sprintf("%v", v), MaxQuotedValue)
		}
		out = append(out, &c)
	}
	return &InvalidSpecError{Source: truncate(printable.Show(source, printable.Line), maxFieldPath), Errors: out}
}

// truncateSlack is how much longer than its limit a string may stay
// uncut: room for the "…(N bytes)" marker, so that cutting twice (when an
// error is printed again) changes nothing.
const truncateSlack = 32

// truncate cuts s longer than n+truncateSlack bytes to n bytes at a rune
// boundary, saying how long it was: "abc…(1048576 bytes)".
func truncate(s string, n int) string {
	if len(s) <= n+truncateSlack {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

// asciiQuoted is a string bad value that field.Error shows quoted with
// every non-ASCII rune escaped (strconv.QuoteToASCII): field.Error quotes
// a string with %q, which keeps letters of any script, but shows another
// type through its String when it does not marshal to JSON.
type asciiQuoted string

// errASCIIQuoted makes field.Error fall back to String.
var errASCIIQuoted = errors.New("shown through String")

func (v asciiQuoted) MarshalJSON() ([]byte, error) { return nil, errASCIIQuoted }
func (v asciiQuoted) String() string               { return strconv.QuoteToASCII(string(v)) }
