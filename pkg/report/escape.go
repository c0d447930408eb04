package report

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalSafe returns s with everything a terminal would act on instead
// of showing written as a Go escape: C0 control characters except the
// line feed (ESC as \x1b, CR as \x0d), DEL, C1 control characters
// (U+0080-U+009F, which some terminals take as CSI and OSC), Unicode
// bidirectional controls (U+202E as \u202e) and bytes that are not UTF-8
// (\xff). A tab becomes a space so that columns stay aligned. Every
// writer that shows a report to a person (the console, stdout, `machineadm
// report`) goes through Summary, which applies it to every string.
func TerminalSafe(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports a rune that TerminalSafe escapes (or, for a tab,
// replaces).
func unsafeRune(r rune) bool {
	return r != '\n' && (r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r))
}

// terminalSafeCopy returns a deep copy of r in which every string (struct
// fields, list items, named string types such as Result and Class) went
// through TerminalSafe; r itself is not changed. Reflection covers fields
// added later without editing this function.
func terminalSafeCopy(r *BootstrapReport) *BootstrapReport {
	out := reflect.New(reflect.TypeOf(*r)).Elem()
	safeCopy(out, reflect.ValueOf(*r))
	c := out.Interface().(BootstrapReport)
	return &c
}

// safeCopy copies src into dst (both of one type), escaping strings.
func safeCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(TerminalSafe(src.String()))
	case reflect.Struct:
		if src.Type().NumField() == 0 || !src.Type().Field(0).IsExported() {
			dst.Set(src) // time.Time and other opaque values
			return
		}
		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				safeCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			safeCopy(dst.Index(i), src.Index(i))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Type().Elem()))
		safeCopy(dst.Elem(), src.Elem())
	default:
		dst.Set(src)
	}
}

// TerminalSafeJSON returns the JSON text data (as Marshal writes it) with
// every rune TerminalSafe escapes that JSON leaves as it is — DEL, the C1
// controls U+0080-U+009F and the bidirectional controls — written as a
// JSON \uXXXX escape instead, so that `machineadm report -o json` shows a
// terminal nothing it would act on. Such runes can stand only inside JSON
// strings (the document's structure is ASCII), where the escape means the
// same rune: the result decodes to the same document. C0 controls are
// escaped by the JSON encoder already.
func TerminalSafeJSON(data []byte) []byte {
	if bytes.IndexFunc(data, unsafeRune) < 0 {
		return data
	}
	out := make([]byte, 0, len(data)+32)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if unsafeRune(r) && r >= 0x20 {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	return out
}
