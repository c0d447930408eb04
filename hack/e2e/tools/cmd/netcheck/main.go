// Command netcheck is the e2e cluster's network probe, run as a pod from
// an image built by hack/e2e/images.sh (the e2e machines pull nothing).
//
// Usage:
//
//	netcheck serve [-addr :8080]
//	netcheck probe [-resolve NAME -want-ip IP] [-get URL -want-body TEXT] [-timeout 90s]
//
// serve answers every HTTP request with "netcheck HOSTNAME\n" (a pod's
// host name is its pod name), so a client learns which pod answered.
// It exits on SIGTERM.
//
// probe looks NAME up with the Go resolver (the pod's /etc/resolv.conf,
// so the cluster DNS) until it returns IP, and GETs URL until the body
// contains TEXT, each retried once a second until -timeout has passed. It
// prints one "resolve" and one "get" line with what it got and exits 0 when
// both checks passed, 1 otherwise, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		addr := fs.String("addr", ":8080", "listen address")
		_ = fs.Parse(os.Args[2:])
		if err := serve(*addr); err != nil {
			fmt.Fprintln(os.Stderr, "netcheck serve:", err)
			os.Exit(1)
		}
	case "probe":
		fs := flag.NewFlagSet("probe", flag.ExitOnError)
		name := fs.String("resolve", "", "DNS name to look up")
		wantIP := fs.String("want-ip", "", "address the lookup must return")
		url := fs.String("get", "", "http URL to GET")
		wantBody := fs.String("want-body", "", "text the response body must contain")
		timeout := fs.Duration("timeout", 90*time.Second, "how long each check is retried")
		_ = fs.Parse(os.Args[2:])
		if (*name == "") != (*wantIP == "") || (*url == "") != (*wantBody == "") || (*name == "" && *url == "") {
			usage()
		}
		os.Exit(probe(os.Stdout, *name, *wantIP, *url, *wantBody, *timeout))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: netcheck serve [-addr :8080] | netcheck probe [-resolve NAME -want-ip IP] [-get URL -want-body TEXT] [-timeout D]")
	os.Exit(2)
}

func serve(addr string) error {
	host, _ := os.Hostname()
	srv := &http.Server{
		Addr:              addr,
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "netcheck %s\n", host)
		}),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// probe runs the checks asked for and returns the exit code.
func probe(out io.Writer, name, wantIP, url, wantBody string, timeout time.Duration) int {
	code := 0
	if name != "" {
		got, err := retry(timeout, func(ctx context.Context) (string, error) {
			r := &net.Resolver{PreferGo: true}
			addrs, err := r.LookupHost(ctx, name)
			if err != nil {
				return "", err
			}
			if !slices.Contains(addrs, wantIP) {
				return strings.Join(addrs, ","), fmt.Errorf("got %v, want %s", addrs, wantIP)
			}
			return strings.Join(addrs, ","), nil
		})
		fmt.Fprintf(out, "resolve %s -> %s (%v)\n", name, got, errText(err))
		if err != nil {
			code = 1
		}
	}
	if url != "" {
		client := &http.Client{Timeout: 5 * time.Second}
		got, err := retry(timeout, func(ctx context.Context) (string, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return "", err
			}
			resp, err := client.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
			body := strings.TrimSpace(string(b))
			if err != nil {
				return body, err
			}
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, wantBody) {
				return body, fmt.Errorf("status %d body %q, want %q", resp.StatusCode, body, wantBody)
			}
			return body, nil
		})
		fmt.Fprintf(out, "get %s -> %q (%v)\n", url, got, errText(err))
		if err != nil {
			code = 1
		}
	}
	return code
}

// retry calls f once a second until it succeeds or timeout has passed and
// returns its last result.
func retry(timeout time.Duration, f func(context.Context) (string, error)) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := f(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(time.Second)
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
