//go:build !windows

package cpunits_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
)

// A rollback killed before its rename leaves a temporary copy of the
// binary beside it (a new random name each time, since restored files
// are no longer written through one fixed name): the next rollback
// removes it, so reruns do not pile up copies of a binary. A name of
// that pattern that is not such a leftover (a symlink, another name of a
// file) is left alone.
func TestReplaceRollbackRemovesLeftovers(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	if _, err := cpunits.Backup(root, "", c); err != nil {
		t.Fatal(err)
	}
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new, broken")
	dir := filepath.Join(root, "usr/local/bin")
	leftover := filepath.Join(dir, ".kube-apiserver.tmp-123456789")
	if err := os.WriteFile(leftover, []byte("old, half copied"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, ".kube-apiserver.tmp-42")
	if err := os.Link(other, linked); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".kube-apiserver.tmp-7")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	checks := 0
	res, err := cpunits.Replace(t.Context(), c, cpunits.ReplaceOptions{Root: root, Manager: &service.Recorder{}, Healthy: func(context.Context) error {
		if checks++; checks > 1 {
			return nil
		}
		return errors.New("livez: connection refused")
	}})
	if err == nil || !res.RolledBack {
		t.Fatalf("Replace: %+v, %v; want a rollback", res, err)
	}
	if got := readHost(t, root, "/usr/local/bin/kube-apiserver"); got != "old" {
		t.Errorf("binary after the rollback %q, want %q", got, "old")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), ".kube-apiserver.tmp-42 .kube-apiserver.tmp-7 kube-apiserver other"; got != want {
		t.Errorf("%s holds %s, want %s (the leftover removed, nothing else)", dir, got, want)
	}
}
