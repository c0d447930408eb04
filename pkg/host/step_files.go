package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
)

func init() {
	Register(Concern{Order: 10, Name: StepFiles, Short: "Write the files of spec.host.files (content or verified remote source)", Class: errclass.HostPreparationFailed,
		OS: []string{OSLinux}, Fields: []string{"spec.host.files"}, Validation: "validateHost, validateHostPrep",
		checker: func(cfg *machineadm.MachineBootstrapConfig) checker {
			return filesChecker(cfg.Spec.Host.Files, pendingAccounts(cfg))
		}})
}

// fileEntry is one checked spec file, with the entries after it that
// append to the same path (planned with it, Desired.Appends).
type fileEntry struct {
	field   string
	desired files.Desired
	// owner is the file's owner and group, which may name an account the
	// accounts step creates (resolved in apply).
	owner owner
	// hostPath is where the path resolved (files.Resolve), the key
	// entries for one file are merged by.
	hostPath string
	// source, when set, is fetched (or found in place) into desired.Blob
	// once the entries appending to the path are known.
	source *machineadm.RemoteSource
}

type filesPlan struct{ entries []fileEntry }

// release closes the content the plan staged (Blobs: unnamed files
// beside their destinations, or in $TMPDIR, up to hundreds of MB each),
// once the plan was applied or will not be.
func (p *filesPlan) release() {
	for i := range p.entries {
		p.entries[i].desired.Blob.Close()
		p.entries[i].desired.Blob = nil
	}
}

// filesChecker decodes or fetches (verifying SHA-256) every file's content
// and resolves its path, mode, owner and group. An owner or group that
// the accounts step of this run creates (pending) is resolved when the
// file is written. Entries that append to a path an earlier entry writes
// are planned with that entry (mergeFileEntries), so that a file already
// holding their joint content is found unchanged, and a source is not
// fetched then. All problems are returned together, each naming its
// field; content staged for the entries that passed is freed then.
func filesChecker(specFiles []machineadm.File, pending map[string]bool) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		if len(specFiles) == 0 {
			return &filesPlan{}, nil
		}
		ids, err := files.LoadIDs(env.root())
		if err != nil {
			return nil, hostErr(hintFileOwner, "spec.host.files: %w", err)
		}
		errs := make([]error, len(specFiles))
		var entries []fileEntry
		var index []int // the spec index of entries[i]
		for i, f := range specFiles {
			e, err := checkFile(env, ids, pending, f, fmt.Sprintf("spec.host.files[%d]", i))
			if err != nil {
				errs[i] = err
				continue
			}
			entries, index = append(entries, e), append(index, i)
		}
		p := &filesPlan{}
		var first []int
		p.entries, first = mergeFileEntries(entries, index)
		for i := range p.entries {
			if err := fetchSource(ctx, env, &p.entries[i]); err != nil {
				errs[first[i]] = err
			}
		}
		if err := errors.Join(errs...); err != nil {
			p.release()
			return nil, err
		}
		return p, nil
	}
}

// mergeFileEntries plans each entry that appends (append: true) to the
// path of an earlier entry with that entry: its content joins the
// earlier one's Appends, and its mode, owner and group, which the host
// keeps for the whole file, replace the earlier ones. It returns the
// merged entries with the spec index of each one's first entry.
func mergeFileEntries(entries []fileEntry, index []int) ([]fileEntry, []int) {
	var out []fileEntry
	var first []int
	at := map[string]int{}
	for i, e := range entries {
		j, ok := at[e.hostPath]
		if !ok || !e.desired.Append {
			at[e.hostPath] = len(out)
			out, first = append(out, e), append(first, index[i])
			continue
		}
		m := &out[j]
		m.field += ", " + e.field
		m.owner = e.owner
		m.desired.Mode = e.desired.Mode
		m.desired.Secret = m.desired.Secret || e.desired.Secret
		m.desired.Appends = append(m.desired.Appends, e.desired.Content)
	}
	return out, first
}

