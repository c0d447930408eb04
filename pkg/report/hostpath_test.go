package report

import (
	"path/filepath"
	"testing"
)

func TestHostPath(t *testing.T) {
	for _, c := range []struct{ root, p, want string }{
		{"", "/var/lib/machineadm/report.json", "/var/lib/machineadm/report.json"},
		{"/", "/var/lib/machineadm/report.json", "/var/lib/machineadm/report.json"},
		{"/tmp/dry", "/var/lib/machineadm/report.json", "/tmp/dry/var/lib/machineadm/report.json"},
		{"/tmp/dry/", "/var//lib/../lib/report.json", "/tmp/dry/var/lib/report.json"},
	} {
		if got := HostPath(c.root, c.p); got != filepath.FromSlash(c.want) {
			t.Errorf("HostPath(%q, %q) = %q, want %q", c.root, c.p, got, c.want)
		}
	}
}
