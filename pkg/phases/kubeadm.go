package phases

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/redact"
)

// kubeadmState is computed once per run by the kubeadm-config phase.
type kubeadmState struct {
	inputs     translate.Inputs
	docs       *translate.Documents
	configPath string
	dryRunDir  string
	secrets    []string
	// standIn is a join dry run's stand-in cluster-info, which kubeadm's
	// discovery asks (translate.Inputs.DryRunDiscovery); nil otherwise.
	standIn *run.ClusterInfoStandIn
	// session carries kubeadm's command tree and run data from one
	// kubeadm phase of the run to the next.
	session run.Session
}

// KubeadmConfigPhase resolves the spec's secrets, imports the shared CA
// set, writes the kubelet configuration patch and the kubeadm
// configuration file (0600, it holds tokens) after kubeadm's own
// validation accepted it.
func KubeadmConfigPhase() Phase {
	return Phase{
		Name:  "kubeadm-config",
		Short: "Import the CA set, write the kubelet patch and the kubeadm configuration",
		Class: errclass.Internal,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			st, changed, err := prepareKubeadm(d)
			if err != nil {
				return Result{}, err
			}
			msg := "kubeadm configuration at " + st.configPath
			if st.inputs.CertificatesDir != "" {
				msg += ", CA material staged in " + st.inputs.CertificatesDir
			}
			return Result{Changed: changed, Message: msg}, nil
		},
	}
}

// kubeletJournalLines is how many journal lines of the kubelet a failed
// kubelet phase adds to the output.
const kubeletJournalLines = 30

// kubeadmPhase runs one row of kubeadm's phase table (a leaf; parents get
// their Run removed by KubeadmPhases). Run alone (`bootstrap phase NAME`),
// it first prepares the kubeadm configuration. Its failures are classified
// by the kubeadm runner from kubeadm's error and output.
func kubeadmPhase(name string, row run.Phase) Phase {
	return Phase{
		Name:    name,
		Short:   row.Short,
		Class:   row.Class,
		Durable: row.RefusesRerun,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if done, msg := kubeletBootstrappedEarlier(d, row); done {
				return Result{Message: msg}, nil
			}
			st := d.kubeadm
			if st == nil {
				var err error
				if st, _, err = prepareKubeadm(d); err != nil {
					return Result{}, err
				}
			}
			repaired, err := repairInterruptedCerts(d, row)
			if err == nil {
				var more []string
				more, err = repairInterruptedKubeconfigs(d, row)
				repaired = append(repaired, more...)
			}
			if err != nil {
				return Result{Changed: len(repaired) > 0, Changes: repaired}, err
			}
			r := &run.Runner{Action: d.Config.Spec.Action, ConfigPath: st.configPath, DryRunDir: st.dryRunDir, Output: d.KubeadmOutput, Session: &st.session}
			if cp := d.Config.Spec.ControlPlane; cp != nil {
				r.HostCertificatesDir = cp.PKI.CertificatesDir
				if d.DryRun {
					r.CertificatesDir = st.inputs.CertificatesDir
				}
			}
			if !d.DryRun {
				r.Journal = func(ctx context.Context) []string {
					var lines []string
					for _, l := range d.journal().Tail(ctx, "kubelet", kubeletJournalLines) {
						lines = append(lines, "[journal kubelet] "+l)
					}
					return lines
				}
			}
			err = d.runKubeadm()(ctx, r, row)
			for _, w := range r.Warnings {
				d.log().Warn("kubeadm "+name+": "+w, "phase", name)
			}
			if err != nil {
				return Result{Changed: len(repaired) > 0, Changes: repaired}, err
			}
			if !d.DryRun {
				return Result{Changed: true, Changes: repaired}, nil
			}
			plan := append(dryRunNotes(d, name), r.Plan...)
			return Result{Changed: len(plan) > 0, Changes: plan}, nil
		},
	}
}

// kubeletBootstrappedEarlier says whether the join's kubelet-start phase
// row, run where this run resumes, already did its work in the earlier,
// unfinished run: the kubelet that run started has finished its TLS
// bootstrap (its kubeconfig, translate.KubeletKubeconfigPath, exists). That
// file cannot predate that run: its preflight, completed (the run resumes
// after it), refuses a host that has one. Run again, kubeadm's
// kubelet-start would refuse the Node that very kubelet registered ("a
// Node with name ... and status Ready already exists"), so a kill after
// the kubelet started would never converge. The kubelet's settings were
// written before it started; kubelet-wait-bootstrap, next, checks it.
func kubeletBootstrappedEarlier(d *Data, row run.Phase) (bool, string) {
	if d.DryRun || d.Config.Spec.Action != machineadm.ActionJoin || row.Name != "kubelet-start" || d.resumedAt != row.Name {
		return false, ""
	}
	p := translate.KubeletKubeconfigPath()
	hp, err := d.host().Path(p)
	if err != nil {
		return false, ""
	}
	if fi, err := os.Stat(hp); err != nil || !fi.Mode().IsRegular() {
		return false, ""
	}
	d.log().Info("kubelet-start done by the unfinished earlier run: the kubelet it started has bootstrapped", "kubeconfig", p)
	return true, "the kubelet started by the unfinished earlier run has completed its TLS bootstrap (" + p + " exists); kubeadm's kubelet-start not run again"
}

