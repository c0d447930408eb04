package report

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// DefaultConsoleTimeout bounds the write to one console device.
const DefaultConsoleTimeout = 5 * time.Second

// ConsoleWriter writes the one-screen summary to the machine's console —
// the serial console cloud providers show in their "console output" — so
// an operator sees the outcome without logging in. It writes to the first
// of Devices that exists and takes the write; a machine without any of
// them is not an error. A console that does not drain (no reader on a
// serial line with flow control) must not hang machineadm: each device is
// opened without blocking and written within Timeout, else it counts as
// failed and the next device is tried.
type ConsoleWriter struct {
	// Root is prepended to each device path.
	Root string
	// Devices are tried in order. Default DefaultConsoleDevices
	// (/dev/console, /dev/ttyS0 on Linux; none on Windows).
	Devices []string
	// Timeout bounds the write to one device. Default
	// DefaultConsoleTimeout.
	Timeout time.Duration
	// Options shape the summary. Default OneScreen("").
	Options SummaryOptions
}

// Name is "console".
func (w *ConsoleWriter) Name() string { return "console" }

// Write writes the summary of r to the first console device that takes
// it. Lines end in "\r\n", which a raw serial line needs.
func (w *ConsoleWriter) Write(ctx context.Context, r *BootstrapReport) error {
	devices := w.Devices
	if devices == nil {
		devices = DefaultConsoleDevices
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultConsoleTimeout
	}
	opt := w.Options
	if opt.Width == 0 && opt.Height == 0 {
		opt = OneScreen(opt.ReportPath)
	}
	data := []byte(strings.ReplaceAll(Summary(r, opt), "\n", "\r\n"))
	var errs []error
	for _, dev := range devices {
		full := HostPath(w.Root, dev)
		if _, err := os.Stat(full); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := writeBounded(ctx, full, data, timeout)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", dev, err))
	}
	return errors.Join(errs...)
}

// writeBounded opens path without blocking and writes data within
// timeout. When the device supports deadlines the write is abandoned at
// the deadline; otherwise the write goes on in a goroutine that closes the
// device when it returns, and writeBounded returns at the timeout.
func writeBounded(ctx context.Context, path string, data []byte, timeout time.Duration) error {
	f, err := openConsole(path)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	if err := f.SetWriteDeadline(deadline); err != nil {
		// Not pollable: Fd puts the file back in blocking mode, so the
		// write does not fail with EAGAIN; the timer below bounds it.
		_ = f.Fd()
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	t := time.NewTimer(time.Until(deadline) + 100*time.Millisecond)
	defer t.Stop()
	select {
	case err := <-done:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("console write timed out after %v", timeout)
		}
		return err
	case <-t.C:
		return fmt.Errorf("console write timed out after %v", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}
