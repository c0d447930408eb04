package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	kubeadmcmd "k8s.io/kubernetes/cmd/kubeadm/app/cmd"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/stdio"
)

// Runner runs kubeadm phases in-process through kubeadm's own command
// tree, each phase as kubeadm's single-phase command (`kubeadm init phase
// certs apiserver --config F`) where that command takes the configuration
// file and the phase's flags, and as the whole `kubeadm init` (or `kubeadm
// join`) with every other phase in --skip-phases where it does not (see
// phaseArgs).
type Runner struct {
	// Action selects "init" or "join".
	Action machineadm.Action
	// ConfigPath is the kubeadm configuration file (see Translate).
	ConfigPath string
	// DryRunDir, when set, is where kubeadm's dry run writes its files
	// (KUBEADM_INIT_DRYRUN_DIR / KUBEADM_JOIN_DRYRUN_DIR).
	DryRunDir string
	// Output receives every line kubeadm prints on standard output and
	// standard error (klog included). It must redact secrets before the
	// lines go anywhere. Nil discards them.
	Output func(line string)
	// Journal, when set, returns the kubelet's last journal lines; they are
	// read when a phase marked Journal fails, passed to Output and used to
	// classify the failure.
	Journal func(ctx context.Context) []string
	// CertificatesDir is, in a dry run, the certificates directory of the
	// kubeadm configuration (where its manifests and kubeconfig files
	// point): the certificates kubeadm writes to DryRunDir are copied there
	// after each phase, so that every path they name exists. "" copies
	// nothing.
	CertificatesDir string
	// HostCertificatesDir is where a real run keeps the certificates
	// (spec.controlPlane.pki.certificatesDir); it names them in Plan.
	// Default /etc/kubernetes/pki.
	HostCertificatesDir string

	// Plan is set by a dry run's Run: what the phase would change, for a
	// person — host files it would write (by their host paths), API
	// objects it would create, patch or delete (by kind and name), and
	// kubeadm's own "would ..." statements. Never object contents.
	Plan []string
	// Warnings is set by Run: kubeadm's preflight warnings ("Name:
	// message").
	Warnings []string
	// Session, when set, carries kubeadm's command tree and run data from
	// one phase to the next (see Session), except in a dry run (DryRunDir
	// set). Nil builds both for each phase.
	Session *Session
}

// Session carries kubeadm's command tree from one phase of a bootstrap to
// the next, so that consecutive phases share kubeadm's run data (its
// configuration, read, defaulted and validated once; its API clients; a
// join's discovery) as the phases of one plain `kubeadm init` or `kubeadm
// join` do, instead of each phase building kubeadm's whole command tree
// (about 1.5 ms and 1 MB) and reading the configuration again.
//
// A tree is reused only by phases run as kubeadm's single-phase command
// (see phaseArgs) with the same action, configuration file and flags as
// the phase that built it, and never in a dry run: kubeadm builds its run
// data once, from the command line of the tree's first phase
// (workflow.Runner.InitData), so a phase with other flags (upload-certs,
// bootstrap-token) gets a new tree, and so does every phase after a
// failure. A phase run as the whole command gets a tree of its own, which
// is never kept (its --skip-phases would stay in the tree's run options).
// The zero value is ready to use. Phases run one at a time, and so a
// Session is not safe for concurrent use.
type Session struct {
	root        *cobra.Command
	key         sessionKey
	out, errOut *switchWriter
}

// session is r.Session, except in a dry run, whose phases each get a tree
// of their own: kubeadm's dry-run API client, which its run data keeps,
// prints the requests it fakes to the os.Stdout of the phase that made it
// (WithWriter(os.Stdout) in cmd/kubeadm/app/cmd), and Runner.Run
// redirects os.Stdout anew for each phase, so a later phase's requests
// would be lost from its plan.
func (r *Runner) session() *Session {
	if r.DryRunDir != "" {
		return nil
	}
	return r.Session
}

// sessionKey is what a Session's tree was built for.
type sessionKey struct {
	verb, config, flags string
}

// command returns the command tree to run a phase of key in, writing to
// out and errOut, and the arguments args gives for it (withData: the tree
// has kubeadm's run data): the session's tree when it was built for key
// and the phase runs as a single-phase command there, otherwise a new
// tree, which the session keeps when the phase runs as a single-phase
// command in it. A nil session builds a new tree.
func (s *Session) command(key sessionKey, out, errOut io.Writer, args func(root *cobra.Command, withData bool) []string) (*cobra.Command, []string) {
	if s != nil && s.root != nil && s.key == key {
		if a := args(s.root, true); isSinglePhase(a) {
			s.out.set(out)
			s.errOut.set(errOut)
			return s.root, a
		}
	}
	ow, ew := &switchWriter{w: out}, &switchWriter{w: errOut}
	root := kubeadmcmd.NewKubeadmCommand(nil, ow, ew)
	a := args(root, false)
	if s != nil && isSinglePhase(a) {
		s.root, s.key, s.out, s.errOut = root, key, ow, ew
	}
	return root, a
}