// dryRunNotes are what a dry run of the kubeadm phase name says beyond
// kubeadm's own plan: a join's discovery, which kubeadm made against the
// run's stand-in cluster-info (run.ClusterInfoStandIn), signed with
// spec.join.token and carrying the spec's cluster CA when it has one, so
// that no endpoint is contacted for it; the note says which pins that
// checked.
func dryRunNotes(d *Data, name string) []string {
	j := d.Config.Spec.Join
	if d.Config.Spec.Action != machineadm.ActionJoin || name != "preflight" || j == nil {
		return nil
	}
	checked := "the token's signature verified and the CA pinned by spec.join.caCertHashes"
	switch {
	case len(j.CACertHashes) == 0:
		checked = "the token's signature verified; no CA pinned (spec.join.unsafeSkipCAVerification)"
	case d.kubeadm != nil && d.kubeadm.standIn != nil && d.kubeadm.standIn.MadeCA:
		checked = "the token's signature verified; spec.join.caCertHashes checked for their form only, as the spec carries no cluster CA to check them against"
	}
	return []string{
		"would discover the cluster at " + j.APIServerEndpoint + " and pin its CA to spec.join.caCertHashes (dry run: kubeadm discovered a stand-in cluster-info made for spec.join.token, " + checked + "; the endpoint was not contacted)",
	}
}

// Secrets returns the secret values resolved for this run (tokens,
// certificate key) so that callers can redact them; nil before the
// kubeadm-config phase ran.
func (d *Data) Secrets() []string {
	if d.kubeadm == nil {
		return nil
	}
	return d.kubeadm.secrets
}

func prepareKubeadm(d *Data) (*kubeadmState, bool, error) {
	s := &d.Config.Spec
	st := &kubeadmState{}
	done := false
	defer func() {
		if !done {
			st.release()
		}
	}()
	var err error
	if d.secrets != nil {
		st.inputs = *d.secrets
	} else {
		if _, err := unseal(d); err != nil {
			return nil, false, err
		}
		if st.inputs, err = resolveSecrets(d); err != nil {
			return nil, false, err
		}
	}
	st.secrets = append(st.secrets, st.inputs.JoinToken, st.inputs.CertificateKey)
	st.secrets = append(st.secrets, st.inputs.BootstrapTokens...)
	st.inputs.DryRun = d.DryRun

	changed := false
	if d.DryRun {
		// A whole dry run starts afresh. One phase (`bootstrap phase NAME
		// --dry-run`) builds on what an earlier dry run into the directory
		// planned, as the real command builds on the host's earlier
		// phases: kubeadm's dry run reads kubeconfigs and certificates
		// only from there.
		if d.opts.Only == "" {
			if err := clearDryRunOutputs(d.WorkDir); err != nil {
				return nil, false, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
			}
		}
		st.dryRunDir = filepath.Join(d.WorkDir, "kubeadm")
		if err := d.work().MkdirAll("/kubeadm", 0o700); err != nil {
			return nil, false, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
		}
		if s.ControlPlane != nil {
			st.inputs.CertificatesDir = filepath.Join(d.WorkDir, "pki")
		}
	}
	var caPEM, caKeyPEM []byte
	if s.ControlPlane != nil && s.ControlPlane.PKI.Dir != "" {
		dst := files.Dir{Root: st.inputs.CertificatesDir}
		if st.inputs.CertificatesDir == "" {
			dst = files.Dir{Root: hostPathOrRoot(d, s.ControlPlane.PKI.CertificatesDir)}
		}
		var src pkiSource = files.Dir{Root: hostPathOrRoot(d, s.ControlPlane.PKI.Dir)}
		if d.sealedPKI != nil {
			src = sealedFiles(d.sealedPKI)
		}
		c, err := importPKI(src, dst)
		if err != nil {
			return nil, false, err
		}
		changed = changed || c
		if d.DryRun && s.Action == machineadm.ActionJoin {
			// kubeadm join's dry run reads and writes certificates in
			// its own directory only: give it the CA set there, as a
			// real join finds it in the certificates directory, or it
			// makes CAs of its own and plans with them.
			if _, err := importPKI(src, files.Dir{Root: st.dryRunDir}); err != nil {
				return nil, false, err
			}
		}
		if d.DryRun {
			if caPEM, err = os.ReadFile(filepath.Join(dst.Root, "ca.crt")); err == nil {
				caKeyPEM, err = os.ReadFile(filepath.Join(dst.Root, "ca.key"))
			}
			if err != nil {
				return nil, false, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
			}
		}
	}
	if d.DryRun && s.Action == machineadm.ActionJoin && s.Join != nil {
		// kubeadm's discovery asks a stand-in made for the spec's token
		// and CA (the CA set's, or one made for the dry run).
		if st.standIn, err = run.StartClusterInfoStandIn(run.StandInOptions{
			Token: st.inputs.JoinToken, Endpoint: s.Join.APIServerEndpoint, CAPEM: caPEM, CAKeyPEM: caKeyPEM,
			ControlPlane: s.Role == machineadm.RoleControlPlane,
		}); err != nil {
			return nil, false, errclass.New(errclass.HostPreparationFailed, "a join's dry run serves a stand-in cluster-info on 127.0.0.1: bring the loopback interface up", &DryRunOnlyError{Err: err})
		}
		st.inputs.DryRunDiscovery = &translate.DryRunDiscovery{Endpoint: st.standIn.Endpoint, CACertHash: st.standIn.CACertHash, MadeCA: st.standIn.MadeCA}
	}
	if translate.KubeletConfig(d.Config) != nil {
		st.inputs.PatchesDir = filepath.Join(d.WorkDir, "patches")
		name, content, _, err := translate.KubeletPatch(d.Config)
		if err != nil {
			return nil, false, errclass.New(errclass.Internal, "", err)
		}
		c, err := d.work().WriteFile("/patches/"+name, content, 0o600)
		if err != nil {
			return nil, false, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
		}
		changed = changed || c
	}
	docs, err := translate.Translate(d.Config, st.inputs)
	if err != nil {
		// The spec passed the same translation before the run started
		// (exit 2 otherwise); a refusal here is machineadm's own fault.
		return nil, false, errclass.New(errclass.Internal, "kubeadm's validation refused the configuration machineadm derived at run time; run `machineadm config kubeadm -f SPEC` and report this", err)
	}
	st.docs = docs
	st.configPath = filepath.Join(d.WorkDir, "kubeadm-"+strings.ToLower(string(s.Action))+".yaml")
	c, err := d.work().WriteFile("/"+filepath.Base(st.configPath), docs.YAML, 0o600)
	if err != nil {
		return nil, false, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
	}
	done = true
	d.releaseKubeadm()
	d.kubeadm = st
	return st, changed || c, nil
}

