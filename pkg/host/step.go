// Package host prepares a Linux host for Kubernetes from the machine spec:
// it turns spec.host into the ordered host-preparation steps ("files",
// "kernel-modules", "sysctl", "containerd", "static-pods") that
// `machineadm prepare` runs and `machineadm bootstrap` runs as its first
// phases. Each concern lives in its own package (files, kmod, sysctl,
// containerd, staticpod, service) with a pure part that computes the
// desired state; this package glues them to an Env that says where the
// host is (a root prefix), whether to change it (dry run) and how to reach
// its kernel and service manager.
//
// Every step has two halves. Check reads the host and fetches inputs
// without changing anything: remote files are downloaded and their
// SHA-256 verified, owners resolved, sysctl keys looked up in /proc/sys,
// the containerd version detected and its files rendered. Apply then
// compares with the host and changes only what differs. Runners call
// Check for every step they will run (see Check) before the first Apply,
// so that a bad input anywhere writes nothing at all.
package host

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/kmod"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/host/sysctl"
)

// Step is one named host-preparation step; its Name is the phase name
// shown in reports and used by --skip-phases.
type Step struct {
	// Name is "files", "kernel-modules", "sysctl", "containerd" or
	// "static-pods".
	Name string
	// Short is a one-line description.
	Short string
	// Apply makes the host match the spec for this step, or with
	// env.DryRun prints what it would do to env.Out and changes nothing.
	// It runs Check first when Check has not run for env. Errors carry a
	// report class (errclass.New).
	Apply func(ctx context.Context, env *Env) (Result, error)
	// Check validates this step's inputs against the host and fetches
	// remote content, changing nothing; its result is kept for Apply with
	// the same env. Errors carry a report class and name the spec field.
	Check func(ctx context.Context, env *Env) error
	// Class is the error class of the step's failures whose error carries
	// none: ContainerRuntimeUnavailable for containerd,
	// HostPreparationFailed for the others.
	Class errclass.Class
	// AfterKubeadm says that the step belongs after kubeadm's control-plane
	// phases in `machineadm bootstrap`: kubeadm's preflight check
	// DirAvailable--etc-kubernetes-manifests refuses a non-empty static pod
	// directory. Only "static-pods" sets it.
	AfterKubeadm bool
	// release frees what Check kept for env (this package's steps),
	// when it will not be applied: Check (the function) calls it for
	// every step when a step's check failed.
	release func(env *Env)
}

// Result is what one step did (or, in a dry run, would do).
type Result struct {
	// Changed says whether the step changed (would change) the host.
	Changed bool
	// Changes are human-readable lines, for example "wrote
	// /etc/sysctl.d/90-machineadm.conf (0644, 0:0, 42 bytes)"; never
	// secret contents.
	Changes []string
	// Notes are facts the step checked after its changes, one line each,
	// for the report: the sysctl step lists every key's desired and
	// effective value ("sysctl net.ipv4.ip_forward: desired 1, effective
	// 1"). Never secret contents.
	Notes []string
	// Sysctl is, for the sysctl step on a running host (not in a dry run
	// nor offline), each key of spec.host.sysctl with its desired value,
	// the value read back from /proc/sys after all writes and the
	// sysctl.d setting that wins at the next boot when it is another;
	// sorted by key. The outcome report records it.
	Sysctl []sysctl.Value
	// Warnings are what the step found wrong but did not fail on, one line
	// each (a later sysctl.d file sets another value at the next boot).
	// The outcome report records them on the step's phase.
	Warnings []string
}

// ServiceManager restarts and reloads systemd units; see service.Manager.
type ServiceManager = service.Manager

