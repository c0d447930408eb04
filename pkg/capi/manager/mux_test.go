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
