// Package cpunitstest holds test helpers for the control-plane units,
// shared by the tests of pkg/host/cpunits and pkg/kubeadm.
package cpunitstest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// VerifyForTest renders c into a temporary directory with a stand-in
// binary and accounts that exist on any Linux system ("daemon"; the
// environment file and supplementary groups left out), fails t when
// `systemd-analyze verify` complains, and returns the unit's exposure
// level, logged for the documentation. Callers skip when systemd-analyze
// is missing.
func VerifyForTest(t testing.TB, c cpunits.Component) float64 {
	t.Helper()
	dir := t.TempDir()
	c.Command = append([]string{filepath.Join(dir, filepath.Base(c.Command[0]))}, c.Command[1:]...)
	if err := os.WriteFile(c.Command[0], []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := cpunits.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	content := strings.NewReplacer("User="+c.User+"\n", "User=daemon\n", "Group="+c.Group+"\n", "Group=daemon\n").Replace(string(fs[0].Content))
	content = regexp.MustCompile(`(?m)^(SupplementaryGroups|EnvironmentFile)=.*\n`).ReplaceAllString(content, "")
	unit := filepath.Join(dir, c.Unit())
	if err := os.WriteFile(unit, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cpunits.Verify(ctx, unit, cpunits.ExecIn(dir)); err != nil {
		t.Errorf("%v\n%s", err, content)
	}
	score, table, err := cpunits.Exposure(ctx, unit, cpunits.ExecIn(dir))
	if err != nil {
		t.Fatalf("%v\n%s", err, table)
	}
	t.Logf("%s: systemd-analyze security exposure %.1f", c.Unit(), score)
	return score
}
