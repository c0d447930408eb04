package service

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Journal reads the last lines a unit logged.
type Journal interface {
	// Tail returns at most n of unit's last journal lines, oldest first,
	// or nothing when the journal cannot be read in time.
	Tail(ctx context.Context, unit string, n int) []string
}

// JournalTimeout bounds one Journalctl.Tail.
const JournalTimeout = 5 * time.Second

// Journalctl reads the systemd journal with `journalctl -u UNIT -n N
// --no-pager -o short-precise`, bounded by JournalTimeout. Without
// journalctl it returns nothing.
type Journalctl struct{}

// Tail implements Journal.
func (Journalctl) Tail(ctx context.Context, unit string, n int) []string {
	path, err := exec.LookPath("journalctl")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, JournalTimeout)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "-u", unit, "-n", strconv.Itoa(n), "--no-pager", "-o", "short-precise").Output()
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
