package phases

import (
	"encoding/json"
	"slices"
	"time"
)

// stateFile is the name of the state file in the work directory.
const stateFile = "state.json"

// state records which phases of which spec completed, so that a re-run
// after success is a no-op and a re-run after a crash resumes. It holds no
// secrets.
type state struct {
	// SpecDigest is the digest of the spec the phases belong to.
	SpecDigest string `json:"specDigest"`
	// Completed lists the phases that finished, in order.
	Completed []string `json:"completed"`
	// FinishedAt is set (RFC 3339) when the whole workflow succeeded.
	FinishedAt string `json:"finishedAt,omitempty"`
}

// statePath is the state file's machine path in the work directory.
const statePath = "/" + stateFile

// loadState reads the state file; a missing or unreadable file is an empty
// state. Dry runs never use state.
func loadState(d *Data) *state {
	st := &state{}
	if d.DryRun {
		return st
	}
	data, err := d.work().ReadFile(statePath)
	if err != nil {
		return st
	}
	if json.Unmarshal(data, st) != nil {
		return &state{}
	}
	return st
}

func (s *state) completedRun(digest string) bool {
	return s.SpecDigest == digest && s.FinishedAt != ""
}

func (s *state) completedPhase(digest, name string) bool {
	return s.SpecDigest == digest && slices.Contains(s.Completed, name)
}

func (s *state) markPhase(d *Data, name string) error {
	if s.SpecDigest != d.SpecDigest {
		*s = state{SpecDigest: d.SpecDigest}
	}
	if !slices.Contains(s.Completed, name) {
		s.Completed = append(s.Completed, name)
	}
	return s.save(d)
}

func (s *state) markDone(d *Data) error {
	if s.SpecDigest != d.SpecDigest {
		*s = state{SpecDigest: d.SpecDigest}
	}
	s.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return s.save(d)
}

func (s *state) save(d *Data) error {
	if d.DryRun {
		return nil
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	_, err = d.work().WriteFile(statePath, append(data, '\n'), 0o600)
	return err
}
