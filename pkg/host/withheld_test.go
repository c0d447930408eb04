//go:build !windows

package host

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestWithheldContentNeverWritten: a place a sealed spec carries only in
// its envelope (Env.Withheld: a file's content, a registry mirror's client
// key) is refused by its step's check and by its Apply, with class
// VerificationFailed naming the field, and nothing at all is written — the
// files step never writes the empty clear content over a secret, and
// containerd never writes hosts.toml without the client certificate.
func TestWithheldContentNeverWritten(t *testing.T) {
	for _, tc := range []struct {
		field, step string
		// strip empties the place in the spec, as sealing does.
		strip func(string) string
	}{
		{"spec.host.files[1].content", StepFiles, func(d string) string {
			// Sealing removes content and encoding.
			return regexp.MustCompile(`(path: /etc/machineadm/blob.bin\n)      encoding: gzip\+base64\n      content: \S+\n`).ReplaceAllString(d, "$1")
		}},
		{"spec.host.containerd.registries[0].mirrors[0].clientKey", StepContainerd, func(d string) string {
			i := strings.Index(d, "          clientCert: |")
			j := strings.Index(d, "      proxy:")
			return d[:i] + d[j:]
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			h := newTestHost(t)
			cfg := h.fullSpec(t, tc.strip)
			before := snapshot(t, h.root)
			env := h.env(nil)
			env.Withheld = map[string]bool{tc.field: true}
			err := Check(context.Background(), env, Steps(cfg))
			if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("check: %v (class %s); want VerificationFailed naming %s", err, c, tc.field)
			}
			env = h.env(nil)
			env.Withheld = map[string]bool{tc.field: true}
			if _, err := stepNamed(t, Steps(cfg), tc.step).Apply(context.Background(), env); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s applied a withheld place: %v", tc.step, err)
			}
			if d := diffSnapshots(before, snapshot(t, h.root)); len(d) > 0 {
				t.Errorf("the host changed: %v", d)
			}
			// Put back (the envelope opened): the same spec applies.
			env = h.env(nil)
			if err := Check(context.Background(), env, Steps(cfg)); err != nil {
				t.Errorf("check without withheld places: %v", err)
			}
		})
	}
}
