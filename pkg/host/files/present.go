package files

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"os"
)

// Present returns a Blob of the host file hostPath (a path Resolve
// returned) when it is a regular file whose content already has the hex
// SHA-256 wantSHA256 of the source rawURL (root as for FetchFor), so
// that a rerun need not fetch a source it already installed: the
// source may be gone or unreachable by then, and a spec
// that changes nothing must change and fetch nothing. It returns nil when
// the path is missing, is not a regular file (a symlink is not followed),
// cannot be read, or holds other content: the caller fetches the source
// then. The Blob is that file, opened read-only, in the state install
// leaves a Blob in: a later read (Reader) checks its SHA-256 again and
// refuses a file changed since, and writing it into place (Apply) links
// nothing, since a Plan against the file finds the content unchanged.
// The caller closes it. It reads the file once (about 0.1 s for 90 MB
// in the page cache) and never writes; not at all when rawURL is a
// file:// source whose size differs (an upgrade's new kubelet), so that
// a run that changes the file pays nothing for the check. An http(s)
// source's size is not known before it is fetched: a destination with
// other content is read before the fetch.
func Present(root, rawURL, hostPath, wantSHA256 string) *Blob {
	fi, err := os.Lstat(hostPath)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if size := localSize(root, rawURL); size >= 0 && size != fi.Size() {
		return nil
	}
	// Refused when hostPath was replaced after the Lstat (a symlink to
	// another file of that content would otherwise stand for it).
	f, err := openExamined(hostPath, fi)
	if err != nil {
		return nil
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, copyBuf))
	sum := h.Sum(nil)
	if err != nil || n != fi.Size() || hex.EncodeToString(sum) != wantSHA256 {
		f.Close()
		return nil
	}
	return &Blob{f: f, size: n, sum: sum, installed: hostPath}
}

// localSize is the size of the file:// source rawURL under root when it
// is a regular file, else -1.
func localSize(root, rawURL string) int64 {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "file" {
		return -1
	}
	hp, err := Resolve(root, u.Path)
	if err != nil {
		return -1
	}
	fi, err := os.Stat(hp)
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	return fi.Size()
}
