//go:build !windows

package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// netnsEnv marks the child test process that runs inside the private
// network namespace.
const netnsEnv = "MACHINEADM_TEST_IN_NETNS"

// TestSysctlLiveInPrivateNetns applies the kernel-modules and sysctl steps
// for real — /proc/sys of the running kernel — inside a private network
// namespace (`unshare --net`), where net.* parameters are per namespace,
// so the machine's own values are untouched. The test re-runs itself
// under unshare; the child applies twice and reads the values back.
func TestSysctlLiveInPrivateNetns(t *testing.T) {
	if os.Getenv(netnsEnv) == "1" {
		sysctlInNetns(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare not installed (util-linux)")
	}
	before, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Skip("no /proc/sys")
	}
	cmd := exec.Command(unshare, "--net", os.Args[0], "-test.run", "^TestSysctlLiveInPrivateNetns$", "-test.v")
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in the private network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestSysctlLiveInPrivateNetns") {
		t.Fatal("child did not run the test")
	}
	after, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if string(after) != string(before) {
		t.Errorf("the machine's ip_forward changed: %q -> %q", before, after)
	}
}

func sysctlInNetns(t *testing.T) {
	params := map[string]string{
		"net.ipv4.ip_forward":              "1",
		"net.ipv4.conf.all.rp_filter":      "2",
		"net.ipv4.ip_local_port_range":     "20000 60999",
		"net/ipv4/conf/default/forwarding": "1",
	}
	// br_netfilter's keys are per namespace too on current kernels; use
	// them when this kernel has them.
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err == nil {
		params["net.bridge.bridge-nf-call-iptables"] = "1"
	}
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Host: machineadm.Host{Sysctl: params}}}
	env := &Env{Root: t.TempDir(), Proc: "/proc/sys", Sys: "/sys"}
	ctx := context.Background()
	for run := 1; run <= 2; run++ {
		steps := Steps(cfg)
		if err := Check(ctx, env, steps); err != nil {
			t.Fatalf("run %d check: %v", run, err)
		}
		for _, s := range steps[:3] { // files, kernel-modules, sysctl
			res, err := s.Apply(ctx, env)
			if err != nil {
				t.Fatalf("run %d %s: %v", run, s.Name, err)
			}
			if run == 2 && res.Changed {
				t.Errorf("run 2 %s changed: %+v", s.Name, res)
			}
			if run == 1 && s.Name == StepSysctl {
				t.Logf("run 1 sysctl changes: %q", res.Changes)
			}
		}
		env = &Env{Root: env.Root, Proc: env.Proc, Sys: env.Sys} // a new run
	}
	for k, v := range params {
		p := filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/"))
		if strings.Contains(k, "/") {
			p = filepath.Join("/proc/sys", k)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(strings.Fields(string(got)), " ") != v {
			t.Errorf("%s reads %q, want %q", p, got, v)
		}
	}
	// An unknown key is refused against the real /proc/sys.
	bad := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Host: machineadm.Host{Sysctl: map[string]string{"net.ipv4.no_such_parameter": "1"}}}}
	if err := Check(ctx, &Env{Root: t.TempDir(), Proc: "/proc/sys", Sys: "/sys"}, Steps(bad)); err == nil || !strings.Contains(err.Error(), "spec.host.sysctl[net.ipv4.no_such_parameter]") {
		t.Errorf("unknown key: %v", err)
	}
}
