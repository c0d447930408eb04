package phases

import (
	"context"
	"io"
	"log/slog"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/kubeadm/discovery"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
)

// KubeadmRunner runs one kubeadm phase with r's settings; the default is
// (*run.Runner).Run. Tests pass a stub.
type KubeadmRunner func(ctx context.Context, r *run.Runner, p run.Phase) error

// Data is what phases share for one run. Phases reach the host only
// through it: files through Host's root and WorkDir's Dir, services and
// kernel through Host, kubeadm through RunKubeadm, the kubelet's journal
// through Journal.
type Data struct {
	// Config is the validated hub spec.
	Config *machineadm.MachineBootstrapConfig
	// SpecDigest identifies the spec content ("sha256:<hex>"), for the
	// state file.
	SpecDigest string
	// Root is the root prefix for machineadm's own writes ("/" on a host).
	Root string
	// DryRun makes every phase plan instead of act: host steps print what
	// they would change, kubeadm runs in its dry-run mode, and all files go
	// to WorkDir.
	DryRun bool
	// WorkDir is machineadm's state directory: /var/lib/machineadm on a
	// host, a temporary directory in a dry run.
	WorkDir string
	// StateFile is the state file's name in WorkDir: "" is bootstrap's
	// (state.jsonl); an upgrade keeps its own (upgrade.JournalFile), so
	// that it never disturbs the bootstrap's record of completion.
	StateFile string
	// Upgrade is what an upgrade's phases share (the plan, the recorded
	// spec, the drain settings); nil for every other command.
	Upgrade *UpgradeRun
	// Log is the structured logger. Default: discard.
	Log *slog.Logger
	// Out receives console output: dry-run plans and kubeadm's output
	// (already redacted). Default: discard.
	Out io.Writer
	// KubeadmOutput receives each line kubeadm prints; set by the caller to
	// redact and record it.
	KubeadmOutput func(line string)
	// Host is where the host-preparation steps run (root, dry run,
	// services, kernel). Required by host phases.
	Host *host.Env
	// RunKubeadm runs kubeadm phases. Default: (*run.Runner).Run.
	RunKubeadm KubeadmRunner
	// Journal reads the kubelet's journal after a failed kubelet phase.
	// Default: service.Journalctl{}.
	Journal service.Journal
	// WaitClusterInfo is the join's wait for a signed cluster-info
	// (wait-cluster-info). Default: discovery.WaitClusterInfo.
	WaitClusterInfo func(ctx context.Context, w discovery.ClusterInfoWait) (discovery.ClusterInfoResult, error)

	// Sealed is the SealedSecrets document that came with the spec, or
	// nil; inputs-check opens it with Identity (a file; default
	// /etc/machineadm/identity).
	Sealed   []byte
	Identity string
	// SpecDoc is the clear spec document of a sealed file (beside Sealed):
	// the envelope opens only when its digest is the one sealed.
	SpecDoc []byte
	// AddSecrets tells the run's redactor about secret values found during
	// the run (the plaintext of a sealed spec). Optional.
	AddSecrets func(secrets ...string)

	opts RunOptions
	// skipped are the phases --skip-phases has left out of this run so
	// far, in order.
	skipped []string
	// finishedEarlier is set by Run when the state file showed this
	// spec's run finished (every phase Unchanged).
	finishedEarlier bool
	// resumedAt is the leaf at which this run resumed an unfinished run of
	// the same spec (its first leaf to run after completed ones), while
	// that leaf runs; "" otherwise.
	resumedAt string
	unsealed  *sealspec.Unsealed
	// sealedPKI is the CA set from a sealed spec, by name relative to
	// spec.controlPlane.pki.dir ("ca.key", "etcd/ca.key"); nil otherwise.
	sealedPKI map[string][]byte
	kubeadm   *kubeadmState
	// secrets are the secret inputs read by inputs-check, reused by
	// kubeadm-config (nil when inputs-check did not run in this process).
	secrets *translate.Inputs
}

func (d *Data) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Data) out() io.Writer {
	if d.Out == nil {
		return io.Discard
	}
	return d.Out
}

func (d *Data) journal() service.Journal {
	if d.Journal == nil {
		return service.Journalctl{}
	}
	return d.Journal
}

func (d *Data) runKubeadm() KubeadmRunner {
	if d.RunKubeadm == nil {
		return func(ctx context.Context, r *run.Runner, p run.Phase) error { return r.Run(ctx, p) }
	}
	return d.RunKubeadm
}

func (d *Data) waitClusterInfo() func(context.Context, discovery.ClusterInfoWait) (discovery.ClusterInfoResult, error) {
	if d.WaitClusterInfo == nil {
		return discovery.WaitClusterInfo
	}
	return d.WaitClusterInfo
}

// host is the root-confined view of the machine's files.
func (d *Data) host() files.Dir { return files.Dir{Root: d.Root} }

// work is the root-confined view of the work directory: machine path "/x"
// is WorkDir/x.
func (d *Data) work() files.Dir { return files.Dir{Root: d.WorkDir} }
