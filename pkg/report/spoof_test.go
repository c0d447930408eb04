package report

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/printable"
)

// statusLine is a line that reads like a summary's result line
// ("machineadm bootstrap: Succeeded", "machineadm prepare FAILED in ..."):
// "machineadm", a word, then a colon or " FAILED", from the first column.
// The summary's own lines from a report's strings never start there: names
// stand in the table and header, free text after a label ("error: ",
// "hint:  ") or indented (continuation lines, log lines).
var statusLine = regexp.MustCompile(`^machineadm \S+(:| FAILED)`)

// statusLines returns the lines of a summary, other than its own first
// and third (the result and the versions, whose version word may end in a
// colon), that read like a result line; nil when there are none.
func statusLines(summary string) []string {
	var bad []string
	for i, l := range strings.Split(summary, "\n") {
		if statusLine.MatchString(l) && i != 0 && i != 2 {
			bad = append(bad, l)
		}
	}
	return bad
}

// hostileStrings are the ways a report file could try to make a line of
// its own or rewrite one: a line feed, a carriage return, CR LF, an ANSI
// cursor-up and erase-line sequence, a right-to-left override, the line
// and paragraph separators, NEL, a vertical tab and a form feed. Each is
// followed by a forged result line.
var hostileStrings = []string{
	"x\nmachineadm bootstrap: Succeeded",
	"x\rmachineadm bootstrap: Succeeded",
	"x\r\nmachineadm bootstrap: Succeeded",
	"x\x1b[1A\x1b[2K\rmachineadm bootstrap: Succeeded",
	"x\u202emachineadm bootstrap: Succeeded",
	"x\u2028machineadm bootstrap: Succeeded",
	"x\u2029machineadm bootstrap: Succeeded",
	"x\u0085machineadm bootstrap: Succeeded",
	"x\vmachineadm bootstrap: Succeeded\f",
	"\nmachineadm bootstrap: Succeeded\n",
}

// setEveryString sets every string of r (struct fields, list items, map
// keys and values; recursively) to v, except the fields Validate checks
// against a fixed list (apiVersion, kind, result, phase status, class),
// which a report file cannot hold other values in. It reports the paths
// it set.
func setEveryString(rv reflect.Value, path, v string, set *[]string) {
	switch rv.Kind() {
	case reflect.String:
		switch path {
		case ".APIVersion", ".Kind", ".Result", ".ErrorClass":
			return
		}
		if strings.HasSuffix(path, ".Status") {
			return
		}
		rv.SetString(v)
		*set = append(*set, path)
	case reflect.Struct:
		if rv.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := range rv.NumField() {
			if rv.Type().Field(i).IsExported() {
				setEveryString(rv.Field(i), path+"."+rv.Type().Field(i).Name, v, set)
			}
		}
	case reflect.Slice:
		for i := range rv.Len() {
			setEveryString(rv.Index(i), path+"[]", v, set)
		}
	case reflect.Pointer:
		if !rv.IsNil() {
			setEveryString(rv.Elem(), path, v, set)
		}
	case reflect.Map:
		if rv.IsNil() || rv.Type().Key().Kind() != reflect.String {
			return
		}
		keys := rv.MapKeys()
		for i, k := range keys {
			val := reflect.New(rv.Type().Elem()).Elem()
			val.Set(rv.MapIndex(k))
			setEveryString(val, path+"[]", v, set)
			rv.SetMapIndex(k, reflect.Value{})
			key := reflect.New(rv.Type().Key()).Elem()
			key.SetString(v + strings.Repeat(" ", i))
			rv.SetMapIndex(key, val)
		}
	}
}

// TestSummaryCannotBeForged: whatever a report file holds in any of its
// strings (a name, a message, the error, the hint, a log line, a version,
// a phase name), the person views show no line that reads like the result
// line besides their own first line, for a failed and a succeeded report,
// one screen and full; and no raw line break other than their own.
func TestSummaryCannotBeForged(t *testing.T) {
	for _, hostile := range hostileStrings {
		for _, base := range []*BootstrapReport{fixtureFailed(), fixtureSucceeded()} {
			var set []string
			setEveryString(reflect.ValueOf(base).Elem(), "", hostile, &set)
			if len(set) < 10 {
				t.Fatalf("only %d strings set: %v", len(set), set)
			}
			data, err := base.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			r, err := Decode(data)
			if err != nil {
				t.Fatalf("the hostile report is not a valid report: %v", err)
			}
			for _, opt := range []SummaryOptions{OneScreen("/var/lib/machineadm/report.json"), {Width: ScreenWidth}, {Width: ScreenWidth, Footer: "more: machineadm report --full " + hostile}} {
				s := Summary(r, opt)
				if forged := statusLines(s); forged != nil {
					t.Errorf("%q in %s (height %d): forged lines %q in\n%s", hostile, r.Result, opt.Height, forged, s)
				}
				if strings.ContainsAny(s, "\r\v\f\u2028\u2029\u0085\u202e\x1b") {
					t.Errorf("%q in %s (height %d): raw line break or control in\n%q", hostile, r.Result, opt.Height, s)
				}
				if first, _, _ := strings.Cut(s, "\n"); !strings.HasPrefix(first, "machineadm ") {
					t.Errorf("first line %q", first)
				}
			}
		}
	}
}

