package upgrade

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// RecordFile is the applied-spec record's name in machineadm's work
// directory (/var/lib/machineadm/applied-spec.json on a host).
const RecordFile = "applied-spec.json"

// JournalFile is the upgrade's state file in the work directory, beside
// bootstrap's state.jsonl: its header is the digest of the recorded spec
// and the new one (JournalKey), so that a rerun after a crash resumes the
// same upgrade and any other upgrade starts afresh.
const JournalFile = "upgrade.jsonl"

// JournalKey is the journal digest of an upgrade from the recorded spec
// with digest from to the spec with digest to.
func JournalKey(from, to string) string { return "upgrade:" + from + ">" + to }

// RecordKind is the record's kind; RecordVersion its format version.
const (
	RecordKind    = "AppliedSpec"
	RecordVersion = 1
)

// maxRecordSize bounds reading a record: a spec is at most 4 MiB.
const maxRecordSize = 8 << 20

// Record is the spec a node was last brought to, as `machineadm bootstrap`
// (after a successful run) and `machineadm upgrade` (its last phase) keep
// it: root-owned, mode 0600, in the work directory. It holds no secret:
// every secret value of the spec (machineadm.SecretFields: tokens, keys,
// file contents, URLs with credentials, manifests) is replaced by
// Withheld, a keyed digest that tells a changed value from an unchanged
// one and nothing more. References to secret files stay (they are paths).
type Record struct {
	// Kind is RecordKind; Version is RecordVersion.
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// SpecDigest is "sha256:<hex>" of the spec file that was applied (the
	// state file's digest).
	SpecDigest string `json:"specDigest"`
	// Command is the command that applied it: "bootstrap" or "upgrade".
	Command string `json:"command"`
	// AppliedAt is when the run finished (RFC 3339, UTC).
	AppliedAt string `json:"appliedAt"`
	// MachineadmVersion is the version of the machineadm that applied it.
	MachineadmVersion string `json:"machineadmVersion,omitempty"`
	// KubernetesVersion is spec.kubernetes.version of the applied spec.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Key is the hex key of the withheld values' digests (32 random bytes
	// made when the node's first record was written, kept by later ones).
	Key string `json:"key"`
	// Spec is the applied hub spec, defaulted, secrets withheld.
	Spec json.RawMessage `json:"spec"`
}

// Withheld is the prefix of a secret value in Record.Spec, followed by
// the hex HMAC-SHA256 of the value under Record.Key.
const Withheld = "withheld:hmac-sha256:"

// NewKey returns a new random key for a record (hex).
func NewKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Snapshot returns cfg as JSON with each inline secret value replaced by
// Withheld and its keyed digest under key (hex). cfg is not changed. The
// same spec and key always give the same bytes, so two snapshots under a
// record's key compare field by field (Compute).
func Snapshot(cfg *machineadm.MachineBootstrapConfig, key string) (json.RawMessage, error) {
	k, err := hex.DecodeString(key)
	if err != nil || len(k) == 0 {
		return nil, fmt.Errorf("record key: not a hex key")
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var c machineadm.MachineBootstrapConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	for _, f := range machineadm.SecretFields(&c) {
		if !f.Inline() {
			continue
		}
		if f.Kind == machineadm.SecretKindSource {
			f.Source.Value = withhold(k, f.Source.Value)
			continue
		}
		*f.Value = withhold(k, *f.Value)
	}
	return json.Marshal(&c)
}

func withhold(key []byte, v string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(v))
	return Withheld + hex.EncodeToString(m.Sum(nil))
}

// NewRecord returns the record of cfg applied by command from the spec
// file with digest specDigest, under key (NewKey's, or the earlier
// record's so that digests stay comparable).
func NewRecord(cfg *machineadm.MachineBootstrapConfig, specDigest, command, machineadmVersion, key string, at time.Time) (*Record, error) {
	snap, err := Snapshot(cfg, key)
	if err != nil {
		return nil, err
	}
	return &Record{
		Kind: RecordKind, Version: RecordVersion, SpecDigest: specDigest, Command: command,
		AppliedAt: at.UTC().Format(time.RFC3339), MachineadmVersion: machineadmVersion,
		KubernetesVersion: cfg.Spec.Kubernetes.Version, Key: key, Spec: snap,
	}, nil
}

// ErrNoRecord is returned by ReadRecord when the work directory has no
// record: the node was not bootstrapped by a machineadm that keeps one.
var ErrNoRecord = errors.New("no applied-spec record")

