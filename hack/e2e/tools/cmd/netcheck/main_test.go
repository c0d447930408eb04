package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestProbe serves on loopback and probes it: a matching body passes, a
// wrong one fails after the timeout; "localhost" resolves to 127.0.0.1
// through /etc/hosts, a wrong wanted address fails.
func TestProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("netcheck " + host + "\n"))
		}))
	}()
	url := "http://" + ln.Addr().String() + "/"
	var out bytes.Buffer
	if code := probe(&out, "localhost", "127.0.0.1", url, "netcheck "+host, 5*time.Second); code != 0 {
		t.Errorf("probe of a good server: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "(ok)") {
		t.Errorf("output: %s", out.String())
	}
	out.Reset()
	if code := probe(&out, "", "", url, "netcheck another-pod", 0); code != 1 {
		t.Errorf("probe wanting another body: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := probe(&out, "localhost", "192.0.2.1", "", "", 0); code != 1 {
		t.Errorf("probe wanting another address: exit %d\n%s", code, out.String())
	}
}
