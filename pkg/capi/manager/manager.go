// Package manager builds and runs machineadm-controller's
// controller-runtime manager from command-line flags.
package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	capicontroller "github.com/machineadm/machineadm/pkg/capi/controller"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
	cpcontroller "github.com/machineadm/machineadm/pkg/capi/controlplane/controller"
	"github.com/machineadm/machineadm/pkg/version"
)

// Scheme returns a scheme with the core (v1) and coordination.k8s.io
// types, Cluster API core, bootstrap.machineadm.io and
// controlplane.machineadm.io: the kinds the controllers read and write
// through the manager's client. Not every built-in group: each registered
// type costs memory in the scheme and the REST mapper for nothing.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme, cpv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ClientOptions reads Secrets and ConfigMaps live: caching every Secret of
// the management cluster would cost memory and keep keys in an informer,
// and the init lock must be read fresh. The cache holds the metadata of
// Cluster API's Secrets only (capicontroller.SecretCacheOptions).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}}
}

// reportFlags checks the report receiver's flags and returns the address
// to serve it on, "" for off. Both are set, or neither; an explicitly
// empty --report-url (urlGiven, url "") turns it off whatever addr says,
// so that a manifest can always pass --report-url=$(VAR) and leave VAR
// empty. The URL must be http(s)://HOST[:PORT][/PATH] without user
// information or query.
func reportFlags(addr, u string, urlGiven bool) (string, error) {
	if urlGiven && u == "" {
		return "", nil
	}
	if (addr == "") != (u == "") {
		return "", errors.New("--report-bind-address and --report-url: set both or neither")
	}
	if u != "" {
		// The controller appends /reports/NAMESPACE/CONFIG/CAPABILITY:
		// after a "?" or "#" that would be a query or fragment, which a
		// machine does not post to (every report lost), and a port out of
		// range would make every config's machine spec invalid.
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil || strings.ContainsAny(u, "?#") || !validPort(p.Port()) {
			return "", errors.New("--report-url: must be http(s)://HOST[:PORT][/PATH] without user information, query or fragment, PORT 1-65535")
		}
	}
	return addr, nil
}

func validPort(s string) bool {
	if s == "" {
		return true
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535
}

// maxLogVerbosity is the highest --zap-log-level verbosity accepted (7):
// client-go logs HTTP bodies, Secrets included, from 8 on.
const maxLogVerbosity = 7

// DefaultGCPercent is the garbage collector's target (runtime/debug
// SetGCPercent) machineadm-controller runs with unless the environment
// sets GOGC: 30, where Go's default of 100 lets the heap grow to twice
// what is live between collections. The controller's live heap is small
// (about 17 MiB with 1,000 configs) and each render's allocations are
// garbage a moment later, so the peak resident memory follows the
// collector's target. In `make bench-capi` 30 took the peak anonymous
// memory from 32 to 29 MiB against 50 (and 50 had taken it 10% below
// 100), for about 1 s more CPU over 1,000 configs (7 s in all, after the
// compressors were reused); the controller waits on the API servers far
// more than it computes. GOGC=100 in the Deployment's environment
// restores Go's default.
const DefaultGCPercent = 30

// memProfileRate returns the runtime.MemProfileRate the controller runs
// with, given --profiler-address, the GODEBUG environment variable and
// the current rate: 0 (no memory profiling) unless the profiler serves the
// profiles or GODEBUG sets memprofilerate, else current (Go's default,
// one sample per 512 KiB allocated).
//
// Every sampled allocation walks its goroutine's stack and keeps a bucket
// per distinct stack: over 1,000 renders in `make bench-capi` that was
// about 1.5 MiB of buckets and several MiB of the binary's function
// tables paged in by the walks, for a profile nobody can fetch without
// the profiler.
func memProfileRate(profilerAddr, godebug string, current int) int {
	if profilerAddr != "" {
		return current
	}
	for _, kv := range strings.Split(godebug, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "memprofilerate=") {
			return current
		}
	}
	return 0
}

