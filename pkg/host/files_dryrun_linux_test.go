package host

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestFilesDryRunLeavesTheDestinationDirectoryAlone: a dry run (and so a
// plan looked at before a change window) fetches and verifies a source
// but writes nothing: it must not stage the content in the destination's
// directory. A file made there, even unnamed (O_TMPFILE), is written to
// that file system (its room, its disk: write-back is started at once)
// and is seen by whoever watches the directory (inotify IN_CLOSE_WRITE:
// a systemd path unit, the kubelet's static pod directory), as a write.
func TestFilesDryRunLeavesTheDestinationDirectoryAlone(t *testing.T) {
	h := newTestHost(t)
	sum := writeBigFile(t, filepath.Join(h.root, "opt/bin/tool"), 3<<20, 1)
	dir := filepath.Join(h.root, "usr/bin")
	writeBigFile(t, filepath.Join(dir, "tool"), 3<<20, 2)
	cfg := filesSpec(t, fmt.Sprintf(`    - path: /usr/bin/tool
      mode: "0755"
      source: {url: "file:///opt/bin/tool", sha256: %s}
`, sum))
	ino, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(ino)
	if _, err := unix.InotifyAddWatch(ino, dir, unix.IN_ALL_EVENTS&^(unix.IN_ACCESS|unix.IN_CLOSE_NOWRITE|unix.IN_OPEN)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := h.env(&out)
	env.DryRun = true
	if res := runFilesStep(t, cfg, env); !res.Changed {
		t.Fatalf("dry run: nothing would change:\n%s", out.String())
	}
	if events := inotifyEvents(t, ino); len(events) > 0 {
		t.Errorf("a dry run wrote in %s: %s", dir, strings.Join(events, ", "))
	}
	if got := fileSHA256(t, filepath.Join(dir, "tool")); got == sum {
		t.Error("a dry run changed /usr/bin/tool")
	}
}

// inotifyEvents reads the events queued on the non-blocking inotify
// descriptor ino, as "name mask".
func inotifyEvents(t *testing.T, ino int) []string {
	t.Helper()
	var events []string
	buf := make([]byte, 64<<10)
	n, err := unix.Read(ino, buf)
	if err == unix.EAGAIN {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
		events = append(events, fmt.Sprintf("%s %#x", strings.TrimRight(string(name), "\x00"), ev.Mask))
		off += unix.SizeofInotifyEvent + int(ev.Len)
	}
	return events
}
