package kubeadm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	kubeadmcmd "k8s.io/kubernetes/cmd/kubeadm/app/cmd"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Phase is one kubeadm phase that machineadm runs as a step of its own.
type Phase struct {
	// Name is the machineadm phase name; it is kubeadm's top-level phase
	// name, for example "certs" or "kubelet-start".
	Name string
	// Short describes the phase in one line.
	Short string
	// Flags are extra flags of `kubeadm init` / `kubeadm join` this phase
	// needs, for example "--upload-certs".
	Flags []string
}

// kubeadm's top-level phase names, in kubeadm's order (cmd/init.go and
// cmd/join.go of kubeadm v1.37).
var (
	initPhaseNames = []string{"preflight", "certs", "kubeconfig", "etcd", "control-plane", "kubelet-start",
		"wait-control-plane", "upload-config", "upload-certs", "mark-control-plane", "bootstrap-token",
		"kubelet-finalize", "addon", "show-join-command"}
	joinPhaseNames = []string{"preflight", "control-plane-prepare", "check-etcd", "kubelet-start", "etcd-join",
		"kubelet-wait-bootstrap", "control-plane-join", "wait-control-plane"}
)

// InitPhases returns kubeadm's init phases, in kubeadm's order, for a
// control-plane Init spec. upload-certs is included only when a
// certificate key is set, etcd only for a local etcd. The
// show-join-command phase is left out: it prints secrets.
func InitPhases(cfg *machineadm.MachineBootstrapConfig) []Phase {
	cp := cfg.Spec.ControlPlane
	ps := []Phase{
		{Name: "preflight", Short: "Run kubeadm's pre-flight checks"},
		{Name: "certs", Short: "Create the certificates (signed by the given CAs)"},
		{Name: "kubeconfig", Short: "Create the kubeconfig files"},
	}
	if cp.Etcd.Local != nil {
		ps = append(ps, Phase{Name: "etcd", Short: "Create the local etcd static pod manifest"})
	}
	ps = append(ps,
		Phase{Name: "control-plane", Short: "Create the control-plane static pod manifests"},
		Phase{Name: "kubelet-start", Short: "Write the kubelet settings and (re)start the kubelet"},
		Phase{Name: "wait-control-plane", Short: "Wait for the control plane to become healthy"},
		Phase{Name: "upload-config", Short: "Upload the kubeadm and kubelet configuration to ConfigMaps"},
	)
	if cp.CertificateKey != nil {
		ps = append(ps, Phase{Name: "upload-certs", Short: "Upload the shared certificates, encrypted with the certificate key", Flags: []string{"--upload-certs", "--skip-certificate-key-print"}})
	}
	return append(ps,
		Phase{Name: "mark-control-plane", Short: "Label and taint the node as control plane"},
		Phase{Name: "bootstrap-token", Short: "Create bootstrap tokens and their RBAC rules", Flags: []string{"--skip-token-print"}},
		Phase{Name: "kubelet-finalize", Short: "Point the kubelet at its rotated client certificate"},
		Phase{Name: "addon", Short: "Install the CoreDNS and kube-proxy addons"},
	)
}

// JoinPhases returns kubeadm's join phases, in kubeadm's order, for a
// Join spec; the control-plane phases only for role ControlPlane. kubeadm's
// hidden check-etcd phase is not run separately.
func JoinPhases(cfg *machineadm.MachineBootstrapConfig) []Phase {
	cp := cfg.Spec.Role == machineadm.RoleControlPlane
	ps := []Phase{{Name: "preflight", Short: "Run kubeadm's pre-flight checks and discover the cluster"}}
	if cp {
		ps = append(ps, Phase{Name: "control-plane-prepare", Short: "Download the shared certificates and prepare the control-plane manifests"})
	}
	ps = append(ps, Phase{Name: "kubelet-start", Short: "Write the kubelet settings, TLS-bootstrap and start the kubelet"})
	if cp && cfg.Spec.ControlPlane.Etcd.Local != nil {
		ps = append(ps, Phase{Name: "etcd-join", Short: "Add a local etcd member"})
	}
	ps = append(ps, Phase{Name: "kubelet-wait-bootstrap", Short: "Wait for the kubelet to finish its TLS bootstrap"})
	if cp {
		ps = append(ps,
			Phase{Name: "control-plane-join", Short: "Mark the node as control plane"},
			Phase{Name: "wait-control-plane", Short: "Wait for the control plane to become healthy"},
		)
	}
	return ps
}

// Runner runs kubeadm phases in-process through kubeadm's own command
// tree. Each phase runs as a whole `kubeadm init` (or `kubeadm join`) with
// every other phase in --skip-phases: unlike `kubeadm init phase NAME`,
// this gives every phase kubeadm's complete configuration and flags
// (some phase subcommands, such as wait-control-plane, take no --config).
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
}

// outputMu serialises phases: kubeadm writes to the process's standard
// streams, which Run redirects while a phase runs.
var outputMu sync.Mutex

// Run runs one kubeadm phase and returns kubeadm's error, if any. The
// context is checked before the phase starts; kubeadm itself bounds its
// waits with the timeouts of its configuration.
func (r *Runner) Run(ctx context.Context, p Phase) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	verb, envVar, all := "join", "KUBEADM_JOIN_DRYRUN_DIR", joinPhaseNames
	if r.Action == machineadm.ActionInit {
		verb, envVar, all = "init", "KUBEADM_INIT_DRYRUN_DIR", initPhaseNames
	}
	var skip []string
	for _, n := range all {
		if n != p.Name {
			skip = append(skip, n)
		}
	}
	args := []string{verb, "--config", r.ConfigPath, "--skip-phases", strings.Join(skip, ",")}
	args = append(args, p.Flags...)

	outputMu.Lock()
	defer outputMu.Unlock()
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
	return captureStdio(r.Output, func(out, errOut io.Writer) (err error) {
		defer recoverJoinDoneMessage(r.Output, &err)
		c := kubeadmcmd.NewKubeadmCommand(nil, out, errOut)
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			return fmt.Errorf("kubeadm %s phase %s: %w", verb, p.Name, err)
		}
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
// not load it (kubelet-wait-bootstrap, wait-control-plane) with the others
// skipped, that message dereferences nil. The panic's own frame being the
// join command's function (not a phase) proves the phases had returned
// without error, so the phase succeeded; any other panic is re-raised.
func recoverJoinDoneMessage(output func(string), errp *error) {
	v := recover()
	if v == nil {
		return
	}
	if _, isRuntime := v.(runtime.Error); isRuntime && panicFrame() == joinRunE {
		if output != nil {
			output("[machineadm] phase done; kubeadm's closing join message skipped (it needs the cluster configuration of another phase)")
		}
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

// captureStdio runs fn with os.Stdout and os.Stderr redirected into a pipe
// whose lines go to sink; kubeadm prints with fmt.Printf and klog as well
// as to the writers it is given.
func captureStdio(sink func(string), fn func(out, errOut io.Writer) error) error {
	if sink == nil {
		sink = func(string) {}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			sink(sc.Text())
		}
		// Drain anything after an over-long line so kubeadm never blocks.
		_, _ = io.Copy(io.Discard, pr)
	}()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = pw, pw
	defer func() {
		os.Stdout, os.Stderr = oldOut, oldErr
		pw.Close()
		<-done
		pr.Close()
	}()
	return fn(pw, pw)
}
