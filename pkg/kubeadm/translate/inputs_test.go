package translate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/fill"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestSecretInputsEverySecretSource fills every field of a spec and
// expects each SecretSource the walk finds to be either taken by kubeadm
// or listed in notKubeadm: a new SecretSource field fails here until
// someone decides which phase resolves it.
func TestSecretInputsEverySecretSource(t *testing.T) {
	// The domain join's secrets are read by the host step domain-join
	// (pkg/host/domainjoin), before kubeadm runs.
	notKubeadm := map[string]bool{
		"spec.host.domainJoin.credentials.password": true,
		"spec.host.domainJoin.offlineJoinBlob":      true,
	}
	var cfg machineadm.MachineBootstrapConfig
	fill.All(t, &cfg)
	var resolved []string
	in, err := SecretInputs(&cfg, func(f machineadm.SecretField) (string, error) {
		resolved = append(resolved, f.Path)
		return f.Format + ":" + f.Source.Value, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range machineadm.SecretFields(&cfg) {
		// The API server's keys and kubeconfigs are read by the host step
		// apiserver-config (pkg/host), which writes its files.
		apiServer := strings.HasPrefix(f.Path, "spec.controlPlane.apiServer.")
		if f.Kind == machineadm.SecretKindSource && !slices.Contains(resolved, f.Path) && !notKubeadm[f.Path] && !apiServer {
			t.Errorf("%s: a SecretSource that neither kubeadm nor another phase resolves", f.Path)
		}
	}
	s := &cfg.Spec
	want := Inputs{
		JoinToken:       "bootstrap-token:" + s.Join.Token.Value,
		CertificateKey:  "certificate-key:" + s.ControlPlane.CertificateKey.Value,
		BootstrapTokens: []string{"bootstrap-token:" + s.ControlPlane.BootstrapTokens[0].Token.Value, "bootstrap-token:" + s.ControlPlane.BootstrapTokens[1].Token.Value},
	}
	if in.JoinToken != want.JoinToken || in.CertificateKey != want.CertificateKey || !slices.Equal(in.BootstrapTokens, want.BootstrapTokens) {
		t.Errorf("SecretInputs = %+v, want %+v", in, want)
	}
}

func TestSecretInputsStopsAtError(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{
		ControlPlane: &machineadm.ControlPlane{BootstrapTokens: []machineadm.BootstrapToken{{}, {}}},
	}}
	boom := errors.New("missing")
	calls := 0
	_, err := SecretInputs(cfg, func(machineadm.SecretField) (string, error) { calls++; return "", boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("err = %v after %d calls, want the resolver's error after 1", err, calls)
	}
	if in, err := SecretInputs(&machineadm.MachineBootstrapConfig{}, nil); err != nil || in.JoinToken != "" || in.BootstrapTokens != nil {
		t.Errorf("empty spec: %+v, %v", in, err)
	}
}
