//go:build !windows

package upgrade

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestReadRecordRefusesARecordOthersMayHaveChanged: a record that group
// or others may write, or that another user owns, is refused when read
// (the upgrade's exit code 2, "cannot be used"), naming the file and its
// mode or owner. Such a record was trusted: whoever could write it chose
// what the plan took the node to run.
func TestReadRecordRefusesARecordOthersMayHaveChanged(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Kubernetes: machineadm.Kubernetes{Version: "v1.37.2"}}}
	key, _ := NewKey()
	r, err := NewRecord(cfg, "sha256:x", "bootstrap", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := r.Write(work); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(work, RecordFile)
	for _, mode := range []os.FileMode{0o600, 0o400, 0o640, 0o644} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRecord(work); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o666, 0o620, 0o602, 0o777} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadRecord(work)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "group or others may write it") || !errors.Is(err, ErrRecordAccess) {
			t.Errorf("mode %04o: %v, want a refusal naming the file and its mode (ErrRecordAccess)", mode, err)
		}
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the owner check needs root to give the record away")
	}
	if err := os.Chown(p, 65534, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(work); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") || !errors.Is(err, ErrRecordAccess) {
		t.Errorf("a record owned by uid 65534: %v, want a refusal naming the owner", err)
	}
}

// TestReadRecordChecksTheFileItReads: the owner and mode check is made on
// the file read, through its descriptor: a record put in the place of a
// checked one (a rename between the check and the read, by whoever may
// write the work directory) is refused, not read. The check was made on
// the path before the file was opened.
func TestReadRecordChecksTheFileItReads(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Kubernetes: machineadm.Kubernetes{Version: "v1.37.2"}}}
	key, _ := NewKey()
	r, err := NewRecord(cfg, "sha256:x", "upgrade", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	work, other := t.TempDir(), t.TempDir()
	if err := r.Write(work); err != nil {
		t.Fatal(err)
	}
	r.SpecDigest = "sha256:forged"
	if err := r.Write(other); err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(other, RecordFile)
	if err := os.Chmod(forged, 0o666); err != nil {
		t.Fatal(err)
	}
	renamed := false
	afterRecordStat = func() {
		if renamed {
			return
		}
		renamed = true
		if err := os.Rename(forged, filepath.Join(work, RecordFile)); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterRecordStat = nil }()
	got, err := ReadRecord(work)
	if err == nil {
		t.Fatalf("read the record put in place after the check: %s", got.SpecDigest)
	}
	if !strings.Contains(err.Error(), filepath.Join(work, RecordFile)) {
		t.Errorf("%v, want an error naming the record", err)
	}
}

// TestReadRecordReadsARecordRewrittenAsItIsRead: a record machineadm
// rewrites (atomically: a rename into its place) between the look at its
// path and its opening, by a run that holds the lock while a dry run,
// which takes none, reads it, is read as it is now. It was an error,
// "replaced while it was read", which the upgrade's plan turned into
// "remove it, then run machineadm bootstrap", losing the spec the node
// runs.
func TestReadRecordReadsARecordRewrittenAsItIsRead(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Kubernetes: machineadm.Kubernetes{Version: "v1.37.2"}}}
	key, _ := NewKey()
	r, err := NewRecord(cfg, "sha256:before", "bootstrap", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := r.Write(work); err != nil {
		t.Fatal(err)
	}
	calls := 0
	afterRecordStat = func() {
		calls++
		if calls > 1 {
			return
		}
		r.SpecDigest, r.Command = "sha256:after", "upgrade"
		if err := r.Write(work); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterRecordStat = nil }()
	got, err := ReadRecord(work)
	if err != nil {
		t.Fatalf("a record rewritten by machineadm as it was read: %v", err)
	}
	if got.SpecDigest != "sha256:after" {
		t.Errorf("read %s, want the record as it is now (sha256:after)", got.SpecDigest)
	}
}