// release points the session's writers away from the pipe of the phase
// that ended (kubeadm keeps them in its run data); after a failure it
// also drops the tree, whose run data the failed phase may have left half
// made.
func (s *Session) release(failed bool) {
	if s == nil || s.root == nil {
		return
	}
	s.out.set(io.Discard)
	s.errOut.set(io.Discard)
	if failed {
		*s = Session{}
	}
}

// isSinglePhase says whether args (from phaseArgs) run kubeadm's
// single-phase command.
func isSinglePhase(args []string) bool {
	return len(args) > 1 && args[1] == "phase"
}

// switchWriter writes to w, which a Session points at the output of the
// phase running. Phases run one at a time (stdio.Mu), so w changes only
// between them.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Run runs one phase of the table (a leaf, or a top-level phase without
// sub-phases) with the configuration file and the flags of the phase and
// its parents, by the arguments phaseArgs picks. It returns nil or an
// *errclass.Error classified by ClassifyTail from kubeadm's error and the
// phase's last output lines (a Tail). The context is checked before the phase starts; kubeadm
// itself bounds its waits with the timeouts of its configuration.
func (r *Runner) Run(ctx context.Context, p Phase) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	verb, envVar := "join", "KUBEADM_JOIN_DRYRUN_DIR"
	if r.Action == machineadm.ActionInit {
		verb, envVar = "init", "KUBEADM_INIT_DRYRUN_DIR"
	}
	table := PhaseTable(r.Action)
	args := func(root *cobra.Command, withData bool) []string {
		return phaseArgs(root, verb, r.ConfigPath, table, p.Name, withData)
	}
	key := sessionKey{verb: verb, config: r.ConfigPath, flags: strings.Join(flagsFor(table, p.Name), " ")}

	var tail Tail
	var all []string
	before := snapshot(r.DryRunDir)
	keep := joinDoneFilter()
	output := func(line string) {
		if !keep(line) {
			return
		}
		if r.DryRunDir != "" || p.Name == "preflight" {
			all = append(all, line)
		}
		tail.Add(line)
		if r.Output != nil {
			r.Output(line)
		}
	}
	err := r.execute(verb, envVar, p.Name, key, args, output)
	r.Warnings = PreflightWarnings(all)
	if err == nil {
		if r.DryRunDir != "" {
			return r.plan(before, all)
		}
		return nil
	}
	if p.Journal && r.Journal != nil {
		for _, l := range r.Journal(ctx) {
			output(l)
		}
	}
	class, hint := ClassifyTail(p, err, &tail)
	return errclass.New(class, hint, err)
}

// plan sets r.Plan after a dry-run phase: the files it wrote to the
// dry-run directory since before (certificates copied to CertificatesDir
// first), then the API requests and statements of its output.
func (r *Runner) plan(before dirSnapshot, output []string) error {
	changed := snapshot(r.DryRunDir).changed(before)
	var copied []string
	if r.CertificatesDir != "" {
		var err error
		if copied, err = syncCertificates(r.DryRunDir, r.CertificatesDir, changed); err != nil {
			return errclass.New(errclass.HostPreparationFailed, "check that the dry-run directory is writable", fmt.Errorf("copying the dry run's certificates to %s: %w", r.CertificatesDir, err))
		}
	}
	certs := r.HostCertificatesDir
	if certs == "" {
		certs = kubeadmconstants.KubernetesDir + "/pki"
	}
	r.Plan = append(filePlan(changed, copied, certs, r.CertificatesDir != ""), apiPlan(output)...)
	return nil
}

// phaseArgs returns the arguments that run the phase named name of table,
// and only it, in root (kubeadm's command tree), with the configuration
// file config and the flags of the phase and its parents (flagsFor).
// kubeadm builds its run data from the command line of the first phase
// that runs in a tree (workflow.Runner.InitData); withData says root has
// it already (a Session's tree, built for these flags).
//   - With the run data there: kubeadm's single-phase command alone,
//     `init phase wait-control-plane`, which runs the phase on that data.
//   - Without: the single-phase command with the configuration and the
//     flags, `init phase certs apiserver --config F`, where that command
//     takes them and the flags kubeadm builds complete run data from
//     (dataFlags): every init leaf of kubeadm v1.37 but wait-control-plane,
//     and join's preflight, kubelet-start and control-plane-prepare leaves
//     but control-plane.
//   - Otherwise the whole command, `init --config F --skip-phases <every
//     other phase>` (skipFor), which gives the phase kubeadm's complete
//     configuration.
//
// The single-phase command comes first because --skip-phases is more than
// a filter: when "addon", "addon/coredns" or "addon/kube-proxy" is in it,
// kubeadm init marks those addons disabled in its configuration
// (manageSkippedAddons in cmd/kubeadm/app/cmd/init.go). upload-config/
// kubeadm run that way stored `dns: {disabled: true}` and `proxy:
// {disabled: true}` in the cluster's kubeadm-config ConfigMap, which
// `kubeadm upgrade apply` reads as "skip the CoreDNS and kube-proxy
// upgrade", and the preflight run that way left both images out of its
// image pull. The phases that still run that way, when no tree has the
// run data (in a resumed run: from wait-control-plane for an init; for a
// join, every leaf from etcd-join on, as before), read neither field.
func phaseArgs(root *cobra.Command, verb, config string, table []Phase, name string, withData bool) []string {
	flags := flagsFor(table, name)
	path := append([]string{verb, "phase"}, strings.Split(name, "/")...)
	if c, rest, err := root.Find(path); err == nil && len(rest) == 0 && c.Name() == path[len(path)-1] {
		if withData {
			return path
		}
		if takesFlags(c, append(dataFlags(verb), flags...)) {
			return append(append(path, "--config", config), flags...)
		}
	}
	args := []string{verb, "--config", config, "--skip-phases", strings.Join(skipFor(table, name), ",")}
	return append(args, flags...)
}

