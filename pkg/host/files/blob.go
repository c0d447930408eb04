package files

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
)

// InlineMax is the largest file content ReadState reads into memory
// (bytes); a larger file (a binary) is compared and copied in pieces
// from where it is, so that no file's size sets machineadm's memory use.
const InlineMax = 1 << 20

// copyBuf is the size of the pieces large content is read in.
const copyBuf = 256 << 10

// Blob is verified content staged on disk rather than held in memory.
// Fetch makes one. A Blob is read from any number of times; Close frees
// it.
//
// Where it is staged: FetchFor stages it, on Linux, as a file with no
// name (O_TMPFILE) in the directory of the host file it is for, so that
// writing it there links it into place instead of copying it (install).
// Otherwise (Fetch, other systems, a directory that is missing or whose
// file system has no O_TMPFILE) it is a temporary file in os.TempDir, that
// is $TMPDIR or /tmp, removed from its directory as soon as it is made
// where the OS allows it, otherwise at Close. Either way nothing is left
// behind, even after a crash.
type Blob struct {
	f    *os.File
	size int64
	// sum is the content's SHA-256, which Fetch checked.
	sum  []byte
	name string // still to remove at Close ("" once removed)
	// dir is the directory f was staged in, unnamed (openUnnamed); ""
	// when f is in os.TempDir.
	dir string
	// installed is the host path install linked f to ("" not yet): from
	// then on f is that file, and a read checks it is still the content.
	installed string
	src       *source
}

// newBlob creates an empty Blob to write into: unnamed in dir when dir is
// not "" and that works, else in os.TempDir. size is the content's length
// when known before it is read (-1 otherwise): dir is not used when its
// file system has not that much room (roomFor), which staging there would
// fill for every other writer before stagingWriter gave up on it. where
// names the directory used, for errors (dir too when it had no room).
func newBlob(dir string, size int64) (b *Blob, where string, err error) {
	where = os.TempDir()
	if dir != "" {
		if size >= 0 && !roomFor(dir, size) {
			where = dir + " and " + where
		} else if f, err := openUnnamed(dir); err == nil {
			return &Blob{f: f, dir: dir}, dir, nil
		}
	}
	f, err := os.CreateTemp("", "machineadm-content-*")
	if err != nil {
		return nil, where, err
	}
	b = &Blob{f: f, name: f.Name()}
	if os.Remove(f.Name()) == nil {
		b.name = ""
	}
	return b, where, nil
}

// Size is the content's length in bytes.
func (b *Blob) Size() int64 { return b.size }

// Reader reads the content from its start; readers must not overlap in
// time (they share the file's offset). Once the Blob was linked into place
// (install), or when it is a host file found in place (Present), its file
// is the host file there, which something else may have written to
// since: Reader then reads the content's part of it (its first Size
// bytes; the rest, if any, is text appended after it) first and refuses
// it (an error wrapping ErrDigestMismatch) unless it still has the
// SHA-256 Fetch checked, and the reader it returns refuses so, at the
// end of the content, what it read if that no longer has it.
func (b *Blob) Reader() (io.Reader, error) {
	if b.installed != "" {
		if _, err := b.f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		h := sha256.New()
		n, err := io.CopyBuffer(h, io.LimitReader(b.f, b.size), make([]byte, copyBuf))
		if err != nil {
			return nil, err
		}
		if n != b.size || !bytes.Equal(h.Sum(nil), b.sum) {
			return nil, fmt.Errorf("%w: %s no longer has the content checked earlier in this run: something else changed it since; run again", ErrDigestMismatch, b.installed)
		}
	}
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	// A LimitedReader over the *os.File lets a file destination copy it
	// in the kernel (os.File.ReadFrom).
	r := &io.LimitedReader{R: b.f, N: b.size}
	if b.installed != "" {
		// The host file may change after the check above too, while it
		// is read: what was read is checked again at its end.
		return &verifiedReader{r: r, h: sha256.New(), b: b}, nil
	}
	return r, nil
}

// verifiedReader reads an installed Blob's content (Reader) and refuses,
// at its end, bytes that do not have the SHA-256 checked earlier (an
// error wrapping ErrDigestMismatch instead of io.EOF), so that a file
// written to while it is read is not taken for the content: a copy of it
// (WriteAtomic) then fails and replaces nothing.
type verifiedReader struct {
	r io.Reader
	h hash.Hash
	b *Blob
}

func (v *verifiedReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF && !bytes.Equal(v.h.Sum(nil), v.b.sum) {
		err = fmt.Errorf("%w: %s changed while machineadm read it: something else wrote to it; run again", ErrDigestMismatch, v.b.installed)
	}
	return n, err
}

