//go:build !windows

package files

import (
	"strings"
	"testing"
)

func TestDiffUnified(t *testing.T) {
	c := Plan(Desired{Path: "/etc/x.conf", Content: []byte("a\nB\nc\n"), Mode: 0o644},
		"/r/etc/x.conf", State{Exists: true, Content: []byte("a\nb\nc\n"), Mode: 0o644})
	want := "--- a/etc/x.conf\n+++ b/etc/x.conf\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
	if got := Diff(c); got != want {
		t.Errorf("Diff =\n%s\nwant\n%s", got, want)
	}
}

func TestDiffNewFileAndMissingNewline(t *testing.T) {
	c := Plan(Desired{Path: "/f", Content: []byte("x\ny"), Mode: 0o644}, "/r/f", State{})
	got := Diff(c)
	for _, s := range []string{"--- /dev/null\n", "+++ b/f\n", "+x\n", "+y\n\\ No newline at end of file\n"} {
		if !strings.Contains(got, s) {
			t.Errorf("Diff lacks %q:\n%s", s, got)
		}
	}
}

func TestDiffHidesSecretsAndBinary(t *testing.T) {
	secret := Plan(Desired{Path: "/k", Content: []byte("TOPSECRET\n"), Mode: 0o600, Secret: true}, "/r/k",
		State{Exists: true, Content: []byte("OLDSECRET\n"), Mode: 0o600})
	got := Diff(secret)
	if strings.Contains(got, "SECRET") || !strings.Contains(got, "content hidden (secret)") {
		t.Errorf("secret diff: %q", got)
	}
	bin := Plan(Desired{Path: "/b", Content: []byte{0x1f, 0x8b, 0}, Mode: 0o644}, "/r/b", State{})
	if got := Diff(bin); !strings.Contains(got, "binary content; would create, 3 bytes") {
		t.Errorf("binary diff: %q", got)
	}
	meta := Plan(Desired{Path: "/m", Content: []byte("x"), Mode: 0o600}, "/r/m", State{Exists: true, Content: []byte("x"), Mode: 0o644})
	if got := Diff(meta); got != "mode/owner /m: 0644 0:0 -> 0600 0:0\n" {
		t.Errorf("meta diff: %q", got)
	}
	if got := Diff(Plan(Desired{Path: "/u", Content: []byte("x"), Mode: 0o644}, "/r/u", State{Exists: true, Content: []byte("x"), Mode: 0o644})); got != "" {
		t.Errorf("unchanged diff: %q", got)
	}
}