// ErrRecordAccess marks a record that group or others may write, or that
// another user than root (or the effective user) owns: ReadRecord
// refuses it, since someone other than machineadm may have written it.
var ErrRecordAccess = errors.New("the record's owner or mode is not machineadm's")

// ReadRecord reads the record in workDir (a host path). A missing record
// is ErrNoRecord; a record that is not a regular file of at most 8 MiB,
// one that group or others may write or another user than root (or the
// effective user) owns (not on Windows; checked on the file read, through
// its descriptor), not a record of a known version (a 32-byte hex key, a
// spec that is a JSON object with a spec member), or one whose spec holds an inline
// secret that is not withheld (the error names its path, never its
// value), is an error.
func ReadRecord(workDir string) (*Record, error) { return readRecord(workDir, true) }

// ReadRecordAnyOwner is ReadRecord without the owner and mode check, for
// a decision that only refuses a run (a bootstrap of another spec than
// the record's): a record someone else may have changed can still
// refuse, never allow.
func ReadRecordAnyOwner(workDir string) (*Record, error) { return readRecord(workDir, false) }

// afterRecordStat, when set (tests), runs between readRecord's look at
// the record's path and its opening.
var afterRecordStat func()

// recordReadAttempts bounds how often readRecord looks at the record and
// reads it again when the file read is not the one the look saw: a
// record machineadm rewrites (a rename into its place) while a dry run,
// which holds no lock, reads it is read as it is then.
const recordReadAttempts = 3

func readRecord(workDir string, access bool) (*Record, error) {
	p := filepath.Join(workDir, RecordFile)
	var data []byte
	var opened fs.FileInfo
	for attempt := 1; ; attempt++ {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", p, ErrNoRecord)
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", p)
		}
		if afterRecordStat != nil {
			afterRecordStat()
		}
		// The owner and mode of the file read, through its descriptor; the
		// same file the look at the path saw (no link put there since).
		data, opened, err = readlimit.FileStat(p, maxRecordSize)
		if err != nil {
			return nil, err
		}
		if os.SameFile(fi, opened) {
			break
		}
		if attempt == recordReadAttempts {
			return nil, fmt.Errorf("%s: replaced while it was read, %d times", p, attempt)
		}
	}
	if err := checkRecordAccess(opened); access && err != nil {
		return nil, fmt.Errorf("%s: %v (machineadm writes it root-owned, mode 0600): someone else may have changed it: %w", p, err, ErrRecordAccess)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if r.Kind != RecordKind || r.Version != RecordVersion || len(r.Spec) == 0 || r.Key == "" {
		return nil, fmt.Errorf("%s: not an applied-spec record of version %d", p, RecordVersion)
	}
	if k, err := hex.DecodeString(r.Key); err != nil || len(k) != 32 {
		return nil, fmt.Errorf("%s: key: not 32 bytes in hex", p)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.Spec, &top); err != nil || top == nil || len(top["spec"]) == 0 {
		return nil, fmt.Errorf("%s: spec: not a machine spec (a JSON object with a spec member)", p)
	}
	if path, err := clearSecret(r.Spec); err != nil {
		return nil, fmt.Errorf("%s: spec: %w", p, err)
	} else if path != "" {
		return nil, fmt.Errorf("%s: holds a secret in the clear at %s, where a record keeps only its withheld digest: not a record machineadm wrote; remove it and run `machineadm bootstrap -f SPEC` with the node's spec to record it again", p, path)
	}
	return &r, nil
}

// clearSecret returns the path of the first inline secret of a record's
// spec that is not withheld (Withheld and 64 hex digits), "" when there
// is none, so that no plan ever prints one; an error when spec is not a
// spec.
func clearSecret(spec json.RawMessage) (string, error) {
	var c machineadm.MachineBootstrapConfig
	if err := json.Unmarshal(spec, &c); err != nil {
		return "", err
	}
	for _, f := range machineadm.SecretFields(&c) {
		if !f.Inline() {
			continue
		}
		v := ""
		if f.Kind == machineadm.SecretKindSource {
			v = f.Source.Value
		} else {
			v = *f.Value
		}
		if !isWithheld(v) {
			return f.Path, nil
		}
	}
	return "", nil
}

// isWithheld says whether v is a withheld value: Withheld followed by a
// hex HMAC-SHA256.
func isWithheld(v string) bool {
	h, ok := strings.CutPrefix(v, Withheld)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// Write writes the record to workDir (a host path, created 0700 when
// missing) atomically, mode 0600.
func (r *Record) Write(workDir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(workDir, RecordFile), append(data, '\n'), 0o600)
}
