//go:build !windows

package controller

import (
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// A Secret whose value is not what its field takes (an encryption key
// that is no base64 AES key, a kubeconfig that is none) is refused with
// the field path before anything is made, and the value is in neither the
// condition nor the log.
func TestAPIServerSecretValueRefusedUnquoted(t *testing.T) {
	const bad = "hunter2-Not-A-Key-But-Secret"
	for name, edit := range map[string]func(a *bootstrapv1.APIServer){
		"encryption key": func(a *bootstrapv1.APIServer) { a.Encryption = profileEncryption("bad") },
		"audit webhook kubeconfig": func(a *bootstrapv1.APIServer) {
			a.Encryption = profileEncryption("good")
			a.Audit = &bootstrapv1.Audit{Policy: jsonObject(`{"rules":[{"level":"Metadata"}]}`), Webhook: &bootstrapv1.AuditWebhook{
				KubeConfigFrom: &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "bad", Key: "key"}}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			var logs logBuffer
			f.ctx = logr.NewContext(f.ctx, logs.logger())
			_, c := f.machine("cp1", true)
			c.Spec.Security = &bootstrapv1.Security{Profile: "cis-1.12"}
			c.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{}
			edit(&c.Spec.ControlPlane.APIServer)
			f.must(k8s.Update(f.ctx, c))
			f.secret("bad", map[string][]byte{"key": []byte(bad)})
			f.secret("good", map[string][]byte{"key": []byte(clusterEncryptionKey)})
			done := f.reconcile("cp1")
			got := wantCond(t, done, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
			if !contains(got.Message, "spec.controlPlane.apiServer.") {
				t.Errorf("message %q names no field", got.Message)
			}
			noSecretIn(t, done, logs.String(), bad)
		})
	}
}
