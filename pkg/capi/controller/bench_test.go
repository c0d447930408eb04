//go:build !windows

package controller

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// BenchmarkReconcileWorker is the time from a new worker MachineadmConfig
// to its data Secret: every API round trip to the management and workload
// cluster (a real kube-apiserver), the token, sealing (hpke P-384) and
// rendering. BenchmarkBaselineGet is one GET of a MachineadmConfig on the
// same API server, the unit to read the first as a ratio against.
func BenchmarkReconcileWorker(b *testing.B) {
	f := newFixture(b)
	f.initialized()
	names := make([]string, b.N)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i)
		f.machine(names[i], false)
	}
	b.ResetTimer()
	for _, n := range names {
		if _, err := f.r.Reconcile(f.ctx, reqFor(f.ns, n)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c := f.reconcile(names[len(names)-1])
	wantCond(b, c, DataSecretAvailableCondition, "True", ReasonAvailable)
}

// BenchmarkReconcileWorkerWithSecrets is BenchmarkReconcileWorker for a
// config that takes a file and a registry client certificate from
// Secrets: two more Secret reads and two more sealed items per render.
func BenchmarkReconcileWorkerWithSecrets(b *testing.B) {
	f := newFixture(b)
	f.initialized()
	crt, key, err := newCA(caSpec{commonName: "registry-client"}, "")
	f.must(err)
	f.secret("app", map[string][]byte{"conf": []byte("password: benchmark-secret-value\n")})
	f.secret("registry-client", map[string][]byte{"tls.crt": crt, "tls.key": key})
	names := make([]string, b.N)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i)
		_, c := f.machine(names[i], false)
		c.Spec.Host.Files = []bootstrapv1.File{{Path: "/etc/app/conf", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "app", Key: "conf"}}}}
		c.Spec.Host.Containerd = &bootstrapv1.Containerd{Registries: []bootstrapv1.Registry{{Host: "registry.example.com",
			ClientCertificateFrom: &bootstrapv1.CertificateSource{Secret: bootstrapv1.TLSSecretReference{Name: "registry-client"}}}}}
		f.must(k8s.Update(f.ctx, c))
	}
	b.ResetTimer()
	for _, n := range names {
		if _, err := f.r.Reconcile(f.ctx, reqFor(f.ns, n)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c := f.reconcile(names[len(names)-1])
	wantCond(b, c, DataSecretAvailableCondition, "True", ReasonAvailable)
}

// BenchmarkReconcileSteady is a reconcile of a config whose data Secret
// exists and whose token needs no refresh: the periodic cost.
func BenchmarkReconcileSteady(b *testing.B) {
	f := newFixture(b)
	f.initialized()
	f.machine("w1", false)
	f.reconcile("w1")
	b.ResetTimer()
	for range b.N {
		if _, err := f.r.Reconcile(f.ctx, reqFor(f.ns, "w1")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineGet(b *testing.B) {
	f := newFixture(b)
	f.machine("w1", false)
	c := &bootstrapv1.MachineadmConfig{}
	b.ResetTimer()
	for range b.N {
		if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, c); err != nil {
			b.Fatal(err)
		}
	}
}