// release stops what the state runs (a join dry run's stand-in
// cluster-info). Nil-safe.
func (st *kubeadmState) release() {
	if st != nil {
		// The kubeconfigs the dry run wrote name the stand-in (kubeadm
		// discovered it): show the spec's endpoint, as a real run writes.
		_ = st.standIn.RestoreEndpoint(st.dryRunDir)
		_ = st.standIn.Close()
		st.standIn = nil
	}
}

// releaseKubeadm releases the run's kubeadm state, if any (Workflow.Run
// calls it when the run ends).
func (d *Data) releaseKubeadm() {
	d.kubeadm.release()
}

// dryRunOutputs are what the kubeadm phases of a dry run write in its
// directory (Data.WorkDir): kubeadm's dry-run files, the staged
// certificates (certificatesDir), the kubelet patch, the kubeadm
// configuration of either action and the Systemd runtime's units.
var dryRunOutputs = []string{"kubeadm", "pki", "patches", "kubeadm-init.yaml", "kubeadm-join.yaml", systemdDryRunDir}

// clearDryRunOutputs removes what an earlier dry run in dir left there
// (dryRunOutputs; the reports and the log stay). A dry run of the whole
// workflow plans from the host alone: kubeadm takes a certificate, kubeconfig or CA it finds in
// its directories as present, so left over from an earlier dry run it
// would make the plan claim "unchanged" for files a real run writes, or
// fail on a CA set since replaced ("exists with other content"). The
// session lets a dry run use only a new, empty or earlier dry run's
// directory (session.DryRunMarker).
func clearDryRunOutputs(dir string) error {
	for _, name := range dryRunOutputs {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// hostPathOrRoot is the host path of the machine path p under the run's
// root (symbolic links confined to it); p itself when it cannot be
// resolved, so that the read that follows names the problem.
func hostPathOrRoot(d *Data, p string) string {
	hp, err := d.host().Path(p)
	if err != nil {
		return p
	}
	return hp
}

// resolveSecrets reads the spec's secret sources that kubeadm takes
// (translate.SecretInputs over the spec's one secret walk). A missing or
// empty secret file is an error (PayloadUnavailable) naming the field, in
// a dry run too: a dry run fails where the real run would.
func resolveSecrets(d *Data) (translate.Inputs, error) {
	return translate.SecretInputs(d.Config, func(f machineadm.SecretField) (string, error) {
		return readSecret(d, f.Source, f.Path)
	})
}

func readSecret(d *Data, src *machineadm.SecretSource, path string) (string, error) {
	if src.File == "" {
		return src.Value, nil
	}
	data, err := redact.ReadSecretFile(hostPathOrRoot(d, src.File))
	if err != nil {
		return "", errclass.New(errclass.PayloadUnavailable, "deliver the secret file named by "+path+" before machineadm runs", fmt.Errorf("%s: reading %s: %w", path, src.File, err))
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", errclass.New(errclass.PayloadUnavailable, "write the secret into the file named by "+path+" before machineadm runs", fmt.Errorf("%s: %s is empty", path, src.File))
	}
	return v, nil
}
