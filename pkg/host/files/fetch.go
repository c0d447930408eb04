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
	"time"
)

// Fetch limits: a payload larger than MaxFetchBytes is refused; an HTTP
// fetch is tried fetchAttempts times, fetchBackoff apart, each bounded by
// the client's timeout and ctx.
const (
	MaxFetchBytes = 256 << 20
	fetchAttempts = 3
	fetchBackoff  = time.Second
)

// ErrUnavailable marks content that could not be read (unreachable URL,
// HTTP error status, missing file).
var ErrUnavailable = errors.New("content unavailable")

// ErrDigestMismatch marks content whose SHA-256 differs from the expected
// one.
var ErrDigestMismatch = errors.New("sha256 mismatch")

// Fetch reads the content at rawURL — http, https, or file (a machine path,
// resolved under root) — and checks that its hex SHA-256 is wantSHA256.
// Errors wrap ErrUnavailable or ErrDigestMismatch; the content itself never
// appears in an error. client may be nil (a client with a 60s timeout is
// used).
func Fetch(ctx context.Context, client *http.Client, root, rawURL, wantSHA256 string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var data []byte
	switch u.Scheme {
	case "file":
		data, err = readLocal(root, u.Path)
	case "http", "https":
		data, err = fetchHTTP(ctx, client, rawURL)
	default:
		err = fmt.Errorf("%w: unsupported URL scheme %q", ErrUnavailable, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != wantSHA256 {
		return nil, fmt.Errorf("%w: %s has sha256 %s, the spec expects %s", ErrDigestMismatch, redactURL(u), got, wantSHA256)
	}
	return data, nil
}

func readLocal(root, p string) ([]byte, error) {
	hp, err := Resolve(root, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	f, err := os.Open(hp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer f.Close()
	return readLimited(f)
}

func fetchHTTP(ctx context.Context, client *http.Client, rawURL string) ([]byte, error) {
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	var last error
	for attempt := 1; attempt <= fetchAttempts; attempt++ {
		data, retry, err := fetchOnce(ctx, client, rawURL)
		if err == nil {
			return data, nil
		}
		last = err
		if !retry || attempt == fetchAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
		case <-time.After(fetchBackoff):
		}
	}
	return nil, last
}

// fetchOnce does one GET; retry says whether another attempt may help
// (network errors and 5xx/429 answers).
func fetchOnce(ctx context.Context, client *http.Client, rawURL string) ([]byte, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry credentials; it is named by the caller
		}
		return nil, true, fmt.Errorf("%w: GET failed: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		return nil, retry, fmt.Errorf("%w: GET answered %s", ErrUnavailable, resp.Status)
	}
	data, err := readLimited(resp.Body)
	return data, err != nil, err
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFetchBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if len(data) > MaxFetchBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrUnavailable, MaxFetchBytes)
	}
	return data, nil
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
