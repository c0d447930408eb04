package files

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Desired is the state one file should have on the machine.
type Desired struct {
	// Path is the machine path (absolute), as the machine sees it.
	Path string
	// Content is the full content, or with Append the content to add.
	Content []byte
	// Blob, when set, is the full content instead of Content: staged on
	// disk (Fetch), for content of any size. Not with Append.
	Blob *Blob
	// Mode is the permission bits (0 to 0777).
	Mode fs.FileMode
	// UID and GID are the numeric owner and group.
	UID, GID int
	// Append adds Content at the end of the existing file unless the file
	// already contains it, so that repeated runs add it once. A file
	// with other names (hard links) is not appended to (Change.Check).
	Append bool
	// Appends are added, in order, at the end of the content above (the
	// existing file's with Append) each unless the content so far already
	// contains it: the later entries of a spec that append to the path
	// (Append), planned with the first so that the file's whole content
	// is compared once. A file that already holds that content is then
	// not touched, where writing the first entry's content and appending
	// again would rewrite it on every run.
	Appends [][]byte
	// Secret hides the content from diffs and summaries (key material,
	// files that are not world-readable).
	Secret bool
	// Remove deletes the file when it exists (Content and metadata are
	// then ignored).
	Remove bool
}

// State is what a file is on the host now.
type State struct {
	// Exists says whether the file exists.
	Exists bool
	// Content is its content, when held in memory: a file of at most
	// InlineMax bytes as ReadState reads it, or desired content. Larger
	// content stays where it is (nil here; Len gives its size, Load reads
	// it) and is compared and copied in pieces.
	Content []byte
	// Mode is its permission bits.
	Mode fs.FileMode
	// UID and GID are its owner and group.
	UID, GID int
	// src is the content not held in Content.
	src *source
	// links is the file's number of names (hard links) as ReadState saw
	// it; 0 when not read from the host.
	links int
	// examined is the file as ReadState saw it (os.Lstat); nil when not
	// read from the host.
	examined fs.FileInfo
}

// ReadState reads the state of the host file hostPath. A missing file is
// a State with Exists false; a directory is an error. The content of a
// file larger than InlineMax is not read now (State.Content nil): it is
// read in pieces when compared or copied, or whole by State.Load.
func ReadState(hostPath string) (State, error) {
	fi, err := lstatHost(hostPath)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	if !fi.Mode().IsRegular() {
		return State{}, fmt.Errorf("%s exists and is not a regular file (%s)", hostPath, fi.Mode().Type())
	}
	st := State{Exists: true, Mode: fi.Mode().Perm()}
	if fi.Size() > InlineMax {
		st.src = fileSource(hostPath, fi)
	} else if st.Content, err = readExamined(hostPath, fi); err != nil {
		return State{}, err
	}
	st.UID, st.GID = fileOwner(fi)
	st.links, st.examined = fileLinks(fi), fi
	return st, nil
}

// Change is the difference between a file's current and desired state,
// computed by Plan.
type Change struct {
	// Desired is the wanted state.
	Desired Desired
	// HostPath is where the file is on the host (under the root).
	HostPath string
	// Old is the current state.
	Old State
	// New is the state after the change.
	New State
	// differs caches ContentChanged for Plan's changes: 0 not known
	// (compare when asked), 1 the same content, 2 different.
	differs int8
}

// Plan compares the desired state with the current one. It touches
// nothing on the host; it reads content that is not held in memory (a
// large file, a Blob) to compare it, once. With Append, cur must hold its
// content (State.Load).
func Plan(d Desired, hostPath string, cur State) Change {
	c := Change{Desired: d, HostPath: hostPath, Old: cur}
	if d.Remove {
		return c // New.Exists false
	}
	c.New = State{Exists: true, Content: d.Content, Mode: d.Mode, UID: d.UID, GID: d.GID}
	if d.Blob != nil {
		c.New.Content, c.New.src = nil, d.Blob.source()
	}
	if d.Append && cur.Exists {
		c.New.Content = cur.Content
		if !contains(cur.Content, d.Content) {
			c.New.Content = append(append([]byte{}, cur.Content...), d.Content...)
		}
	}
	if len(d.Appends) > 0 {
		c.New = withAppends(c.New, d.Appends)
	}
	c.differs = 1
	if c.contentChanged() {
		c.differs = 2
	}
	return c
}

// ContentChanged says whether the file is created, removed or gets new
// content.
func (c Change) ContentChanged() bool {
	if c.differs != 0 {
		return c.differs == 2
	}
	return c.contentChanged()
}

func (c Change) contentChanged() bool {
	if c.Old.Exists != c.New.Exists {
		return true
	}
	return c.New.Exists && !sameContent(c.Old, c.New)
}

// MetaChanged says whether only mode, owner or group change, as far as
// the OS keeps them: on Windows only the owner's write bit (the read-only
// attribute) counts, and owners not at all.
func (c Change) MetaChanged() bool {
	if !c.Old.Exists || !c.New.Exists {
		return false
	}
	owner := c.Old.UID != c.New.UID || c.Old.GID != c.New.GID
	return effectiveMode(c.Old.Mode) != effectiveMode(c.New.Mode) || ownersApply && owner
}

