package sealkms

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/seal"
)

func TestPackUnpack(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	info := seal.WrapInfo(seal.Binding{ClusterName: "kubernetes", MachineName: "cp1"})
	got, err := Unpack(info, Pack(info, key))
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("Unpack = %x, %v", got, err)
	}
	other := seal.WrapInfo(seal.Binding{ClusterName: "kubernetes", MachineName: "cp2"})
	if _, err := Unpack(other, Pack(info, key)); !errors.Is(err, ErrBinding) {
		t.Errorf("other machine: %v", err)
	}
	if _, err := Unpack(info, Pack(info, key)[:40]); !errors.Is(err, ErrBinding) {
		t.Errorf("short: %v", err)
	}
}

func TestContext(t *testing.T) {
	ctx, err := Context(seal.WrapInfo(seal.Binding{ClusterName: "c", MachineName: "*"}))
	if err != nil || ctx[ContextCluster] != "c" || ctx[ContextMachine] != "*" || len(ctx) != 2 {
		t.Fatalf("Context = %v, %v", ctx, err)
	}
	if _, err := Context([]byte("garbage")); err == nil {
		t.Error("Context accepted garbage")
	}
	info := seal.WrapInfo(seal.Binding{ClusterName: "c", MachineName: "m"})
	for _, bad := range [][]byte{info[:len(info)-1], append(bytes.Clone(info), 0)} {
		if _, err := Context(bad); err == nil {
			t.Errorf("Context accepted %q", bad)
		}
	}
}

func TestParseIdentityLine(t *testing.T) {
	for line, want := range map[string]string{
		"MACHINEADM-VAULT-TRANSIT-IDENTITY":                         "",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:auth=approle,mount=ar":   "auth=approle mount=ar",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:auth=approle,auth=token": "error:twice",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:colour=blue":             "error:unknown option",
		"MACHINEADM-VAULT-TRANSIT-IDENTITY:auth":                    "error:key=value",
		"MACHINEADM-VAULT-TRANSIT-IDENTITYX":                        "error:want",
		"MACHINEADM-AWS-KMS-IDENTITY":                               "error:want",
	} {
		opts, err := ParseIdentityLine("vault-transit", line, "auth", "mount")
		if w, ok := strings.CutPrefix(want, "error:"); ok {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err %v, want %q", line, err, w)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		var got []string
		for _, k := range []string{"auth", "mount"} {
			if v, ok := opts[k]; ok {
				got = append(got, k+"="+v)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", line, opts, want)
		}
	}
}

// statusError is an error with the AWS SDK's HTTPStatusCode method.
type statusError int

func (e statusError) Error() string       { return "status " + strconv.Itoa(int(e)) }
func (e statusError) HTTPStatusCode() int { return int(e) }

func TestUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   bool
	}{
		{"connection refused", fmt.Errorf("kms: %w", refused), 0, true},
		{"name resolution", &net.DNSError{Err: "no such host", Name: "kms.example", IsNotFound: true}, 0, true},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), 0, true},
		{"throttled", errors.New("ThrottlingException"), 429, true},
		{"service error", errors.New("internal"), 503, true},
		{"request timeout", errors.New("timeout"), 408, true},
		{"SDK status method", fmt.Errorf("op: %w", statusError(502)), 0, true},
		{"access denied", errors.New("AccessDeniedException"), 403, false},
		{"bad ciphertext", errors.New("InvalidCiphertextException"), 400, false},
		{"SDK denied", statusError(403), 0, false},
		{"binding", ErrBinding, 0, false},
		{"canceled", context.Canceled, 0, false},
	} {
		got := Unavailable(tc.err, tc.status)
		if errors.Is(got, seal.ErrUnavailable) != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("%s: Unavailable = %v; want unavailable %v, cause kept", tc.name, got, tc.want)
		}
	}
	if Unavailable(nil, 503) != nil {
		t.Error("Unavailable(nil) is not nil")
	}
}

// TestUnavailableRealHTTPErrors classifies the errors a real HTTP client
// returns, each inside a *url.Error, which is itself a net.Error: a key
// service that refuses connections, drops one or hangs did not answer; one
// whose certificate does not verify answered, and is not retried (it was,
// as every *url.Error was).
func TestUnavailableRealHTTPErrors(t *testing.T) {
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer untrusted.Close()
	dropped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer dropped.Close()
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer hanging.Close()
	defer close(release)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	for _, tc := range []struct {
		name string
		url  string
		want bool
	}{
		{"untrusted certificate", untrusted.URL, false},
		{"connection refused", closedURL, true},
		{"connection dropped", dropped.URL, true},
		{"no answer", hanging.URL, true},
	} {
		c := &http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(tc.url)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: no error", tc.name)
		}
		if got := Unavailable(err, 0); errors.Is(got, seal.ErrUnavailable) != tc.want {
			t.Errorf("%s (%v): unavailable %v, want %v", tc.name, err, !tc.want, tc.want)
		}
	}
}