func checkFile(env *Env, ids *files.IDs, pending map[string]bool, f machineadm.File, fp string) (fileEntry, error) {
	if err := withheld(env, fp+".content", f.Path); err != nil {
		return fileEntry{}, err
	}
	hp, err := files.Resolve(env.root(), f.Path)
	if err != nil {
		return fileEntry{}, hostErr(hintWrite, "%s.path: %w", fp, err)
	}
	mode, err := strconv.ParseUint(f.Mode, 8, 32)
	if err != nil || mode > 0o777 {
		return fileEntry{}, hostErr(hintWrite, "%s.mode: %q is not an octal permission 0000-0777", fp, f.Mode)
	}
	own, err := resolveOwner(ids, f.Owner, f.Group, pending, fp+".owner", fp+".group")
	if err != nil {
		return fileEntry{}, err
	}
	var content []byte
	if f.Source == nil {
		content, err = machineadm.DecodeContent(f.Content, f.Encoding)
		if err != nil {
			return fileEntry{}, hostErr(hintWrite, "%s.content: does not decode as %q: %w", fp, f.Encoding, err)
		}
	}
	m := fs.FileMode(mode)
	return fileEntry{field: fp, owner: own, hostPath: hp, source: f.Source, desired: files.Desired{
		Path:    f.Path,
		Content: content,
		Mode:    m,
		Append:  f.Append,
		// A file not readable by everyone may hold a secret: keep its
		// content out of diffs.
		Secret: m&0o004 == 0,
	}}, nil
}

// fetchSource puts the content of e's source, if any, in e.desired.Blob,
// verified against its SHA-256. e.field's first part names the source's
// entry in errors.
func fetchSource(ctx context.Context, env *Env, e *fileEntry) error {
	if e.source == nil {
		return nil
	}
	fp, _, _ := strings.Cut(e.field, ", ")
	// Staged on disk, not held in memory: a source may be a binary
	// of a hundred MB (the kubelet), and the plan lives for the run.
	// Staged beside its destination where it can be (FetchFor), it
	// is linked into place rather than copied there. Not in a dry
	// run, which writes nothing there: a file made in that
	// directory, even unnamed, takes its file system's room, is
	// written to its disk and is seen by whoever watches the
	// directory (inotify); in $TMPDIR, as Fetch stages, instead.
	dest := e.hostPath
	if env.DryRun {
		dest = ""
	}
	// A destination that already has the pinned content (a rerun, an
	// upgrade run again after it succeeded), followed by what the later
	// entries append to it, is that content: nothing is fetched, so a
	// source gone or unreachable since does not fail a run that changes
	// nothing.
	var err error
	blob := files.Present(env.root(), e.source.URL, e.hostPath, e.source.SHA256, e.desired.Appends...)
	if blob == nil {
		blob, err = files.FetchFor(ctx, env.HTTPClient, env.root(), e.source.URL, e.source.SHA256, dest)
	}
	switch {
	case errors.Is(err, files.ErrDigestMismatch):
		return errclass.New(errclass.VerificationFailed, hintVerify, fmt.Errorf("%s.source.sha256: %w", fp, err))
	case errors.Is(err, files.ErrStaging):
		return hostErr(hintStaging, "%s.source: %w", fp, err)
	case err != nil:
		hint := hintPayload
		if u, uerr := url.Parse(e.source.URL); errors.Is(err, files.ErrTooLarge) {
			hint = hintTooLarge
		} else if uerr == nil && u.Scheme == "file" {
			hint = hintPayloadFile
		}
		return errclass.New(errclass.PayloadUnavailable, hint, fmt.Errorf("%s.source.url %s: %w", fp, files.RedactURL(e.source.URL), err))
	}
	e.desired.Blob = blob
	return nil
}

// hintWithheld is the hint of a write refused because its content is
// still sealed.
const hintWithheld = "the spec is sealed: run machineadm with this machine's identity (--identity FILE, default /etc/machineadm/identity), which opens the SealedSecrets document before any phase; nothing was written"

// withheld refuses to write target when the spec field field (a sealed
// item's path) is in env.Withheld: its content is in the envelope, not in
// the spec, and writing the empty clear value would replace the secret.
func withheld(env *Env, field, target string) error {
	if !env.Withheld[field] {
		return nil
	}
	return errclass.New(errclass.VerificationFailed, hintWithheld,
		fmt.Errorf("%s: sealed in the spec's SealedSecrets document, which was not opened; refusing to write %s without it", field, target))
}

func (p *filesPlan) apply(ctx context.Context, env *Env, rec *recorder) error {
	for _, e := range p.entries {
		var err error
		if e.desired.UID, e.desired.GID, err = e.owner.resolve(env, rec, e.desired.Path); err != nil {
			return err
		}
		if _, err := rec.file(e.desired, e.field); err != nil {
			return err
		}
	}
	return nil
}
