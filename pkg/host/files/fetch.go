package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Fetch limits: a payload larger than MaxFetchBytes is refused (it is
// staged on disk, not in memory, but a bound keeps a wrong URL from
// filling the disk); an HTTP
// fetch is tried fetchAttempts times, fetchBackoff apart, each bounded by
// the client's timeout and ctx.
const (
	MaxFetchBytes = 256 << 20
	fetchAttempts = 3
	fetchBackoff  = time.Second
)

// ErrUnavailable marks content that could not be read (unreachable URL,
// HTTP error status, a file:// path missing or not a regular file) or
// that is larger than MaxFetchBytes.
var ErrUnavailable = errors.New("content unavailable")

// ErrTooLarge marks content larger than MaxFetchBytes (known beforehand,
// or found while reading it). Such errors wrap ErrUnavailable as well.
var ErrTooLarge = errors.New("larger than the limit")

// ErrDigestMismatch marks content whose SHA-256 differs from the expected
// one.
var ErrDigestMismatch = errors.New("sha256 mismatch")

// Fetch reads the content at rawURL — http, https, or file (a machine path,
// resolved under root) — into a Blob, in pieces, and checks on the way
// that its hex SHA-256 is wantSHA256: memory use does not grow with the
// content's size. The caller closes the Blob. Errors wrap ErrUnavailable
// (and ErrStaging when the Blob could not be written) or
// ErrDigestMismatch (no Blob is left then); the content itself never
// appears in an error. client may be nil (a client with a 60s timeout is
// used).
func Fetch(ctx context.Context, client *http.Client, root, rawURL, wantSHA256 string) (*Blob, error) {
	return FetchFor(ctx, client, root, rawURL, wantSHA256, "")
}

// FetchFor is Fetch of content meant for the host file hostPath (a path
// Resolve returned; "" for none): on Linux the Blob is staged unnamed in
// hostPath's directory when it exists and its file system allows it, so
// that Apply links it into place rather than copying it there, and its
// write-back to disk starts at once. Staging there touches nothing
// visible: the file has no name until Apply, and a failed check (a digest
// mismatch) or a crash frees it. Otherwise it is Fetch's temporary file.
func FetchFor(ctx context.Context, client *http.Client, root, rawURL, wantSHA256, hostPath string) (*Blob, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var b *Blob
	var sum []byte
	switch u.Scheme {
	case "file":
		b, sum, err = readLocal(root, u.Path, hostPath)
	case "http", "https":
		b, sum, err = fetchHTTP(ctx, client, rawURL, hostPath)
	default:
		err = fmt.Errorf("%w: unsupported URL scheme %q", ErrUnavailable, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(sum); got != wantSHA256 {
		b.Close()
		return nil, fmt.Errorf("%w: %s has sha256 %s, the spec expects %s", ErrDigestMismatch, redactURL(u), got, wantSHA256)
	}
	b.sum = sum
	if b.dir != "" {
		startWriteback(b.f)
		// Held read-only from now on: once linked into place (install)
		// this file is the host file, a binary started later in the run
		// (the kubelet, containerd) while the plan still holds the Blob,
		// and Linux refuses to execute a file open for writing (ETXTBSY).
		// Not reopened, it is copied into place instead, never linked.
		if ro, err := reopenReadOnly(b.f); err == nil {
			b.f.Close()
			b.f = ro
		} else {
			b.dir = ""
		}
	}
	return b, nil
}

// readLocalResolved, when set (tests), is called by readLocal with the
// path Resolve returned, before it is opened.
var readLocalResolved func(hp string)

func readLocal(root, p, hostPath string) (*Blob, []byte, error) {
	hp, err := Resolve(root, p)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if readLocalResolved != nil {
		readLocalResolved(hp)
	}
	// Resolve followed every link: one swapped in since, at the last
	// component or for a directory on the way, is not followed (out of
	// the root; openResolved); only a regular file is opened
	// (OpenRegular: a FIFO or device is refused without being opened,
	// which would block for a FIFO's writer or act on a device).
	f, fi, err := openResolved(hp, p)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer f.Close()
	return stage(f, hostPath, fi.Size())
}

func fetchHTTP(ctx context.Context, client *http.Client, rawURL, hostPath string) (*Blob, []byte, error) {
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	var last error
	for attempt := 1; attempt <= fetchAttempts; attempt++ {
		b, sum, retry, err := fetchOnce(ctx, client, rawURL, hostPath)
		if err == nil {
			return b, sum, nil
		}
		last = err
		if !retry || attempt == fetchAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
		case <-time.After(fetchBackoff):
		}
	}
	return nil, nil, last
}

// fetchOnce does one GET; retry says whether another attempt may help
// (network errors and 5xx/429 answers).
func fetchOnce(ctx context.Context, client *http.Client, rawURL, hostPath string) (*Blob, []byte, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry credentials; it is named by the caller
		}
		return nil, nil, true, fmt.Errorf("%w: GET failed: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		return nil, nil, retry, fmt.Errorf("%w: GET answered %s", ErrUnavailable, resp.Status)
	}
	b, sum, err := stage(resp.Body, hostPath, resp.ContentLength)
	// A body cut short may come whole next time; a payload too large or
	// a staging file that cannot be written will not.
	return b, sum, errors.Is(err, errRead), err
}

// ErrStaging marks a failure to stage the content on this machine (a
// temporary file in os.TempDir, that is $TMPDIR or /tmp, or an unnamed
// one in the destination's directory (FetchFor): missing, not writable,
// full), not to get it from its source. The error names the directory.
// Such errors wrap ErrUnavailable as well.
var ErrStaging = errors.New("staging the content")

// errRead marks a failure to read the source (not to stage it).
var errRead = errors.New("reading the source")

// stage copies r, at most MaxFetchBytes, into a new Blob (newBlob: in
// the directory of hostPath, the host file it is for, when it can; size
// is r's length if known, else -1) and returns it with the content's
// SHA-256; a size known to exceed MaxFetchBytes is refused before
// anything is read or staged. A hostPath that is already a file of that
// size most likely holds the content (a rerun), which will then not be
// written: the Blob is staged in os.TempDir then, as Fetch stages, so
// that a run that changes nothing writes nothing in that directory
// (room, disk, inotify watchers); a file of the same size but other
// content is copied into place from there.
func stage(r io.Reader, hostPath string, size int64) (*Blob, []byte, error) {
	// Known beforehand to be too large (a file:// source, a
	// Content-Length): refused before anything is staged, not after
	// MaxFetchBytes of it were written to $TMPDIR (a tmpfs: memory),
	// nor as a staging error when that has no room for them.
	if size > MaxFetchBytes {
		return nil, nil, fmt.Errorf("%w: %w: %d bytes, larger than %d", ErrUnavailable, ErrTooLarge, size, MaxFetchBytes)
	}
	dir := ""
	if hostPath != "" {
		dir = filepath.Dir(hostPath)
		if fi, err := os.Lstat(hostPath); err == nil && size >= 0 && fi.Mode().IsRegular() && fi.Size() == size {
			dir = ""
		}
	}
	b, where, err := newBlob(dir, size)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w in %s: %v", ErrUnavailable, ErrStaging, where, err)
	}
	h := sha256.New()
	w := &stagingWriter{b: b, where: where}
	n, err := io.CopyBuffer(io.MultiWriter(w, h), readErrors{io.LimitReader(r, MaxFetchBytes+1)}, make([]byte, copyBuf))
	switch {
	case errors.Is(err, errRead):
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		err = fmt.Errorf("%w: %w in %s: %v", ErrUnavailable, ErrStaging, w.where, err)
	case n > MaxFetchBytes:
		err = fmt.Errorf("%w: %w: larger than %d bytes", ErrUnavailable, ErrTooLarge, MaxFetchBytes)
	}
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	b.size = n
	return b, h.Sum(nil), nil
}

