package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/machineadm/machineadm/pkg/printable"
)

// FuzzReadReport feeds arbitrary bytes to the report reader (ReadFile, as
// `machineadm report` uses it). It must never panic; a document it accepts
// re-encodes to a document it accepts again with the same encoding; and
// the person view of it, one screen or full, holds no raw control
// character, and the one-screen view keeps to ScreenHeight lines of
// ScreenWidth characters.
//
// Seeds: the golden fixtures and the regression inputs under
// testdata/fuzz/FuzzReadReport. CI runs it briefly (make fuzz-short).
func FuzzReadReport(f *testing.F) {
	for _, r := range []*BootstrapReport{fixtureFailed(), fixtureSucceeded()} {
		data, err := r.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","result":"Failed","errorClass":"InvalidSpec","startTime":"2026-03-14T09:26:53Z","machine":{"hostname":"h","machineadmVersion":"v","specName":"\u001b[31m\u202e"},"command":"bootstrap","endTime":"2026-03-14T09:26:54Z","phases":null,"error":"a\tb\r\nc"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Decode, not ReadFile: a file written and read back per input made
		// the fuzzing workers stall after a few executions (ReadFile's own
		// tests cover the file path and its limits).
		path := filepath.Join(dir, "report.json")
		r, err := Decode(data)
		if err != nil {
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("error of %d bytes: %.200q", n, err)
			}
			return
		}
		enc, err := r.Marshal()
		if err != nil {
			t.Fatalf("an accepted report does not encode: %v", err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("a re-encoded report is refused: %v", err)
		}
		enc2, err := again.Marshal()
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
		for _, opt := range []SummaryOptions{OneScreen(path), {Width: ScreenWidth}} {
			s := Summary(r, opt)
			if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !printable.Keeps(r, printable.Text) }) {
				t.Fatalf("summary holds raw control characters: %q", s)
			}
			if forged := statusLines(s); forged != nil {
				t.Fatalf("summary has lines that read like its result line: %q", forged)
			}
			if opt.Height == 0 {
				continue
			}
			lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			if len(lines) > ScreenHeight {
				t.Fatalf("one-screen summary has %d lines", len(lines))
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > ScreenWidth {
					t.Fatalf("one-screen line of %d characters: %q", n, l)
				}
			}
		}
	})
}