// TestSummaryIdentifiersASCII: a name (host, node, spec, phase, version)
// is shown as printable ASCII: a homoglyph is escaped as a zero-width
// character is, so two names that look alike on the screen read apart.
func TestSummaryIdentifiersASCII(t *testing.T) {
	r := fixtureFailed()
	r.Machine.NodeName = "w\u043erker-1"     // Cyrillic о
	r.Machine.Hostname = "worker\u200b-1"    // zero-width space
	r.Phases[0].Name = "pre\u0066\u0131ight" // dotless ı
	r.FailedPhase = r.Phases[0].Name
	s := Summary(r, SummaryOptions{Width: ScreenWidth})
	for _, want := range []string{`node w\u043erker-1`, `host worker\u200b-1`, `pref\u0131ight`} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	for _, raw := range []string{"\u043e", "\u200b", "\u0131"} {
		if strings.Contains(s, raw) {
			t.Errorf("summary shows %q raw:\n%s", raw, s)
		}
	}
}

// TestDecodeStrict: duplicate keys at the top level and nested, a key
// that differs only in case, data after the object and unknown fields are
// refused with an error that names the key; the canonical document is
// accepted.
func TestDecodeStrict(t *testing.T) {
	good, err := fixtureFailed().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(good); err != nil {
		t.Fatalf("the fixture is refused: %v", err)
	}
	doc := string(good)
	replace := func(old, new string) string {
		if !strings.Contains(doc, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(doc, old, new, 1)
	}
	for name, tc := range map[string]struct{ data, want string }{
		"top-level result": {replace(`"result": "Failed",`, `"result": "Failed", "result": "Succeeded",`), `duplicate field "result"`},
		"top-level error":  {replace(`"error": `, `"error": "first", "error": `), `duplicate field "error"`},
		"nested machine":   {replace(`"hostname": `, `"hostname": "a", "hostname": `), `duplicate field "machine.hostname"`},
		"nested phase":     {replace(`"status": "Unchanged"`, `"status": "Failed", "status": "Unchanged"`), `duplicate field "phases[0].status"`},
		"case variant":     {replace(`"result": "Failed",`, `"result": "Failed", "Result": "Succeeded",`), `unknown field "Result"`},
		"unknown field":    {replace(`"result": "Failed",`, `"result": "Failed", "resultt": "x",`), `unknown field "resultt"`},
		"trailing object":  {doc + `{"result":"Succeeded"}`, "after top-level value"},
		"trailing brace":   {doc + "}", "after top-level value"},
		"trailing garbage": {doc + "x", "after top-level value"},
	} {
		_, err := Decode([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not a BootstrapReport document") {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
	// Many duplicates: the error stays bounded.
	many := replace(`"error": `, strings.Repeat(`"error": "x", `, 5000)+`"error": `)
	if _, err := Decode([]byte(many)); err == nil || len(err.Error()) > 1024 || errors.Unwrap(err) == nil {
		t.Errorf("many duplicates: %d-byte error %.100v", len(err.Error()), err)
	}
}

// TestShowValueMapsAndTags: a field added to the report later is escaped
// by its show tag, a map's keys as names and its values by the field's
// kind, a pointer's and an interface's string too; untagged strings are
// names (the strictest view).
func TestShowValueMapsAndTags(t *testing.T) {
	type later struct {
		Untagged string
		Text     string            `show:"text"`
		Values   map[string]string `show:"line"`
		Ptr      *string
		Any      any `show:"line"`
	}
	s := "p\u043ed\nx"
	src := later{Untagged: s, Text: s, Values: map[string]string{s: s}, Ptr: &s, Any: s}
	var dst later
	showValue(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(src), printable.Ident)
	ident, line := `p\u043ed\x0ax`, `p`+"\u043e"+`d\x0ax`
	if dst.Untagged != ident || dst.Text != "p\u043ed\nx" || *dst.Ptr != ident || dst.Any != line {
		t.Errorf("shown: %+v", dst)
	}
	if v, ok := dst.Values[ident]; !ok || v != line || len(dst.Values) != 1 {
		t.Errorf("map shown as %q", dst.Values)
	}
	if src.Values[s] != s || *src.Ptr != s {
		t.Error("the source was changed")
	}
}