// stagingWriter writes to b's file. When b is staged unnamed in a
// destination's directory whose file system refuses the content (full,
// over quota) it moves what was written to a new Blob in os.TempDir, as
// Fetch stages, and goes on there: a check must not fail for want of
// room beside a file it may find unchanged, nor a dry run, which writes
// nothing. where names the directory used, for errors.
type stagingWriter struct {
	b     *Blob
	n     int64 // bytes written
	where string
}

func (w *stagingWriter) Write(p []byte) (int, error) {
	n, err := w.b.f.Write(p)
	if err != nil && w.b.dir != "" {
		if serr := w.spill(); serr != nil {
			w.where = w.where + " and " + os.TempDir()
			return n, fmt.Errorf("%v; %v", err, serr)
		}
		// What reached the unnamed file of p is dropped with it.
		n, err = w.b.f.Write(p)
	}
	w.n += int64(n)
	return n, err
}

// spill moves the w.n bytes written so far to a new Blob in os.TempDir
// and makes b that Blob, freeing the unnamed file.
func (w *stagingWriter) spill() error {
	t, where, err := newBlob("", -1)
	if err != nil {
		return err
	}
	if _, err := io.Copy(t.f, io.NewSectionReader(w.b.f, 0, w.n)); err != nil {
		t.Close()
		return err
	}
	w.b.f.Close()
	w.b.f, w.b.name, w.b.dir = t.f, t.name, ""
	w.where = where
	return nil
}

// readErrors marks the reader's errors with errRead, to tell them from
// the staging file's.
type readErrors struct{ r io.Reader }

func (r readErrors) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", errRead, err)
	}
	return n, err
}

// redactURL drops user information and the query, which may hold
// credentials (pre-signed URLs).
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	return c.String()
}

// RedactURL returns rawURL without user information and query, for logs
// and reports.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparsable URL>"
	}
	return redactURL(u)
}
