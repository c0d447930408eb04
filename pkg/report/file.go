package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// DefaultPath is where the report file writer writes by default
// (spec.report.path).
const DefaultPath = "/var/lib/machineadm/report.json"

// FileWriter writes the report as JSON to Root+Path, atomically
// (package atomicfile: a temporary file in the same directory, fsync,
// rename, fsync of the directory), mode 0600. The report it replaces is kept as the previous
// report (PreviousPath: report.json → report.previous.json; atomically, not
// fsynced: after a power loss it may be older). What is at the path and
// is no report is left as it is and the write fails: a FIFO, a device
// (/dev/null, /dev/console; never read, not even opened blocking), a
// directory, a symbolic link (to a directory such as /bin, or to a file:
// /dev/stdout, which the rename would replace), and a regular file larger
// than MaxReportSize or no report (mayBeReport: /etc/passwd, another
// JSON document), found at the first write or at any later one. Missing
// directories are created with mode 0700.
//
// As a ProgressWriter it keeps a provisional report at the path while the
// run goes on: the first one (durable, fsynced) keeps the report it
// replaces as the previous report; updates replace it without an fsync
// (atomicfile.WriteFileUnsynced); the final report replaces it without
// keeping it, so report.previous.json stays the last run's report.
type FileWriter struct {
	// Root is prepended to Path: "/" (or "") on a host, a test directory
	// in tests.
	Root string
	// Path is the report's absolute path. Default DefaultPath.
	Path string

	// progress: a provisional report of this run is at the path.
	progress bool
}

// Name is "file".
func (w *FileWriter) Name() string { return "file" }

// Write writes r, keeping the report it replaces (unless that is this
// run's provisional report).
func (w *FileWriter) Write(ctx context.Context, r *BootstrapReport) error {
	return w.write(ctx, r, !w.progress, true)
}

// WriteProgress writes the provisional report p: the first time like
// Write, later without keeping the report it replaces and without fsync.
func (w *FileWriter) WriteProgress(p *BootstrapReport, first bool) error {
	if w.progress && !first {
		return w.write(context.Background(), p, false, false)
	}
	err := w.write(context.Background(), p, !w.progress, true)
	if err == nil {
		w.progress = true
	}
	return err
}

// write writes r at the path, keeping the report there as the previous
// one when keep is set; sync makes the write durable.
func (w *FileWriter) write(ctx context.Context, r *BootstrapReport, keep, sync bool) error {
	data, err := r.Marshal()
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	path := w.Path
	if path == "" {
		path = DefaultPath
	}
	full := HostPath(w.Root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return fmt.Errorf("creating report directory: %w", err)
	}
	// Read at every write, the provisional report's updates and the final
	// report too: what the run itself put at the path meanwhile (the
	// applied-spec record, where the path names it) is no report either.
	// Bounded, and never blocking on a FIFO put at the path. The rename
	// below replaces whatever is there: a device, a FIFO or a link to a
	// directory is some other file the path names by mistake, and a link
	// to a file (/dev/stdout) would be replaced, not written through.
	if isLink(full) {
		return fmt.Errorf("%s is a symbolic link, which the write would replace, not write through: not replaced; give spec.report.path a file of its own", path)
	}
	old, err := readlimit.File(full, MaxReportSize)
	var notRegular *readlimit.NotRegularError
	switch {
	case errors.As(err, &notRegular):
		return fmt.Errorf("%s is %s, not a report: not replaced; give spec.report.path a file of its own", path, readlimit.Describe(notRegular.Mode))
	case readlimit.IsTooLarge(err):
		return fmt.Errorf("%s is larger than a report (%d bytes at most): not replaced; give spec.report.path a file of its own", path, MaxReportSize)
	case err == nil && !mayBeReport(old):
		return fmt.Errorf("%s holds something other than an outcome report (no JSON object of kind BootstrapReport): not replaced; give spec.report.path a file of its own", path)
	case err == nil && keep:
		// History, not a claim: without an fsync (the new report's own,
		// below, follows in the same directory), which saves one of the
		// run's few durable writes.
		if err := atomicfile.WriteFileUnsynced(HostPath(w.Root, PreviousPath(path)), old, 0o600); err != nil {
			return fmt.Errorf("keeping the previous report: %w", err)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reading the previous report: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !sync {
		return atomicfile.WriteFileUnsynced(full, data, 0o600)
	}
	return atomicfile.WriteFile(full, data, 0o600)
}

// mayBeReport says whether data, a regular file at the report path, may
// be a report, which the writer replaces: empty, a JSON object of kind
// BootstrapReport (Kind, the same in every machineadm version), or what a
// report written without fsync may hold after a power loss (the start of
// one: a JSON object cut short; NULs alone). Anything else is some other
// file the path names by mistake (/etc/passwd, Docker's daemon.json, the
// applied-spec record, a sparse binary such as /var/log/lastlog), which
// is left alone.
func mayBeReport(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(bytes.Trim(data, "\x00")) == 0:
		return true
	case data[0] != '{':
		return false
	case !json.Valid(data):
		return true
	}
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(data, &head) == nil && head.Kind == Kind
}

// isLink says whether the host path full is a symbolic link: what the
// writers would replace or remove, not the file it names. /dev/stdout is
// one (to /proc/self/fd/1): with the run's standard output going to a
// file, it named a regular file, and the report's rename made
// /dev/stdout a regular file for the whole machine.
func isLink(full string) bool {
	fi, err := os.Lstat(full)
	return err == nil && fi.Mode().Type() == fs.ModeSymlink
}

// PreviousPath is where the report at path is kept when a new one is
// written: "report.json" → "report.previous.json", "report" →
// "report.previous".
func PreviousPath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".previous" + ext
}
