//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openGate holds every open(2) of a file on one file system until the
// test has looked at it: a fanotify permission mark (FAN_OPEN_PERM) on the
// whole file system, so that opens in any mount of it, such as the
// machine's root inside its own mount namespace, wait for the gate's
// answer. The kernel blocks the opening thread until then, which lets
// TestCrash stop machineadm at a point of its run that it chose, instead
// of racing it.
//
// Closing the gate answers every open still waiting (the kernel allows
// them), so a test that dies leaves nothing blocked.
type openGate struct {
	f *os.File
}

// gateOpen is one open waiting at the gate: the opening process (host PID
// of the thread group) and the path opened, as the host sees it.
type gateOpen struct {
	pid  int
	path string
	fd   int32
}

// newOpenGate marks the file system holding path. It needs
// CAP_SYS_ADMIN and a kernel with CONFIG_FANOTIFY_ACCESS_PERMISSIONS.
func newOpenGate(path string) (*openGate, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_CONTENT|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fanotify_init: %w", err)
	}
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, unix.FAN_OPEN_PERM, unix.AT_FDCWD, path); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fanotify_mark %s: %w", path, err)
	}
	// Non-blocking, so that the runtime's poller waits for it and Close
	// ends a pending Read.
	return &openGate{f: os.NewFile(uintptr(fd), "fanotify")}, nil
}

// next returns the opens waiting at the gate, in the order the kernel
// queued them (at least one, unless err is set). Each must be answered
// with decide. With an error (an overflow or a malformed event) it still
// returns every open the read gave that it could parse, so that the
// caller answers them and releases their files: an open read and not
// answered waits until the gate is closed.
func (g *openGate) next(buf []byte) ([]gateOpen, error) {
	n, err := g.f.Read(buf)
	if err != nil {
		return nil, err
	}
	var out []gateOpen
	var bad error
	for off := 0; off+int(unix.FAN_EVENT_METADATA_LEN) <= n; {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[off]))
		if m.Event_len < unix.FAN_EVENT_METADATA_LEN || off+int(m.Event_len) > n {
			// The events after it cannot be found.
			return out, errors.Join(bad, fmt.Errorf("fanotify: malformed event at %d of %d bytes", off, n))
		}
		off += int(m.Event_len)
		if m.Vers != unix.FANOTIFY_METADATA_VERSION {
			bad = errors.Join(bad, fmt.Errorf("fanotify: metadata version %d, want %d", m.Vers, unix.FANOTIFY_METADATA_VERSION))
		}
		if m.Fd < 0 {
			// FAN_NOFD: a queue overflow, which the kernel answers by
			// allowing the open it could not queue: an open went by
			// unseen. Not expected (the queue holds 16384 events, and
			// permission events wait for their answer).
			bad = errors.Join(bad, errors.New("fanotify: event queue overflow"))
			continue
		}
		p, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", m.Fd))
		out = append(out, gateOpen{pid: int(m.Pid), path: p, fd: m.Fd})
	}
	return out, bad
}

// decide answers one open, allowing it or not, and releases its file.
func (g *openGate) decide(o gateOpen, allow bool) error {
	r := unix.FanotifyResponse{Fd: o.fd, Response: unix.FAN_DENY}
	if allow {
		r.Response = unix.FAN_ALLOW
	}
	_, err := g.f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r)))
	unix.Close(int(o.fd))
	return err
}

// Close releases the mark; opens still waiting are allowed.
func (g *openGate) Close() error { return g.f.Close() }