// Main parses args, runs the manager until SIGTERM and returns the exit
// code: 0 after a clean stop, 1 on a runtime failure, 2 on bad flags.
// The garbage collector runs at DefaultGCPercent unless GOGC is set, and
// allocations are sampled for the heap profile only with
// --profiler-address (memProfileRate).
func Main(args []string, stderr io.Writer) int {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
	fs := flag.NewFlagSet("machineadm-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricsAddr := fs.String("metrics-bind-address", ":8080", "address the metrics endpoint binds to; \"0\" disables it")
	probeAddr := fs.String("health-probe-bind-address", ":9440", "address the health probes bind to")
	profilerAddr := fs.String("profiler-address", "", "address the Go profiler (net/http/pprof under /debug/pprof/) binds to, e.g. \"127.0.0.1:6060\"; it serves without authentication, so bind it to loopback. Default \"\": off, and allocations are not sampled for the heap profile (GODEBUG=memprofilerate=N samples them anyway)")
	leaderElect := fs.Bool("leader-elect", true, "use leader election, so only one replica reconciles")
	concurrency := fs.Int("concurrency", 10, "MachineadmConfigs, and MachineadmControlPlanes, reconciled at once (each kind)")
	tokenTTL := fs.Duration("bootstrap-token-ttl", capicontroller.DefaultTokenTTL, "lifetime of join tokens; refreshed while the Machine has no Node")
	reportAddr := fs.String("report-bind-address", "", "address the report receiver (plain HTTP) binds to, e.g. \":9445\"; machines without a Node post their outcome there, and fetch the sealed spec of data over a config's spec.userDataLimit. Default \"\": off")
	reportURLFlag := fs.String("report-url", "", "base URL at which machines reach --report-bind-address (http(s)://HOST[:PORT][/PATH] without user information, query or fragment, through a Service or load balancer); required with it. An explicitly empty value (--report-url=) turns the receiver off whatever --report-bind-address says: the generated Deployment passes --report-url=$(MACHINEADM_REPORT_URL)")
	controlPlane := fs.Bool("control-plane", true, "also run the control-plane provider (MachineadmControlPlane); its CRDs must be installed, as bootstrap-components.yaml does. --control-plane=false runs the bootstrap provider alone")
	agentFl := bindAgentFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	err := fs.Parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stderr, "machineadm-controller", version.Version)
		return 0
	}
	// client-go logs request and response bodies from verbosity 8 on:
	// those of the Secrets this controller reads and writes hold CA keys
	// and tokens.
	if zapOpts.Level != nil && zapOpts.Level.Enabled(zapcore.Level(-maxLogVerbosity-1)) {
		fmt.Fprintf(stderr, "--zap-log-level: at most %d: from %d on client-go logs request and response bodies, and the Secrets this controller handles carry CA keys and bootstrap tokens\n", maxLogVerbosity, maxLogVerbosity+1)
		return 2
	}
	if *tokenTTL < time.Minute {
		fmt.Fprintln(stderr, "--bootstrap-token-ttl: must be at least 1m")
		return 2
	}
	urlGiven := false
	fs.Visit(func(f *flag.Flag) { urlGiven = urlGiven || f.Name == "report-url" })
	if *reportAddr, err = reportFlags(*reportAddr, *reportURLFlag, urlGiven); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	agents, err := agentFl.load()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	goruntime.MemProfileRate = memProfileRate(*profilerAddr, os.Getenv("GODEBUG"), goruntime.MemProfileRate)
	log := ctrl.Log.WithName("setup")
	scheme, err := Scheme()
	if err != nil {
		log.Error(err, "building the scheme")
		return 1
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "no kubeconfig")
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *probeAddr,
		PprofBindAddress:       *profilerAddr,
		LeaderElection:         *leaderElect,
		LeaderElectionID:       "machineadm-controller.bootstrap.machineadm.io",
		Client:                 ClientOptions(),
		Cache:                  capicontroller.SecretCacheOptions(),
	})
	if err != nil {
		log.Error(err, "creating the manager")
		return 1
	}
	r := &capicontroller.Reconciler{Client: mgr.GetClient(), Sealer: capicontroller.SpecSealer{}, TokenTTL: *tokenTTL, ReportURL: *reportURLFlag, PayloadURL: *reportURLFlag, Agents: agents, SecretMeta: mgr.GetCache()}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: *concurrency}); err != nil {
		log.Error(err, "setting up the controller")
		return 1
	}
	if *controlPlane {
		cp := &cpcontroller.Reconciler{Client: mgr.GetClient()}
		if err := cp.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: *concurrency}); err != nil {
			log.Error(err, "setting up the control-plane controller")
			return 1
		}
	}
	if *reportAddr != "" {
		srv := &reportReceiver{addr: *reportAddr, handler: receiverMux(mgr.GetClient())}
		if err := mgr.Add(srv); err != nil {
			log.Error(err, "adding the report receiver")
			return 1
		}
	}
	if agents != nil {
		certs, err := certwatcher.New(*agentFl.certFile, *agentFl.keyFile)
		if err != nil {
			log.Error(err, "reading the agent server's certificate")
			return 1
		}
		if err := mgr.Add(&agentServer{addr: *agentFl.addr, handler: agents, certs: certs}); err != nil {
			log.Error(err, "adding the agent server")
			return 1
		}
		log.Info("agent server", "address", *agentFl.addr, "url", agents.BaseURL, "platforms", agents.Platforms())
	}
	_ = mgr.AddHealthzCheck("healthz", healthz.Ping)
	_ = mgr.AddReadyzCheck("readyz", healthz.Ping)
	receiver := "off"
	if *reportAddr != "" {
		receiver = *reportAddr
	}
	log.Info("starting", "version", version.Version, "sealer", "sealspec", "reportReceiver", receiver, "controlPlane", *controlPlane)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return 1
	}
	return 0
}

// receiverMux is the report receiver's handler: machines' reports under
// /reports/ (capicontroller.ReportServer) and the payloads of data over a
// config's spec.userDataLimit under /payloads/
// (capicontroller.PayloadServer).
//
// The listener takes requests from anyone who reaches it, and each one
// that names a Secret is a read from the API server through the
// controller's own client, whose client-side rate limit the reconciles
// share: requests over receiverRate a second (bursts of receiverBurst) are
// answered 429 with Retry-After instead, so that a flood slows the
// receiver and not the controller. Machines retry.
func receiverMux(c client.Client) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/reports/", &capicontroller.ReportServer{Client: c, Log: ctrl.Log.WithName("report-receiver")})
	mux.Handle("/payloads/", &capicontroller.PayloadServer{Client: c, Log: ctrl.Log.WithName("payload-server")})
	limit := rate.NewLimiter(receiverRate, receiverBurst)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !limit.Allow() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// receiverRate and receiverBurst bound the report receiver's requests:
// 10 a second, bursts of 50 (a fleet of hundreds of machines booting at
// once is served within a minute), half the controller client's default
// 20 queries a second.
const (
	receiverRate  = rate.Limit(10)
	receiverBurst = 50
)

// reportReceiver serves the report receiver on every replica (no leader
// election: any replica records a report) until the manager stops.
type reportReceiver struct {
	addr    string
	handler http.Handler
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (*reportReceiver) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (s *reportReceiver) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("report receiver: %w", err)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	ctrl.Log.WithName("report-receiver").Info("serving", "address", ln.Addr().String())
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-errc:
		return fmt.Errorf("report receiver: %w", err)
	}
}
