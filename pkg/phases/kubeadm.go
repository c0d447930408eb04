package phases

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/report"
)

// kubeadmState is computed once per run by the kubeadm-config phase.
type kubeadmState struct {
	inputs     kubeadm.Inputs
	configPath string
	dryRunDir  string
	secrets    []string
}

// KubeadmConfigPhase resolves the spec's secrets, imports the shared CA
// set, writes the kubelet configuration patch and the kubeadm
// configuration file (0600, it holds tokens) after kubeadm's own
// validation accepted it.
func KubeadmConfigPhase() Phase {
	return Phase{
		Name:  "kubeadm-config",
		Short: "Import the CA set, write the kubelet patch and the kubeadm configuration",
		Run: func(ctx context.Context, d *Data) (bool, string, error) {
			st, changed, err := prepareKubeadm(d)
			if err != nil {
				return false, "", err
			}
			msg := "kubeadm configuration at " + st.configPath
			if st.inputs.CertificatesDir != "" {
				msg += ", CA material staged in " + st.inputs.CertificatesDir
			}
			return changed, msg, nil
		},
	}
}

// KubeadmPhase wraps one kubeadm phase as a machineadm phase. Run alone
// (`bootstrap phase NAME`), it first prepares the kubeadm configuration.
func KubeadmPhase(p kubeadm.Phase) Phase {
	return Phase{
		Name:  p.Name,
		Short: p.Short,
		Run: func(ctx context.Context, d *Data) (bool, string, error) {
			st := d.kubeadm
			if st == nil {
				var err error
				if st, _, err = prepareKubeadm(d); err != nil {
					return false, "", err
				}
			}
			tail := &lineTail{max: 200}
			r := &kubeadm.Runner{Action: d.Config.Spec.Action, ConfigPath: st.configPath, DryRunDir: st.dryRunDir,
				Output: func(line string) {
					tail.add(line)
					if d.KubeadmOutput != nil {
						d.KubeadmOutput(line)
					}
				}}
			if err := r.Run(ctx, p); err != nil {
				if !d.DryRun && kubeletPhases[p.Name] {
					for _, l := range kubeletJournal(ctx) {
						tail.add(l)
						if d.KubeadmOutput != nil {
							d.KubeadmOutput(l)
						}
					}
				}
				// kubeadm's error is often generic ("preflight checks
				// failed"); its output says why.
				class, hint := report.ClassifyOutput(p.Name, err, tail.lines)
				return false, "", report.NewError(class, hint, err)
			}
			return true, "", nil
		},
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
	var err error
	if d.secrets != nil {
		st.inputs = *d.secrets
	} else if st.inputs, err = resolveSecrets(d); err != nil {
		return nil, false, err
	}
	st.secrets = append(st.secrets, st.inputs.JoinToken, st.inputs.CertificateKey)
	st.secrets = append(st.secrets, st.inputs.BootstrapTokens...)
	st.inputs.DryRun = d.DryRun

	changed := false
	if d.DryRun {
		st.dryRunDir = filepath.Join(d.WorkDir, "kubeadm")
		if err := os.MkdirAll(st.dryRunDir, 0o700); err != nil {
			return nil, false, err
		}
		if s.ControlPlane != nil {
			st.inputs.CertificatesDir = filepath.Join(d.WorkDir, "pki")
		}
	}
	if s.ControlPlane != nil && s.ControlPlane.PKI.Dir != "" {
		dst := st.inputs.CertificatesDir
		if dst == "" {
			dst = hostPath(d, s.ControlPlane.PKI.CertificatesDir)
		}
		c, err := importPKI(hostPath(d, s.ControlPlane.PKI.Dir), dst)
		if err != nil {
			return nil, false, err
		}
		changed = changed || c
	}
	if kubeadm.KubeletConfig(d.Config) != nil {
		st.inputs.PatchesDir = filepath.Join(d.WorkDir, "patches")
		c, err := writeIfChanged(d, st.inputs.PatchesDir, func() (string, []byte, error) {
			name, content, _, err := kubeadm.KubeletPatch(d.Config)
			return name, content, err
		})
		if err != nil {
			return nil, false, report.NewError(report.ClassHostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
		}
		changed = changed || c
	}
	docs, err := kubeadm.Translate(d.Config, st.inputs)
	if err != nil {
		// The spec passed the same translation before the run started
		// (exit 2 otherwise); a refusal here is machineadm's own fault.
		return nil, false, report.NewError(report.ClassInternal, "kubeadm's validation refused the configuration machineadm derived at run time; run `machineadm config kubeadm -f SPEC` and report this", err)
	}
	st.configPath = filepath.Join(d.WorkDir, "kubeadm-"+strings.ToLower(string(s.Action))+".yaml")
	c, err := writeIfChanged(d, d.WorkDir, func() (string, []byte, error) {
		return filepath.Base(st.configPath), docs.YAML, nil
	})
	if err != nil {
		return nil, false, report.NewError(report.ClassHostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
	}
	d.kubeadm = st
	return st, changed || c, nil
}

// writeIfChanged writes one file (0600) into dir unless it already holds
// the same bytes.
func writeIfChanged(d *Data, dir string, content func() (string, []byte, error)) (bool, error) {
	name, data, err := content()
	if err != nil {
		return false, err
	}
	path := filepath.Join(dir, name)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	return true, atomicfile.WriteFile(path, data, 0o600)
}

// hostPath joins an absolute spec path under the run's root prefix.
func hostPath(d *Data, p string) string {
	if d.Root == "" || d.Root == "/" {
		return p
	}
	return filepath.Join(d.Root, p)
}

// resolveSecrets reads the spec's secret sources. A missing secret file is
// an error (PayloadUnavailable) — except in a dry run, which uses a
// placeholder of the right shape and says so in the log.
func resolveSecrets(d *Data) (kubeadm.Inputs, error) {
	s := &d.Config.Spec
	var in kubeadm.Inputs
	var err error
	if s.Join != nil {
		if in.JoinToken, err = readSecret(d, &s.Join.Token, "spec.join.token", placeholderToken); err != nil {
			return in, err
		}
	}
	if cp := s.ControlPlane; cp != nil {
		if cp.CertificateKey != nil {
			if in.CertificateKey, err = readSecret(d, cp.CertificateKey, "spec.controlPlane.certificateKey", placeholderCertKey); err != nil {
				return in, err
			}
		}
		for i := range cp.BootstrapTokens {
			t, err := readSecret(d, &cp.BootstrapTokens[i].Token, fmt.Sprintf("spec.controlPlane.bootstrapTokens[%d].token", i), placeholderToken)
			if err != nil {
				return in, err
			}
			in.BootstrapTokens = append(in.BootstrapTokens, t)
		}
	}
	return in, nil
}

const (
	placeholderToken   = "dryrun.0000000000000000"
	placeholderCertKey = "0000000000000000000000000000000000000000000000000000000000000000"
)

func readSecret(d *Data, src *machineadm.SecretSource, path, placeholder string) (string, error) {
	if src.File == "" {
		return src.Value, nil
	}
	data, err := redact.ReadSecretFile(hostPath(d, src.File))
	if err != nil {
		if d.DryRun && errors.Is(err, fs.ErrNotExist) {
			d.Log.Warn("dry run: secret file missing, using a placeholder", "field", path, "file", src.File)
			return placeholder, nil
		}
		return "", report.NewError(report.ClassPayloadUnavailable, "deliver the secret file named by "+path+" before machineadm runs", fmt.Errorf("%s: reading %s: %w", path, src.File, err))
	}
	return strings.TrimSpace(string(data)), nil
}

// lineTail keeps the last max lines it was given.
type lineTail struct {
	max   int
	lines []string
}

func (t *lineTail) add(line string) {
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// kubeletPhases are the kubeadm phases whose failures are usually the
// kubelet's: the kubelet's journal goes into the report's log tail.
var kubeletPhases = map[string]bool{"kubelet-start": true, "kubelet-wait-bootstrap": true, "wait-control-plane": true, "kubelet-finalize": true}

// kubeletJournal returns the kubelet's last journal lines (journalctl -u
// kubelet -n 30), prefixed, or nothing when journalctl is missing or slow.
func kubeletJournal(ctx context.Context) []string {
	path, err := exec.LookPath("journalctl")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "-u", "kubelet", "-n", "30", "--no-pager", "-o", "short-precise").Output()
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			lines = append(lines, "[journal kubelet] "+l)
		}
	}
	return lines
}
