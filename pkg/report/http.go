package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// HTTPWriter posts the JSON report to URL (spec.report.url) with bounded
// retries: a network error, 408, 429 or a 5xx answer is retried, any
// other non-2xx answer is final. Content-Type is application/json.
type HTTPWriter struct {
	// URL is an http or https URL. Required.
	URL string
	// Client sends the requests. Default: a client with Go's default
	// transport (system roots, proxy from the environment).
	Client *http.Client
	// Retry bounds the attempts. Zero fields take RetryPolicy's defaults
	// (3 attempts, 30s in all, 10s per attempt).
	Retry RetryPolicy
	// UserAgent is sent as User-Agent. Default "machineadm".
	UserAgent string
}

// Name is "http".
func (w *HTTPWriter) Name() string { return "http" }

// Write posts r.
func (w *HTTPWriter) Write(ctx context.Context, r *BootstrapReport) error {
	data, err := r.Marshal()
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	client := w.Client
	if client == nil {
		client = &http.Client{}
	}
	ua := w.UserAgent
	if ua == "" {
		ua = "machineadm"
	}
	return w.Retry.Do(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(data))
		if err != nil {
			return &Permanent{Err: err}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", ua)
		resp, err := client.Do(req)
		if err != nil {
			// net/http names the URL with its query, which may hold a
			// credential: name it without.
			var uerr *url.Error
			if errors.As(err, &uerr) {
				return fmt.Errorf("POST %s: %w", safeURL(w.URL), uerr.Err)
			}
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return nil
		case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
			return fmt.Errorf("POST %s: %s: %s", safeURL(w.URL), resp.Status, bytes.TrimSpace(body))
		}
		return &Permanent{Err: fmt.Errorf("POST %s: %s: %s", safeURL(w.URL), resp.Status, bytes.TrimSpace(body))}
	})
}

// safeURL is raw without user information, query and fragment, for
// messages: those parts may carry credentials.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
