//go:build !windows

package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// blobString is a Blob's content ("" for nil), which it closes.
func blobString(t *testing.T, b *Blob) string {
	t.Helper()
	if b == nil {
		return ""
	}
	defer b.Close()
	r, err := b.Reader()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The server listens on 127.0.0.1 only (httptest's default).
func TestFetchHTTP(t *testing.T) {
	body := []byte("ca bundle\n")
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		switch r.URL.Path {
		case "/ok":
			w.Write(body)
		case "/flaky":
			if n == 1 {
				http.Error(w, "try later", http.StatusServiceUnavailable)
				return
			}
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on loopback: %s", srv.URL)
	}
	ctx := context.Background()
	client := &http.Client{Timeout: 5 * time.Second}

	got, err := Fetch(ctx, client, "/", srv.URL+"/ok", sum(body))
	if err != nil || blobString(t, got) != string(body) {
		t.Fatalf("Fetch ok = %q, %v", blobString(t, got), err)
	}
	_, err = Fetch(ctx, client, "/", srv.URL+"/ok?sig=SECRET", strings.Repeat("0", 64))
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("mismatch error = %v", err)
	}
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), sum(body)) {
		t.Errorf("mismatch error should give the digest and hide the query: %v", err)
	}
	hits.Store(0)
	if got, err := Fetch(ctx, client, "/", srv.URL+"/flaky", sum(body)); err != nil || blobString(t, got) != string(body) {
		t.Errorf("Fetch after one 503 = %q, %v", blobString(t, got), err)
	}
	hits.Store(0)
	if _, err := Fetch(ctx, client, "/", srv.URL+"/missing", sum(body)); !errors.Is(err, ErrUnavailable) || hits.Load() != 1 {
		t.Errorf("404: error %v after %d tries, want ErrUnavailable after 1", err, hits.Load())
	}
}

func TestFetchUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Fetch(ctx, &http.Client{Timeout: 2 * time.Second}, "/", url+"/x", strings.Repeat("0", 64))
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error = %v, want ErrUnavailable", err)
	}
}

func TestFetchFileURLUnderRoot(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "opt"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "opt/payload"), []byte("p"), 0o644))
	got, err := Fetch(context.Background(), nil, root, "file:///opt/payload", sum([]byte("p")))
	if err != nil || blobString(t, got) != "p" {
		t.Errorf("Fetch file = %q, %v", blobString(t, got), err)
	}
	if _, err := Fetch(context.Background(), nil, root, "file:///opt/none", sum([]byte("p"))); !errors.Is(err, ErrUnavailable) {
		t.Errorf("missing file: %v", err)
	}
}

// TestFetchTooLargeRefusedBeforeStaging: content known beforehand to be
// larger than MaxFetchBytes (a file:// source, here a sparse file; an
// answer's Content-Length) is refused as such before anything is
// staged: MaxFetchBytes of it were written to $TMPDIR first (memory,
// on a tmpfs), and where that had no room the error blamed $TMPDIR
// (ErrStaging), not the size.
func TestFetchTooLargeRefusedBeforeStaging(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "big"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(root, "big"), MaxFetchBytes+1); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "268435457")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	for _, u := range []string{"file:///big", srv.URL + "/big"} {
		b, err := Fetch(context.Background(), srv.Client(), root, u, strings.Repeat("0", 64))
		b.Close()
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrStaging) || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s: %v; want it refused as larger than %d, before staging", u, err, MaxFetchBytes)
		}
	}
}