// Env is where and how steps run.
type Env struct {
	// Root is the root prefix, "/" on a real host; every host path is
	// joined under it (symbolic links are followed inside it).
	Root string
	// DryRun computes and prints the plan (with per-file diffs) to Out and
	// changes nothing.
	DryRun bool
	// Log receives each step's start, result and duration. Default: discard.
	Log *slog.Logger
	// Out is where dry-run plans go. Default: discard.
	Out io.Writer
	// Services restarts containerd (systemd via
	// github.com/coreos/go-systemd/v22 dbus; service.Recorder in tests).
	// Required unless Offline or nothing needs a restart.
	Services ServiceManager
	// Proc is the sysctl tree where live values are read and written.
	// Default: "/proc/sys" joined under Root.
	Proc string
	// Sys is the sysfs mount, used to see which kernel modules are loaded.
	// Default: "/sys" joined under Root.
	Sys string
	// Offline says that Root is not the running system (an image being
	// built): only files are written; no kernel module is loaded, no live
	// sysctl value set or checked and no service restarted. `machineadm
	// prepare` sets it when --root is not "/".
	Offline bool
	// Modules loads kernel modules. Default: kmod.Modprobe{}.
	Modules kmod.Loader
	// ContainerdVersion returns the output of `containerd --version` of the
	// containerd installed under root, or an error wrapping
	// containerd.ErrNotInstalled. It is used when
	// spec.host.containerd.configVersion is 0. Default:
	// containerd.DetectVersion.
	ContainerdVersion func(ctx context.Context, root string) (string, error)
	// ContainerdVerify checks a rendered config.toml with the containerd
	// under root before it is written; it returns a
	// *containerd.ConfigError when containerd refuses it and an error
	// wrapping containerd.ErrNotInstalled without a containerd. Default:
	// containerd.VerifyConfig (`containerd config dump`) when the installed
	// containerd reads the rendered config version.
	ContainerdVerify func(ctx context.Context, root string, config []byte) error
	// CRIReady, when set, is called after containerd was restarted and
	// must return once the CRI answers ready (see
	// containerd.WaitCRIReady), so that the next phase (kubeadm's
	// preflight) does not meet a half-started runtime. Nil: no wait.
	CRIReady func(ctx context.Context) error
	// Withheld are the spec field paths whose content a sealed spec carries
	// only in its SealedSecrets envelope and that were not put back: the
	// envelope's item paths ("spec.host.files[2].content",
	// "spec.host.containerd.registries[0].clientKey") until it is opened.
	// The files and containerd steps refuse, in Check and before writing
	// anything, to write a place listed here (class VerificationFailed):
	// its clear content is empty, and writing it would truncate the file.
	// Nil: nothing withheld.
	Withheld map[string]bool
	// HTTPClient fetches remote file sources. Default: a client with a 60s
	// timeout and the proxy from the environment.
	HTTPClient *http.Client

	// held frees, per step and steps list, the plan Check kept for this
	// Env until Apply uses it (Release); guarded by heldMu.
	held map[heldKey]func()
}

// heldMu guards Env.held.
var heldMu sync.Mutex

// heldKey names one step of one steps list (StepsFor).
type heldKey struct {
	run  *run
	name string
}

// hold records that Check kept a plan for e that release frees.
func (e *Env) hold(k heldKey, release func()) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if e.held == nil {
		e.held = map[heldKey]func(){}
	}
	e.held[k] = release
}

// Release frees what the steps' Check kept for e and no Apply used: the
// files step's staged content (unnamed files beside their destinations,
// or in $TMPDIR, up to hundreds of MB each). Runners call it when the
// run ends, however it ends (a failed step before the files step, a
// cancelled run); an Apply after it checks again.
func (e *Env) Release() {
	heldMu.Lock()
	held := e.held
	e.held = nil
	heldMu.Unlock()
	for _, release := range held {
		release()
	}
}

// proc returns the /proc directory matching Proc (its parent).
func (e *Env) proc() string { return filepath.Dir(e.procSys()) }

func (e *Env) procSys() string {
	if e.Proc != "" {
		return e.Proc
	}
	return filepath.Join(e.root(), "proc", "sys")
}

func (e *Env) sys() string {
	if e.Sys != "" {
		return e.Sys
	}
	return filepath.Join(e.root(), "sys")
}

func (e *Env) root() string {
	if e.Root == "" {
		return "/"
	}
	return e.Root
}

func (e *Env) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

func (e *Env) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

func (e *Env) modules() kmod.Loader {
	if e.Modules == nil {
		return kmod.Modprobe{}
	}
	return e.Modules
}
