package report

import "testing"

// TestWindowsHostPath: a Windows report path keeps its drive on the
// machine itself and loses it under a dry run's or test's root
// (filepath.Join would give `\C:\…` and `Z:\dry\C:\…`, both invalid).
func TestWindowsHostPath(t *testing.T) {
	for _, c := range []struct{ root, p, want string }{
		{"/", "C:/ProgramData/machineadm/report.json", `C:\ProgramData\machineadm\report.json`},
		{`\`, `C:\ProgramData\machineadm\report.json`, `C:\ProgramData\machineadm\report.json`},
		{"", "C:/ProgramData/machineadm/report.json", `C:\ProgramData\machineadm\report.json`},
		{`Z:\tmp\dry`, "C:/ProgramData/machineadm/report.json", `Z:\tmp\dry\ProgramData\machineadm\report.json`},
		{`Z:\tmp\dry`, `\\?\C:\x`, `Z:\tmp\dry\x`},
	} {
		if got := HostPath(c.root, c.p); got != c.want {
			t.Errorf("HostPath(%q, %q) = %q, want %q", c.root, c.p, got, c.want)
		}
	}
}
