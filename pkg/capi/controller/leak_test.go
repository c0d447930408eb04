package controller

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/seal"
)

// leakyFakeSealer seals with the real SpecSealer and then, as a broken
// sealer might, copies one value into the clear spec (as a YAML comment,
// which the spec loader ignores).
type leakyFakeSealer struct{ leak []byte }

func (s leakyFakeSealer) Seal(ctx context.Context, req SealRequest) ([]byte, error) {
	out, err := SpecSealer{}.Seal(ctx, req)
	if err != nil {
		return nil, err
	}
	clear, env, err := seal.Split(out)
	if err != nil {
		return nil, err
	}
	return seal.Join(append([]byte("# "+string(s.leak)+"\n"), clear...), env), nil
}

// TestLeakCheckKnowsSecretValues: a value read from a Secret the config
// refers to is one of the leak check's known secrets, so data carrying it
// in the clear is refused even when nothing about its shape (no PEM
// header, no token) gives it away.
func TestLeakCheckKnowsSecretValues(t *testing.T) {
	value := []byte("db-password=plain-looking-words")
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{Name: "w"}}
	cfg.Spec.Recipients = []string{id.Recipient()}
	cfg.Spec.Agent = bootstrapv1.AgentSource{URL: "file:///usr/local/bin/machineadm"}
	cfg.Spec.Host.Files = []bootstrapv1.File{{Path: "/etc/app/db", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "db", Key: "k"}}}}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: clusterv1.MachineSpec{Version: "v1.37.2"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.10", Port: 6443}}}
	refs := &refValues{files: map[int][]byte{0: value}, known: [][]byte{value}}
	s, err := buildSpec(cfg, m, cl, plan{action: mspec.ActionJoin}, joinInfo{endpoint: "10.0.0.10:6443", caCertHash: "sha256:" + agentSHAForTest}, refs)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := specYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []SecretFile{{Path: tokenPath, Data: []byte("abcdef.0123456789abcdef")}}
	r := &Reconciler{Sealer: SpecSealer{TempDir: t.TempDir()}}
	if _, err := r.sealAndRender(context.Background(), cfg, m, cl, doc, secrets, refs.known); err != nil {
		t.Fatalf("sealed data refused: %v", err)
	}
	r.Sealer = leakyFakeSealer{leak: value}
	_, err = r.sealAndRender(context.Background(), cfg, m, cl, doc, secrets, refs.known)
	var ce *condErr
	if !errors.As(err, &ce) || ce.reason != ReasonLeakRefused {
		t.Fatalf("data with the Secret's value in the clear: %v, want %s", err, ReasonLeakRefused)
	}
	// Without the value among the known secrets nothing would notice.
	if _, err := r.sealAndRender(context.Background(), cfg, m, cl, doc, secrets, nil); err != nil {
		t.Fatalf("control: %v", err)
	}
	// A Secret value usually ends in a newline (kubectl create secret
	// --from-file); the same secret leaking without it, inside other text,
	// is found too.
	withNewline := []byte("db-password=plain-looking-words\n")
	r.Sealer = leakyFakeSealer{leak: []byte("DB=db-password=plain-looking-words;")}
	_, err = r.sealAndRender(context.Background(), cfg, m, cl, doc, secrets, [][]byte{withNewline})
	if !errors.As(err, &ce) || ce.reason != ReasonLeakRefused {
		t.Fatalf("data with the Secret's value (without its newline) in the clear: %v, want %s", err, ReasonLeakRefused)
	}
}

const agentSHAForTest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
