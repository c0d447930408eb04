package e2e

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWriteFailures(t *testing.T) {
	failureLog.mu.Lock()
	saved := failureLog.msgs
	failureLog.msgs = nil
	failureLog.mu.Unlock()
	defer func() {
		failureLog.mu.Lock()
		failureLog.msgs = saved
		failureLog.mu.Unlock()
	}()

	var b bytes.Buffer
	writeFailures(&b)
	if b.Len() != 0 {
		t.Fatalf("nothing recorded, summary %q", b.String())
	}

	recordFailure(t, false, "cp2: its API server read the Secret without calling Decrypt:\nStarted fake-kms-plugin.service")
	recordFailure(t, true, strings.Repeat("é", summaryLineMax)) // 2 bytes each: cut inside one
	for i := 0; i < summaryMax; i++ {
		recordFailure(t, false, "filler")
	}
	writeFailures(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if want := summaryMax + 2; len(lines) != want {
		t.Fatalf("summary has %d lines, want %d (a header, %d messages, the rest counted):\n%s", len(lines), want, summaryMax, b.String())
	}
	if !strings.Contains(lines[0], "14 failed check(s)") {
		t.Errorf("header %q does not count 14 checks", lines[0])
	}
	if want := "  TestWriteFailures error: cp2: its API server read the Secret without calling Decrypt: […]"; lines[1] != want {
		t.Errorf("first message\n got %q\nwant %q", lines[1], want)
	}
	if !strings.HasPrefix(lines[2], "  TestWriteFailures fatal: é") || !strings.HasSuffix(lines[2], " […]") || !utf8.ValidString(lines[2]) {
		t.Errorf("long message not cut at a character boundary with a marker: %q", lines[2])
	}
	if n := len(lines[2]); n > summaryLineMax+len("  TestWriteFailures fatal:  […]") {
		t.Errorf("long message line is %d bytes", n)
	}
	if !strings.Contains(lines[len(lines)-1], "and 2 more") {
		t.Errorf("last line %q does not count the 2 messages left out", lines[len(lines)-1])
	}
}
