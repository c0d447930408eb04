package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

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

// fileEntry is one checked spec file.
type fileEntry struct {
	field   string
	desired files.Desired
	// owner is the file's owner and group, which may name an account the
	// accounts step creates (resolved in apply).
	owner owner
}

type filesPlan struct{ entries []fileEntry }

// filesChecker decodes or fetches (verifying SHA-256) every file's content
// and resolves its path, mode, owner and group. An owner or group that
// the accounts step of this run creates (pending) is resolved when the
// file is written. All problems are returned together, each naming its
// field.
func filesChecker(specFiles []machineadm.File, pending map[string]bool) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		if len(specFiles) == 0 {
			return &filesPlan{}, nil
		}
		ids, err := files.LoadIDs(env.root())
		if err != nil {
			return nil, hostErr(hintFileOwner, "spec.host.files: %w", err)
		}
		var p filesPlan
		var errs []error
		for i, f := range specFiles {
			fp := fmt.Sprintf("spec.host.files[%d]", i)
			e, err := checkFile(ctx, env, ids, pending, f, fp)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.entries = append(p.entries, e)
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return &p, nil
	}
}

func checkFile(ctx context.Context, env *Env, ids *files.IDs, pending map[string]bool, f machineadm.File, fp string) (fileEntry, error) {
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
	var blob *files.Blob
	if f.Source != nil {
		// Staged on disk, not held in memory: a source may be a binary
		// of a hundred MB (the kubelet), and the plan lives for the run.
		// Staged beside its destination where it can be (FetchFor), it
		// is linked into place rather than copied there. Not in a dry
		// run, which writes nothing there: a file made in that
		// directory, even unnamed, takes its file system's room, is
		// written to its disk and is seen by whoever watches the
		// directory (inotify); in $TMPDIR, as Fetch stages, instead.
		dest := hp
		if env.DryRun {
			dest = ""
		}
		// A destination that already has the pinned content (a rerun, an
		// upgrade run again after it succeeded) is that content: nothing
		// is fetched, so a source gone or unreachable since does not fail
		// a run that changes nothing.
		if blob = files.Present(env.root(), f.Source.URL, hp, f.Source.SHA256); blob == nil {
			blob, err = files.FetchFor(ctx, env.HTTPClient, env.root(), f.Source.URL, f.Source.SHA256, dest)
		}
		switch {
		case errors.Is(err, files.ErrDigestMismatch):
			return fileEntry{}, errclass.New(errclass.VerificationFailed, hintVerify, fmt.Errorf("%s.source.sha256: %w", fp, err))
		case errors.Is(err, files.ErrStaging):
			return fileEntry{}, hostErr(hintStaging, "%s.source: %w", fp, err)
		case err != nil:
			return fileEntry{}, errclass.New(errclass.PayloadUnavailable, hintPayload, fmt.Errorf("%s.source.url %s: %w", fp, files.RedactURL(f.Source.URL), err))
		}
	} else {
		content, err = machineadm.DecodeContent(f.Content, f.Encoding)
		if err != nil {
			return fileEntry{}, hostErr(hintWrite, "%s.content: does not decode as %q: %w", fp, f.Encoding, err)
		}
	}
	m := fs.FileMode(mode)
	return fileEntry{field: fp, owner: own, desired: files.Desired{
		Path:    f.Path,
		Content: content,
		Blob:    blob,
		Mode:    m,
		Append:  f.Append,
		// A file not readable by everyone may hold a secret: keep its
		// content out of diffs.
		Secret: m&0o004 == 0,
	}}, nil
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
