package cmd

import (
	"io"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestGCPercentDefault: a run collects at DefaultGCPercent unless GOGC
// is set, when the runtime's own reading of it stands.
func TestGCPercentDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	if code := Execute([]string{"version"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Fatalf("version: exit %d", code)
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("GOGC unset: the collector runs at %d, want %d", got, DefaultGCPercent)
	}
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(77)
	if code := Execute([]string{"version"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Fatalf("version: exit %d", code)
	}
	if got := debug.SetGCPercent(100); got != 77 {
		t.Errorf("GOGC set: the collector's target changed to %d", got)
	}
}
