package report

import (
	"fmt"
	"reflect"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/machineadm/machineadm/pkg/printable"
)

// showTag is the struct tag that says what kind of text a string field of
// the report is, for the person views: `show:"text"` for free text of
// several lines (an error, a hint, a phase message), `show:"line"` for one
// line of free text (a log line). A string without the tag is a name
// (printable.Ident): a host, node or phase name, a class, a version, a
// map key. New fields are names unless tagged, the strictest view.
const showTag = "show"

// showKind is the printable.Kind of a struct field by its show tag.
func showKind(f reflect.StructField) printable.Kind {
	switch f.Tag.Get(showTag) {
	case "text":
		return printable.Text
	case "line":
		return printable.Line
	}
	return printable.Ident
}

// shownCopy returns a deep copy of r in which every string (struct fields,
// list items, map keys and values, named string types such as Result and
// Class) went through printable.Show, by the kind its field's show tag
// gives; r itself is not changed. Reflection covers fields added later
// without editing this function. Summary renders only such a copy.
func shownCopy(r *BootstrapReport) *BootstrapReport {
	out := reflect.New(reflect.TypeOf(*r)).Elem()
	showValue(out, reflect.ValueOf(*r), printable.Ident)
	c := out.Interface().(BootstrapReport)
	return &c
}

// showValue copies src into dst (both of one type), showing strings as
// kind k (the kind of the field they are in).
func showValue(dst, src reflect.Value, k printable.Kind) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(printable.Show(src.String(), k))
	case reflect.Struct:
		if src.Type().NumField() == 0 || !src.Type().Field(0).IsExported() {
			dst.Set(src) // time.Time and other opaque values
			return
		}
		for i := range src.NumField() {
			if f := src.Type().Field(i); f.IsExported() {
				showValue(dst.Field(i), src.Field(i), showKind(f))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			showValue(dst.Index(i), src.Index(i), k)
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
		it := src.MapRange()
		for it.Next() {
			key := reflect.New(src.Type().Key()).Elem()
			showValue(key, it.Key(), printable.Ident)
			val := reflect.New(src.Type().Elem()).Elem()
			showValue(val, it.Value(), k)
			dst.SetMapIndex(key, val)
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Type().Elem()))
		showValue(dst.Elem(), src.Elem(), k)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		showValue(v, src.Elem(), k)
		dst.Set(v)
	default:
		dst.Set(src)
	}
}

// TerminalSafeJSON returns the JSON text data (as Marshal writes it) with
// every rune that printable.Show would escape in text and that JSON leaves
// as it is — DEL, the C1 controls U+0080-U+009F, bidirectional, zero-width
// and other format characters, spaces other than U+0020 — written as a
// JSON \uXXXX escape instead (a surrogate pair above U+FFFF), so that
// `machineadm report -o json` shows a terminal nothing it would act on or
// that hides. Such runes can stand only inside JSON strings (the
// document's structure is ASCII), where the escape means the same rune:
// the result decodes to the same document. C0 controls are escaped by the
// JSON encoder already.
func TerminalSafeJSON(data []byte) []byte {
	hidden := func(r rune) bool { return r >= 0x7f && !printable.Keeps(r, printable.Text) }
	if !utf8.Valid(data) {
		return data // Marshal writes UTF-8 only
	}
	out := make([]byte, 0, len(data)+32)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case !hidden(r):
			out = append(out, data[i:i+size]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}