// dataFlags are the flags a command of kubeadm verb needs to build
// complete run data from the configuration file: --config, and for join
// --discovery-file, without which kubeadm's newJoinData requires an
// existing /etc/kubernetes/admin.conf (kubeadm v1.37
// cmd/kubeadm/app/cmd/join.go), which a worker never has and a
// control-plane join has only after control-plane-prepare/kubeconfig.
func dataFlags(verb string) []string {
	if verb == "join" {
		return []string{"--config", "--discovery-file"}
	}
	return []string{"--config"}
}

// takesFlags says whether command c has every flag of flags ("--name" or
// "--name=value").
func takesFlags(c *cobra.Command, flags []string) bool {
	for _, f := range flags {
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if c.Flags().Lookup(name) == nil {
			return false
		}
	}
	return true
}

// execute runs kubeadm's command tree (r.Session's for key, or a new one)
// with the arguments args returns for it, its output to output.
func (r *Runner) execute(verb, envVar, phase string, key sessionKey, args func(root *cobra.Command, withData bool) []string, output func(string)) error {
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	if r.DryRunDir != "" {
		old, had := os.LookupEnv(envVar)
		os.Setenv(envVar, r.DryRunDir)
		defer func() {
			if had {
				os.Setenv(envVar, old)
			} else {
				os.Unsetenv(envVar)
			}
		}()
	}
	// The note on an absorbed panic is written once Capture has passed on
	// every line (its reader goroutine calls output until then).
	joinDone := false
	defer func() {
		if joinDone && output != nil {
			output("[machineadm] phase done; kubeadm's closing join message skipped (it needs the cluster configuration of another phase)")
		}
	}()
	return stdio.Capture(output, func(out, errOut io.Writer) (err error) {
		defer recoverJoinDoneMessage(&joinDone, &err)
		sess := r.session()
		c, a := sess.command(key, out, errOut, args)
		failed := true
		defer func() { sess.release(failed) }()
		c.SetArgs(a)
		if err := c.Execute(); err != nil {
			return fmt.Errorf("kubeadm %s phase %s: %w", verb, phase, err)
		}
		failed = false
		return nil
	})
}

// joinRunE is the function of kubeadm's `join` command that runs the
// phases and then prints the "joined" message.
const joinRunE = "k8s.io/kubernetes/cmd/kubeadm/app/cmd.newCmdJoin.func1"

// recoverJoinDoneMessage absorbs one known kubeadm v1.37 panic: after the
// join phases ran successfully, `kubeadm join` prints its "control-plane
// joined" message from the cluster configuration that only some phases
// load (data.initCfg). When a control-plane join runs a phase that does
// not load it as the whole command with the others skipped (the first
// phase of a resumed run whose single-phase command cannot build kubeadm's
// run data, such as kubelet-wait-bootstrap or wait-control-plane; see
// phaseArgs), that message dereferences nil. The panic's own frame being the
// join command's function (not a phase) proves the phases had returned
// without error, so the phase succeeded (absorbed is set: the caller
// says so once the output is passed on); any other panic is re-raised.
func recoverJoinDoneMessage(absorbed *bool, errp *error) {
	v := recover()
	if v == nil {
		return
	}
	if _, isRuntime := v.(runtime.Error); isRuntime && panicFrame() == joinRunE {
		*absorbed = true
		*errp = nil
		return
	}
	panic(v)
}

// panicFrame returns the function in which the current panic happened:
// the first frame below runtime's panic machinery, from inside a deferred
// recover.
func panicFrame() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(0, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	sawPanic := false
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "runtime.") {
			sawPanic = sawPanic || f.Function == "runtime.gopanic" || f.Function == "runtime.sigpanic" || f.Function == "runtime.panicmem"
		} else if sawPanic {
			return f.Function
		}
		if !more {
			return ""
		}
	}
}
