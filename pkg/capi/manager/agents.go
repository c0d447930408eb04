package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	capicontroller "github.com/machineadm/machineadm/pkg/capi/controller"
)

// agentFlags are the agent server's flags (R10: the agent downloadable
// from the management cluster).
type agentFlags struct {
	addr, url, dir, certFile, keyFile, caFile *string
}

func bindAgentFlags(fs *flag.FlagSet) *agentFlags {
	return &agentFlags{
		addr:     fs.String("agent-bind-address", "", "address the agent server (HTTPS) binds to, e.g. \":9446\"; it serves the agent builds of --agent-dir, and configs without spec.agent.url download theirs from it. Default \"\": off"),
		url:      fs.String("agent-url", "", "base URL at which machines reach --agent-bind-address: https://HOST[:PORT] (a Service or load balancer); required with it"),
		dir:      fs.String("agent-dir", capicontroller.DefaultAgentDir, "directory of the agent builds as a release makes them (machineadm-linux-amd64, machineadm-linux-arm64, machineadm-windows-amd64.exe, SHA256SUMS, BINARY.sig, machineadm-release.pub); the controller image carries them there"),
		certFile: fs.String("agent-tls-cert-file", "", "PEM serving certificate (chain) of the agent server, e.g. tls.crt of a cert-manager Secret; reloaded when it changes. Required with --agent-bind-address"),
		keyFile:  fs.String("agent-tls-key-file", "", "PEM private key of --agent-tls-cert-file"),
		caFile:   fs.String("agent-ca-file", "", "PEM CA bundle machines verify the agent server with (pinned in their bootstrap data). Default: --agent-tls-cert-file"),
	}
}

// load checks the flags and loads the builds; nil, nil when the server is
// off. Every error is a bad flag (exit 2).
func (f *agentFlags) load() (*capicontroller.AgentStore, error) {
	if *f.addr == "" && *f.url == "" {
		return nil, nil
	}
	if *f.addr == "" || *f.url == "" {
		return nil, errors.New("--agent-bind-address and --agent-url: set both or neither")
	}
	if *f.certFile == "" || *f.keyFile == "" {
		return nil, errors.New("--agent-tls-cert-file and --agent-tls-key-file: required with --agent-bind-address (the agent server speaks HTTPS only)")
	}
	if _, err := tls.LoadX509KeyPair(*f.certFile, *f.keyFile); err != nil {
		return nil, fmt.Errorf("--agent-tls-cert-file, --agent-tls-key-file: %w", err)
	}
	caFile := *f.caFile
	if caFile == "" {
		caFile = *f.certFile
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--agent-ca-file: %w", err)
	}
	s, err := capicontroller.LoadAgentStore(*f.dir, *f.url, ca)
	if err != nil {
		return nil, fmt.Errorf("--agent-dir, --agent-url: %w", err)
	}
	s.Log = ctrl.Log.WithName("agent-server")
	return s, nil
}

// agentServer serves an AgentStore over TLS on every replica (no leader
// election) until the manager stops; its certificate is reloaded by a
// certwatcher when the files change.
type agentServer struct {
	addr    string
	handler http.Handler
	certs   *certwatcher.CertWatcher
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (*agentServer) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (s *agentServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("agent server: %w", err)
	}
	go func() { _ = s.certs.Start(ctx) }()
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate},
		ReadHeaderTimeout: 10 * time.Second,
		// A build is tens of MB over a slow link: no write timeout;
		// idle connections are closed.
		IdleTimeout: 60 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	ctrl.Log.WithName("agent-server").Info("serving", "address", ln.Addr().String())
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-errc:
		return fmt.Errorf("agent server: %w", err)
	}
}
