package report

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/machineadm/machineadm/pkg/errclass"

	"github.com/machineadm/machineadm/pkg/printable"
)

// rawControl reports a byte a terminal would act on, other than a line
// break (the console writer ends lines in CR LF).
func rawControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && r != '\r' && !printable.Keeps(r, printable.Text)
	}) || !utf8.ValidString(s)
}

// TestWritersEscape: an escape sequence or bidi control in metadata.name,
// a phase message or a log line reaches neither stdout nor the console
// raw, and the report itself keeps the original.
func TestWritersEscape(t *testing.T) {
	r := &BootstrapReport{
		APIVersion: APIVersion, Kind: Kind, Command: "bootstrap", Result: ResultFailed, ErrorClass: errclass.InvalidSpec,
		StartTime: time.Unix(0, 0).UTC(), EndTime: time.Unix(1, 0).UTC(),
		Machine: Machine{Hostname: "h", SpecName: "evil\x1b]0;owned\x07\u202etxt.exe", NodeName: "n\x9b31m"},
		Phases:  []Phase{{Name: "pre\x1b[2Jflight", Status: PhaseFailed, Message: "m\x1b[1A"}},
		Error:   "bad \x1b[31mred\xff", LogTail: []string{"line\x1b[0m\u2066"},
	}
	var out strings.Builder
	if err := (&SummaryWriter{Out: &out}).Write(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if rawControl(out.String()) {
		t.Errorf("stdout summary holds raw control characters: %q", out.String())
	}
	if !strings.Contains(out.String(), `evil\x1b]0;owned\x07\u202etxt.exe`) {
		t.Errorf("stdout summary does not show the name escaped: %q", out.String())
	}
	console := t.TempDir() + "/console"
	if err := os.WriteFile(console, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w := &ConsoleWriter{Devices: []string{console}, Options: SummaryOptions{Width: ScreenWidth}}
	if err := w.Write(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if rawControl(got) || !strings.Contains(got, `n\x9b31m`) && !strings.Contains(got, `n\u009b31m`) {
		t.Errorf("console summary: %q", got)
	}
	if r.Machine.SpecName != "evil\x1b]0;owned\x07\u202etxt.exe" {
		t.Errorf("Summary changed the report: %q", r.Machine.SpecName)
	}
}

// TestTerminalSafeJSON: DEL, the C1 controls and the bidirectional
// controls, which encoding/json leaves raw, become \uXXXX escapes; other
// text (é, 日本, the document's own line breaks) stays; the result
// decodes to the same document.
func TestTerminalSafeJSON(t *testing.T) {
	r := &BootstrapReport{Error: "a\x7fb\u0080c\u009bd\u202ee\u2066f\u061cg é 日本 \x1b[2J", LogTail: []string{"\u200f", "plain", "zw\u200bnb\u00a0ls\u2028tag\U000E0041"}}
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	safe := TerminalSafeJSON(data)
	for _, raw := range []string{"\x7f", "\u0080", "\u009b", "\u202e", "\u2066", "\u061c", "\u200f", "\x1b", "\u200b", "\u00a0", "\u2028", "\U000E0041"} {
		if strings.Contains(string(safe), raw) {
			t.Errorf("%q is still raw in %s", raw, safe)
		}
	}
	for _, kept := range []string{"é 日本", `\u007f`, `\u009b`, `\u202e`, `\u200b`, `\udb40\udc41`, "\n  \"error\""} {
		if !strings.Contains(string(safe), kept) {
			t.Errorf("%q missing from %s", kept, safe)
		}
	}
	var back BootstrapReport
	if err := json.Unmarshal(safe, &back); err != nil || back.Error != r.Error || !reflect.DeepEqual(back.LogTail, r.LogTail) {
		t.Errorf("decodes to %+v (%v), want %+v", back, err, r)
	}
	if plain := []byte(`{"a": "é"}`); string(TerminalSafeJSON(plain)) != string(plain) {
		t.Error("JSON without such runes changed")
	}
}
