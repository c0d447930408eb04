package manager

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReceiverMuxRoutes: the receiver's listener serves reports under
// /reports/ and payloads under /payloads/ (each handler's refusals that
// come before any API read prove which one answered), nothing else.
func TestReceiverMuxRoutes(t *testing.T) {
	h := receiverMux(nil)
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodGet, "/reports/ns/cfg/capability", http.StatusMethodNotAllowed, http.MethodPost},
		{http.MethodPost, "/payloads/ns/cfg/0123", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/payloads/ns/cfg/short", http.StatusNotFound, ""},
		{http.MethodGet, "/metrics", http.StatusNotFound, ""},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.code || w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", c.method, c.path, w.Code, w.Header().Get("Allow"), c.code, c.allow)
		}
	}
}

// TestReceiverMuxLimitsRequests: the receiver's listener is open to
// anyone who reaches it and each request may be an API read through the
// controller's client, whose rate limit the reconciles share: a flood past
// the burst is answered 429 with Retry-After (it was served, every
// request, at the reconciles' expense), the burst itself is not.
func TestReceiverMuxLimitsRequests(t *testing.T) {
	h := receiverMux(nil)
	limited := 0
	for i := range 4 * receiverBurst {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/payloads/ns/cfg/short", nil))
		switch {
		case w.Code == http.StatusTooManyRequests:
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			if i < receiverBurst {
				t.Fatalf("request %d of the first burst of %d refused", i, receiverBurst)
			}
			limited++
		case w.Code != http.StatusNotFound:
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	if limited == 0 {
		t.Fatalf("%d requests at once, none refused", 4*receiverBurst)
	}
}
