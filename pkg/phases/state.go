package phases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// The state file, in the work directory. stateFile is a journal in JSON
// Lines: one header line naming the spec, then one line appended per
// completed leaf and one when the run finished. legacyStateFile is the
// single JSON document earlier versions rewrote after each leaf; it is
// read when there is no journal, so that a host bootstrapped by one of
// them is still recognised.
const (
	stateFile       = "state.jsonl"
	legacyStateFile = "state.json"
	// maxStateSize bounds reading the state file: a few hundred lines of
	// phase names at most.
	maxStateSize = 1 << 20
)

// state records which phases of which spec completed, so that a re-run
// after success is a no-op and a re-run after a crash resumes. It holds no
// secrets.
//
// Durability. A record is appended with one write(2) and no fsync: it is
// in the page cache when the write returns, so it survives the process
// being killed (SIGKILL, the OOM killer, a panic) — the crashes the
// resume exists for (test/e2e TestCrash). A power loss can lose the last
// records, or tear the last line; the loader keeps the valid lines before
// a torn one and the next write rewrites the file without it. Losing a
// record only reruns that leaf, which converges for every leaf except
// those marked Phase.Durable: kubeadm's preflight refuses what the later
// phases write (manifests, /var/lib/etcd, kubelet.conf), so rerunning it
// after them would fail. Their record, and the final one (a lost
// finishedAt would rerun preflight on a bootstrapped host), are fsynced
// (file and directory) before the next leaf starts. Rewriting the whole
// file (a new spec, a migration, a torn tail) goes through a temporary
// file and a rename (package atomicfile), fsynced when the record it
// adds is durable.
type state struct {
	// SpecDigest is the digest of the spec the phases belong to.
	SpecDigest string
	// Completed lists the phases that finished, in order.
	Completed []string
	// FinishedAt is set (RFC 3339) when the whole workflow succeeded.
	FinishedAt string
	// journal says that the state file holds exactly this state as a
	// journal, so that a record can be appended; otherwise the next save
	// rewrites it.
	journal bool
}

// stateRecord is one line of the journal: the header (SpecDigest, first
// line), a completed leaf, or the end of a successful run.
type stateRecord struct {
	SpecDigest string `json:"specDigest,omitempty"`
	Completed  string `json:"completed,omitempty"`
	FinishedAt string `json:"finishedAt,omitempty"`
}

// legacyState is the earlier single-document state file.
type legacyState struct {
	SpecDigest string   `json:"specDigest"`
	Completed  []string `json:"completed"`
	FinishedAt string   `json:"finishedAt,omitempty"`
}

// loadState reads the state file; a missing one is an empty state, and
// so is an unreadable one, with a warning: a link, a FIFO or device, a
// directory, a file of more than maxStateSize (readState). The legacy
// file is read only when there is no journal at all: beside an unreadable
// journal it may be older than the journal was. Dry runs never use state.
func loadState(d *Data) *state {
	if d.DryRun {
		return &state{}
	}
	dir, err := d.work().Path("/")
	if err != nil {
		return &state{}
	}
	data, err := readState(filepath.Join(dir, d.journalName()))
	if err == nil {
		return parseState(data)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		d.log().Warn("the state file cannot be read; the run starts from its first phase", "path", filepath.Join(dir, d.journalName()), "error", err)
		return &state{}
	}
	if d.journalName() != stateFile {
		// Only bootstrap's journal has a legacy predecessor.
		return &state{}
	}
	data, err = readState(filepath.Join(dir, legacyStateFile))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log().Warn("the state file cannot be read; the run starts from its first phase", "path", filepath.Join(dir, legacyStateFile), "error", err)
		}
		return &state{}
	}
	var l legacyState
	if json.Unmarshal(data, &l) != nil {
		return &state{}
	}
	return &state{SpecDigest: l.SpecDigest, Completed: l.Completed, FinishedAt: l.FinishedAt}
}

// journalName is the state file's name in the work directory: Data.StateFile,
// or bootstrap's stateFile.
func (d *Data) journalName() string {
	if d.StateFile != "" {
		return d.StateFile
	}
	return stateFile
}

// JournalSpec returns the spec digest bootstrap's state file in d's work
// directory is about ("" without one): the spec whose bootstrap finished
// there, or is under way.
func JournalSpec(d *Data) string {
	c := *d
	c.StateFile, c.DryRun = "", false
	return loadState(&c).SpecDigest
}

// errStateLink is a symbolic link in a state file's place; errStateHardLink
// a regular file with other names too; errStateNotRegular anything else
// that is not a regular file (a FIFO, a device, a directory).
var (
	errStateLink       = errors.New("a symbolic link, not followed")
	errStateHardLink   = errors.New("a file with more than one hard link, not followed")
	errStateNotRegular = errors.New("not a regular file")
)

// hintJournal is the hint of a run refused for its state file.
const hintJournal = "the state file is machineadm's own: it must be a regular file with one link. Remove it (the next run starts from its first phase) after checking who put it there"