// ErrLinkedAppend is returned (wrapped) by Check and Apply for an append
// to a file that has other names (hard links).
var ErrLinkedAppend = errors.New("machineadm does not append to a file with other names")

// Check refuses a change Apply must not make, changing nothing: one that
// appends (Desired.Append) to a file with other names (hard links), as
// ReadState saw it. In place the other names would get the text too; a
// copy, written as new content is so that only this path changes, would
// put the content of what the path is a link to (a local user's link to
// /etc/shadow, say) in a file of the entry's mode and owner, readable by
// whom the spec lets read it. An append that changes nothing passes.
func (c Change) Check() error {
	if c.Desired.Append && c.Old.links > 1 && c.Changed() {
		return fmt.Errorf("%s has %d names (hard links): %w: a copy would give this path the content of what it is a link to, with this entry's mode and owner, and appending in place would change the other names too; remove the other names, or this one (find / -xdev -samefile PATH lists them)", c.HostPath, c.Old.links, ErrLinkedAppend)
	}
	return nil
}

// Changed says whether applying the change touches the host.
func (c Change) Changed() bool { return c.ContentChanged() || c.MetaChanged() }

// Summary is one human-readable line for the report, for example
// "wrote /etc/sysctl.d/90-machineadm.conf (0644, 0:0, 42 bytes)". It never
// contains file content.
func (c Change) Summary() string {
	p := c.Desired.Path
	switch {
	case !c.New.Exists && c.Old.Exists:
		return "removed " + p
	case !c.New.Exists:
		return p + " absent"
	case !c.Changed():
		return p + " unchanged"
	}
	meta := fmt.Sprintf("(%04o, %d:%d, %d bytes)", c.New.Mode, c.New.UID, c.New.GID, c.New.Len())
	switch {
	case !c.Old.Exists:
		return "wrote " + p + " " + meta
	case c.ContentChanged() && c.Desired.Append:
		return "appended to " + p + " " + meta
	case c.ContentChanged():
		return "rewrote " + p + " " + meta
	}
	return fmt.Sprintf("set %s %04o %d:%d (was %04o %d:%d)", p, c.New.Mode, c.New.UID, c.New.GID, c.Old.Mode, c.Old.UID, c.Old.GID)
}

// Apply makes the change on the host: new content is written atomically
// with WriteAtomic (parent directories are created 0755), content not
// held in memory (a Blob) copied in pieces; metadata-only
// changes are made in place, keeping the content and mtime, unless the
// file has other names (hard links, which share its mode and owner: a
// local user's link to /etc/shadow, say), or the change takes writing
// away from someone (a world-writable file made 0644: a descriptor they
// opened before would write to it after; revokesWrite): it is then replaced as new
// content is, so that only this path gets the new mode and owner (names
// made since the file was read included: the change is made through a
// descriptor of the file, whose count of names is checked there; a file
// put in its place since is replaced too, and a symlink swapped in for
// it is refused, not followed); a removal deletes the file. An unchanged file is not touched. A change
// Check refuses (an append to a file with other names) is refused. On
// Windows owners are not set (see MetaChanged) and the mode sets only
// the read-only attribute.
func Apply(c Change) error {
	if err := c.Check(); err != nil {
		return err
	}
	switch {
	case !c.Changed():
		return nil
	case !c.New.Exists:
		if err := removeHost(c.HostPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	// The file's other names would take a mode or owner set in place,
	// also names made since it was read, and a file put in its place
	// since is not the content compared: both are written as new
	// content is (setInPlace).
	if !c.ContentChanged() && c.Old.links <= 1 {
		if replace, err := setInPlace(c.HostPath, c.Old.examined, c.New.Mode, c.New.UID, c.New.GID); !replace {
			return err
		}
	}
	if c.New.src != nil {
		return writeAtomicFrom(c.HostPath, c.New, c.New.Mode, c.New.UID, c.New.GID)
	}
	return WriteAtomic(c.HostPath, c.New.Content, c.New.Mode, c.New.UID, c.New.GID)
}

// Would rephrases a change line (a Summary, or "created …", "set …")
// for a dry run, which changed nothing: "wrote P …" becomes "would write
// P …", and so on; a line saying nothing changes ("P unchanged", "P
// absent") or already phrased so ("would …") is kept; a line of another
// form is prefixed with "would change ".
func Would(summary string) string {
	if strings.HasPrefix(summary, "would ") || strings.HasSuffix(summary, " unchanged") || strings.HasSuffix(summary, " absent") {
		return summary
	}
	for _, v := range []struct{ from, to string }{
		{"wrote ", "would write "}, {"rewrote ", "would rewrite "}, {"appended to ", "would append to "},
		{"removed ", "would remove "}, {"set ", "would set "}, {"created ", "would create "},
	} {
		if strings.HasPrefix(summary, v.from) {
			return v.to + strings.TrimPrefix(summary, v.from)
		}
	}
	return "would change " + summary
}
