package phases

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// rowPhase is the phase of one row of kubeadm's table: kubeadm runs it,
// unless the spec's control plane runs as systemd units and the row has a
// Systemd replacement (spec.controlPlane.runtime: Systemd).
// kubeletWaitBootstrap is the join phase of kubeadm's table
// (kubeadm.PhasesFor) that ends when the kubelet finished its TLS
// bootstrap: after it, the join's Node exists (Phase.RegistersNode).
const kubeletWaitBootstrap = "kubelet-wait-bootstrap"

func rowPhase(cfg *machineadm.MachineBootstrapConfig, name string, row kubeadm.Phase) Phase {
	if row.Systemd == nil || !kubeadm.SystemdRuntime(cfg) {
		p := kubeadmPhase(name, row)
		p.RegistersNode = cfg.Spec.Action == machineadm.ActionJoin && row.Name == kubeletWaitBootstrap
		return p
	}
	return Phase{
		Name:    name,
		Short:   row.Short + " (Systemd runtime: systemd units instead)",
		Class:   row.Class,
		Durable: row.RefusesRerun,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			st := d.kubeadm
			if st == nil {
				var err error
				if st, _, err = prepareKubeadm(d); err != nil {
					return Result{}, err
				}
			}
			out := &lineWriter{emit: d.KubeadmOutput}
			defer out.Flush()
			env := &kubeadm.SystemdEnv{Config: d.Config, Docs: st.docs, Root: d.Root, DryRun: d.DryRun, Out: out, Log: d.log(), Services: d.unitManager()}
			if d.DryRun {
				env.DryRunDir = filepath.Join(d.WorkDir, systemdDryRunDir)
			}
			if cp := d.Config.Spec.ControlPlane; cp != nil {
				env.HostCertificatesDir = cp.PKI.CertificatesDir
			}
			if d.KubeadmOutput == nil {
				env.Out = d.out()
			}
			if err := row.Systemd(ctx, env); err != nil {
				return Result{}, err
			}
			if !d.DryRun {
				return Result{Changed: true}, nil
			}
			return Result{Changed: len(env.Plan) > 0, Changes: env.Plan}, nil
		},
	}
}

// systemdDryRunDir is where, below a dry run's directory (Data.WorkDir),
// the Systemd runtime's phases write the unit and environment files a real
// run would install, by their machine paths (kubeadm.SystemdEnv.DryRunDir).
const systemdDryRunDir = "systemd"

// unitManager is the host's service manager when it can start units, a
// systemd D-Bus client otherwise.
func (d *Data) unitManager() cpunits.Manager {
	if d.Host != nil {
		if m, ok := d.Host.Services.(cpunits.Manager); ok {
			return m
		}
	}
	return service.NewSystemd()
}

// checkSystemdBinaries is inputs-check's part for the Systemd runtime:
// each binary not delivered by spec.host.files must be on the image. A
// dry run, which plans on machines that are not nodes yet, only warns.
func checkSystemdBinaries(d *Data) error {
	err := cpunits.CheckBinaries(d.Root, &d.Config.Spec)
	if err == nil {
		return nil
	}
	if d.DryRun {
		d.log().Warn("the control-plane binaries are not all on this machine; a real run stops here", "error", err)
		return nil
	}
	return errclass.New(errclass.PayloadUnavailable, "install the control-plane binaries in the image at the paths of spec.controlPlane.binaries, or deliver them with spec.host.files and a sha256", err)
}

// lineWriter hands each complete line written to it to emit. It is safe
// for concurrent use: kubeadm's KubeWaiter writes from one goroutine per
// control-plane component.
type lineWriter struct {
	mu   sync.Mutex
	emit func(string)
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if w.emit != nil {
			w.emit(string(w.buf[:i]))
		}
		w.buf = w.buf[i+1:]
	}
}

// Flush emits a last line without its newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 && w.emit != nil {
		w.emit(string(w.buf))
	}
	w.buf = nil
}