// CheckJournal refuses a state file in d's work directory (the journal,
// and the legacy file) that is not a regular file with exactly one link:
// a symbolic link, a hard link (whose other name could be anything in the
// work directory, or a file another program keeps), a FIFO, a device or a
// directory. Such a file would make the run trust, or append to, what is
// not the journal. The error is class HostPreparationFailed with a hint;
// nil for a missing file, a dry run, or a good file. The session refuses
// a bootstrap on it before any phase; loadState, for any other caller,
// never follows such a file.
func CheckJournal(d *Data) error {
	if d.DryRun {
		return nil
	}
	dir, err := d.work().Path("/")
	if err != nil {
		return nil
	}
	names := []string{stateFile, legacyStateFile}
	if d.journalName() != stateFile {
		names = []string{d.journalName()}
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = ownFile(fi)
		}
		if err != nil {
			return errclass.New(errclass.HostPreparationFailed, hintJournal, fmt.Errorf("state file %s: %w", p, err))
		}
	}
	return nil
}

// ownFile says whether fi (from Lstat) is a regular file with one link.
func ownFile(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return errStateLink
	case !fi.Mode().IsRegular():
		return errStateNotRegular
	case linkCount(fi) > 1:
		return errStateHardLink
	}
	return nil
}

// readState reads the state file at path, which must be a regular file of
// at most maxStateSize bytes (readlimit.File) with one link (ownFile), not
// a symbolic or hard link: the state files
// are machineadm's own, and a link in their place could name another
// file of the work directory (the kubeadm configuration, the containerd
// check record), which a rewrite would replace and a migration remove.
// A rewrite replaces the link itself (save).
func readState(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := ownFile(fi); err != nil {
		return nil, err
	}
	return readlimit.File(path, maxStateSize)
}

// parseState reads a journal: the header, then every complete, valid
// record up to the first line that is not one (a line torn by a power
// loss, or zeros where its data never reached the disk). A journal with
// anything after its valid records is marked for a rewrite.
func parseState(data []byte) *state {
	st := &state{journal: true}
	for i := 0; len(data) > 0; i++ {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		var r stateRecord
		if !complete || json.Unmarshal(line, &r) != nil || !validRecord(r, i == 0) {
			st.journal = false
			break
		}
		switch {
		case i == 0:
			st.SpecDigest = r.SpecDigest
		case r.Completed != "":
			st.Completed = append(st.Completed, r.Completed)
		default:
			st.FinishedAt = r.FinishedAt
		}
		data = rest
	}
	if st.SpecDigest == "" {
		return &state{}
	}
	return st
}

// validRecord says whether r is a header (first) or, after it, exactly
// one completed leaf or the end of the run.
func validRecord(r stateRecord, first bool) bool {
	if first {
		return r.SpecDigest != "" && r.Completed == "" && r.FinishedAt == ""
	}
	return r.SpecDigest == "" && (r.Completed == "") != (r.FinishedAt == "")
}

func (s *state) completedRun(digest string) bool {
	return s.SpecDigest == digest && s.FinishedAt != ""
}

func (s *state) completedPhase(digest, name string) bool {
	return s.SpecDigest == digest && slices.Contains(s.Completed, name)
}

// markPhase records that leaf name completed; durable makes the record
// survive a power loss before it returns.
func (s *state) markPhase(d *Data, name string, durable bool) error {
	s.reset(d)
	if slices.Contains(s.Completed, name) {
		return nil
	}
	s.Completed = append(s.Completed, name)
	return s.save(d, stateRecord{Completed: name}, durable)
}

// markDone records that the workflow succeeded, durably.
func (s *state) markDone(d *Data) error {
	s.reset(d)
	s.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return s.save(d, stateRecord{FinishedAt: s.FinishedAt}, true)
}

// reset starts the state of a new spec.
func (s *state) reset(d *Data) {
	if s.SpecDigest != d.SpecDigest {
		*s = state{SpecDigest: d.SpecDigest}
	}
}

// save appends rec to the journal, or rewrites the journal with the whole
// state when it does not hold the state before rec.
func (s *state) save(d *Data, rec stateRecord, durable bool) error {
	if d.DryRun {
		return nil
	}
	dir, err := d.work().Path("/")
	if err != nil {
		return err
	}
	hp := filepath.Join(dir, d.journalName())
	if s.journal {
		if err := appendRecord(hp, rec, durable); err == nil {
			return nil
		}
		// Rewritten below, so that a failed append leaves no doubt.
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeState(hp, s, durable); err != nil {
		return err
	}
	s.journal = true
	if d.journalName() != stateFile {
		return nil
	}
	// The legacy file would only mislead a reader now.
	lp := filepath.Join(dir, legacyStateFile)
	if err := os.Remove(lp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log().Debug("could not remove the legacy state file", "path", lp, "error", err)
	}
	return nil
}

// appendRecord appends one line with one write; durable fsyncs the file
// and its directory (the journal's own entry may be that recent).
func appendRecord(path string, rec stateRecord, durable bool) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	if durable {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if durable {
		syncDir(filepath.Dir(path))
	}
	return nil
}

// writeState replaces the journal with s, atomically.
func writeState(path string, s *state, durable bool) error {
	var b bytes.Buffer
	recs := []stateRecord{{SpecDigest: s.SpecDigest}}
	for _, c := range s.Completed {
		recs = append(recs, stateRecord{Completed: c})
	}
	if s.FinishedAt != "" {
		recs = append(recs, stateRecord{FinishedAt: s.FinishedAt})
	}
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if durable {
		return atomicfile.WriteFile(path, b.Bytes(), 0o600)
	}
	return atomicfile.WriteFileUnsynced(path, b.Bytes(), 0o600)
}

// syncDir fsyncs a directory, best effort (some file systems cannot),
// not waiting on a FIFO put at its name (atomicfile.SyncDir).
func syncDir(dir string) { atomicfile.SyncDir(dir) }
