package report

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/atomicfile"
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
// claims a success the last run did not have.
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
	path := w.Path
	switch path {
	case SentinelDisabled:
		return nil
	case "":
		path = DefaultSentinel
	}
	full := HostPath(w.Root, path)
	if r.Result != ResultSucceeded {
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing stale sentinel: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("creating sentinel directory: %w", err)
	}
	return atomicfile.WriteFile(full, []byte("success\n"), 0o644)
}
