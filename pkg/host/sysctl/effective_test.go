package sysctl

import (
	"os"
	"path/filepath"
	"testing"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEffective: after the writes, a key the OS changed back, a later
// sysctl.d file that overrides machineadm's at boot, a masked file, a
// same-named file in a lower-precedence directory and /etc/sysctl.conf
// are each seen.
func TestEffective(t *testing.T) {
	root := t.TempDir()
	params := map[string]string{
		"net.ipv4.ip_forward":          "1",
		"vm.max_map_count":             "262144",
		"net.ipv4.ip_local_port_range": "20000 60999",
		"kernel.pid_max":               "4194304",
	}
	writeTree(t, root, map[string]string{
		ConfPath:                                 string(Render(params)),
		"/usr/lib/sysctl.d/50-default.conf":      "net.ipv4.ip_forward = 0\nkernel.pid_max = 32768\n",
		"/etc/sysctl.d/99-admin.conf":            "# the admin's\n-vm/max_map_count=65530\nnet.ipv4.conf.*.rp_filter = 2\n",
		"/usr/lib/sysctl.d/99-admin.conf":        "net.ipv4.ip_forward = 0\n", // masked by /etc's file of that name
		"/etc/sysctl.conf":                       "net.ipv4.ip_local_port_range = 20000\t60999\n",
		"/proc/sys/net/ipv4/ip_forward":          "1\n",
		"/proc/sys/vm/max_map_count":             "262144\n",
		"/proc/sys/net/ipv4/ip_local_port_range": "20000\t60999\n",
		"/proc/sys/kernel/pid_max":               "32768\n", // something set it back
	})
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/sysctl.d/95-masked.conf")); err != nil {
		t.Fatal(err)
	}
	values, err := Effective(root, filepath.Join(root, "proc/sys"), params)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Value{}
	for _, v := range values {
		got[v.Key] = v
	}
	if v := got["net.ipv4.ip_forward"]; v.Differs() || v.Effective != "1" {
		t.Errorf("ip_forward: %+v (50-default.conf comes before machineadm's 90)", v)
	}
	if v := got["vm.max_map_count"]; !v.Differs() || v.Boot == nil || v.Boot.File != "/etc/sysctl.d/99-admin.conf" || v.Boot.Value != "65530" {
		t.Errorf("max_map_count: %+v, want the boot override of 99-admin.conf", v)
	}
	if v := got["net.ipv4.ip_local_port_range"]; v.Differs() {
		t.Errorf("port range: %+v (same value, other white space)", v)
	}
	if v := got["kernel.pid_max"]; !v.Differs() || v.Effective != "32768" || v.Boot != nil {
		t.Errorf("pid_max: %+v, want effective 32768 now, no boot override", v)
	}
}