// ready gives b's file, about to be linked in at hostPath (install),
// owner uid:gid (both below 0: the process's, kept) and then mode, chown
// clearing setuid bits, and syncs it.
func (b *Blob) ready(hostPath string, mode fs.FileMode, uid, gid int) error {
	if uid >= 0 && gid >= 0 {
		if err := b.f.Chown(uid, gid); err != nil {
			return fmt.Errorf("writing %s: %w", hostPath, err)
		}
	}
	if err := b.f.Chmod(mode); err != nil {
		return fmt.Errorf("writing %s: %w", hostPath, err)
	}
	if err := b.f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", hostPath, err)
	}
	return nil
}

// Close frees the staged content. A nil Blob is a no-op.
func (b *Blob) Close() error {
	if b == nil {
		return nil
	}
	err := b.f.Close()
	if b.name != "" {
		err = errors.Join(err, os.Remove(b.name))
		b.name = ""
	}
	return err
}

// readExamined reads hostPath whole if it is still the file fi described
// (openExamined).
func readExamined(hostPath string, fi os.FileInfo) ([]byte, error) {
	f, err := openExamined(hostPath, fi)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// source gives content that is not held in State.Content: a large host
// file (ReadState) or a Blob.
type source struct {
	size int64
	open func() (io.ReadCloser, error)
	// blob is the Blob this is the content of, if any (for install).
	blob *Blob
}

// fileSource reads the host file hostPath that fi (os.Lstat) described.
func fileSource(hostPath string, fi os.FileInfo) *source {
	return &source{size: fi.Size(), open: func() (io.ReadCloser, error) { return openExamined(hostPath, fi) }}
}

// openExamined opens hostPath for reading if it is still the file fi
// (os.Lstat, a regular file) described: a path replaced since, by a
// symlink to a key for instance, is refused rather than read (its content
// would be compared, or an append would copy it into the file). The
// last component is not followed (nor, on Linux, a directory on the way
// swapped for a symlink: openResolved), and anything but a regular file
// put there (a FIFO, a device) is refused without being opened
// (OpenRegular).
func openExamined(hostPath string, fi os.FileInfo) (*os.File, error) {
	f, ofi, err := openResolved(hostPath, hostPath)
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, ofi) {
		f.Close()
		return nil, fmt.Errorf("%s changed while machineadm read it: it is no longer the file examined", hostPath)
	}
	return f, nil
}

// source is the Blob as a State's content (one per Blob, so that a
// comparison of a Blob with itself reads nothing).
func (b *Blob) source() *source {
	if b.src == nil {
		b.src = &source{size: b.size, blob: b, open: func() (io.ReadCloser, error) {
			r, err := b.Reader()
			return io.NopCloser(r), err
		}}
	}
	return b.src
}

// Len is the content's length in bytes, held or not.
func (s State) Len() int64 {
	if s.src != nil {
		return s.src.size
	}
	return int64(len(s.Content))
}

// reader reads the content, held or not.
func (s State) reader() (io.ReadCloser, error) {
	if s.src != nil {
		return s.src.open()
	}
	return io.NopCloser(bytes.NewReader(s.Content)), nil
}

// Load returns s with its content in Content (read now, to its end, when
// ReadState left a large file on the host), for callers that need the
// bytes.
func (s State) Load() (State, error) {
	if s.src == nil {
		return s, nil
	}
	r, err := s.src.open()
	if err != nil {
		return s, err
	}
	defer r.Close()
	// To the end, not to the size seen before: a file that grew since
	// (a log, a file another agent appends to) would be cut short, and an
	// Append planned from it would rewrite it without what it grew by.
	data, err := io.ReadAll(r)
	if err != nil {
		return s, err
	}
	s.Content, s.src = data, nil
	return s, nil
}

// sameContent says whether a and b (both existing) hold the same bytes:
// the lengths first, then the bytes in pieces. Content that cannot be read
// counts as different (it is then rewritten, or the write fails there).
func sameContent(a, b State) bool {
	if a.Len() != b.Len() {
		return false
	}
	if a.src == nil && b.src == nil {
		return bytes.Equal(a.Content, b.Content)
	}
	if a.src == b.src {
		return true
	}
	ra, err := a.reader()
	if err != nil {
		return false
	}
	defer ra.Close()
	rb, err := b.reader()
	if err != nil {
		return false
	}
	defer rb.Close()
	ba, bb := make([]byte, copyBuf), make([]byte, copyBuf)
	for {
		na, ea := io.ReadFull(ra, ba)
		nb, eb := io.ReadFull(rb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		done := errors.Is(ea, io.EOF) || errors.Is(ea, io.ErrUnexpectedEOF)
		if done != (errors.Is(eb, io.EOF) || errors.Is(eb, io.ErrUnexpectedEOF)) {
			return false
		}
		if done {
			return true
		}
		if ea != nil || eb != nil {
			return false
		}
	}
}
