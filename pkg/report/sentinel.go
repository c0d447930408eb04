package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// DefaultSentinel is the Cluster API bootstrap sentinel file
// (spec.report.sentinel): Cluster API infrastructure providers treat a
// machine as bootstrapped when it exists.
const DefaultSentinel = "/run/cluster-api/bootstrap-success.complete"

// SentinelDisabled as the sentinel path turns the sentinel off.
const SentinelDisabled = "-"

// SentinelWriter creates the Cluster API sentinel file on success, with
// the content "success\n" that Cluster API's kubeadm bootstrap provider
// writes (mode 0644: it holds no secret and tools check for it). On
// failure it removes a sentinel left by an earlier run, so the file never
// claims a success the last run did not have. A file at the path that is
// no sentinel (check) is left as it is, and the write fails. As a
// ProgressWriter it
// removes that sentinel as soon as the run begins: a run killed half-way
// (SIGKILL, power loss) never leaves an earlier run's sentinel claiming a
// node that this run has since changed.
type SentinelWriter struct {
	// Root is prepended to Path.
	Root string
	// Path is the sentinel's absolute path. Default DefaultSentinel;
	// SentinelDisabled ("-") writes nothing.
	Path string
}

// Name is "sentinel".
func (w *SentinelWriter) Name() string { return "sentinel" }

// Write creates or removes the sentinel according to r.Result.
func (w *SentinelWriter) Write(ctx context.Context, r *BootstrapReport) error {
	full := w.path()
	if full == "" {
		return nil
	}
	if err := w.check(full); err != nil {
		return err
	}
	if r.Result != ResultSucceeded {
		return removeSentinel(full)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("creating sentinel directory: %w", err)
	}
	return atomicfile.WriteFile(full, []byte("success\n"), 0o644)
}

// WriteProgress removes the sentinel when the run begins (first); later
// progress changes nothing.
func (w *SentinelWriter) WriteProgress(_ *BootstrapReport, first bool) error {
	if full := w.path(); first && full != "" {
		if err := w.check(full); err != nil {
			return err
		}
		return removeSentinel(full)
	}
	return nil
}

// check refuses what is at full, the sentinel's host path, when it is no
// sentinel: a regular file neither empty nor "success" (what this writer
// and Cluster API's kubeadm bootstrap provider write), or anything but a
// regular file: a device (/dev/null, "no sentinel"), a FIFO, a directory
// or a symbolic link (to a directory such as /bin, or to a file:
// /dev/stdout, which removing or replacing it would remove or replace).
// Such a file is one the path names by mistake, which the writer neither
// removes nor replaces.
func (w *SentinelWriter) check(full string) error {
	p := w.Path
	if p == "" {
		p = DefaultSentinel
	}
	if isLink(full) {
		return fmt.Errorf("%s is a symbolic link, which the writer would remove or replace, not the file it names: left as it is; give spec.report.sentinel a path of its own", p)
	}
	data, err := readlimit.File(full, 64)
	var notRegular *readlimit.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &notRegular):
		return fmt.Errorf("%s is %s, not a success sentinel: left as it is; give spec.report.sentinel a path of its own", p, readlimit.Describe(notRegular.Mode))
	case err == nil && (len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "success"):
		return nil
	case err == nil, readlimit.IsTooLarge(err):
		return fmt.Errorf("%s holds something other than a success sentinel: left as it is; give spec.report.sentinel a path of its own", p)
	}
	return fmt.Errorf("reading the sentinel: %w", err)
}

// path is the sentinel's host path, "" when disabled.
func (w *SentinelWriter) path() string {
	switch w.Path {
	case SentinelDisabled:
		return ""
	case "":
		return HostPath(w.Root, DefaultSentinel)
	}
	return HostPath(w.Root, w.Path)
}

func removeSentinel(full string) error {
	if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale sentinel: %w", err)
	}
	return nil
}
