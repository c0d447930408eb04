//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// The harness runs in a network namespace of its own: the test binary
// re-executes itself under `unshare --net` (util-linux), so the bridge,
// its address, the machines' veths, the agent server and every client the
// test uses (client-go, Ignition's downloads) live there, with only
// loopback and the bridge and no default route. Nothing of the e2e's
// network is in the host's namespace, and a missing bridge cannot send the
// machines' packets along the host's default route. The namespace
// disappears with the last process in it, so no run leaves a bridge or a
// veth behind. The demo (demo.go) runs in a named namespace instead
// (MACHINEADM_E2E_NETNS, /run/netns/NAME, made by hack/e2e/demo.sh), which
// stays, with the kept cluster's bridge, until `make demo-down`.
const (
	// inNetnsEnv marks the re-executed test binary.
	inNetnsEnv = "MACHINEADM_E2E_IN_NETNS"
	// hostNetnsEnv names the network namespace the harness left
	// (/proc/PID/ns/net of the waiting parent), for checkClosedNetwork.
	hostNetnsEnv = "MACHINEADM_E2E_HOST_NETNS"
	machineNet   = "10.213.0.0/24"
)

// runInOwnNetns re-executes the test binary, with the same arguments, in a
// new network namespace (or the one MACHINEADM_E2E_NETNS names) and
// returns its exit code. The child is killed if this process dies.
func runInOwnNetns() int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: needs root (network namespace, systemd-nspawn, bridges, cgroups)")
		return 1
	}
	// A named namespace (the demo's, netnsEnv) instead of a new one.
	cmd := exec.Command("unshare", append([]string{"--net", "--", os.Args[0]}, os.Args[1:]...)...)
	if ns := os.Getenv(netnsEnv); ns != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + ns, "--", os.Args[0]}, os.Args[1:]...)...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNetnsEnv+"=1", hostNetnsEnv+"=/proc/"+strconv.Itoa(os.Getpid())+"/ns/net")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "e2e: %s: %v\n", cmd.Args[0], err)
		return 1
	}
	return 0
}

// setupNetns brings the namespace's loopback up (a new namespace has it
// down) and checks the namespace is not the host's.
func setupNetns(ctx context.Context) error {
	if os.Getenv(inNetnsEnv) != "1" {
		return errors.New("not in the harness's own network namespace")
	}
	self, host, err := netnsIDs()
	if err != nil {
		return err
	}
	if self == host {
		return fmt.Errorf("the harness's network namespace is the host's (%s)", self)
	}
	if out, err := exec.CommandContext(ctx, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %w: %s", err, out)
	}
	return nil
}

func netnsIDs() (self, host string, err error) {
	if self, err = os.Readlink("/proc/self/ns/net"); err != nil {
		return "", "", err
	}
	hostPath := os.Getenv(hostNetnsEnv)
	if hostPath == "" {
		return "", "", fmt.Errorf("%s is not set", hostNetnsEnv)
	}
	if host, err = os.Readlink(hostPath); err != nil {
		return "", "", fmt.Errorf("host network namespace: %w", err)
	}
	return self, host, nil
}

// checkClosedNetwork checks, while machines run, that the host's network
// namespace holds no route into the machines' subnet, no address in it
// and no harness bridge, and that the harness's own namespace has no
// default route and no links but loopback, the bridge and the machines'
// veths (systemd-nspawn's "vb-NAME").
func checkClosedNetwork(ctx context.Context) error {
	self, host, err := netnsIDs()
	if err != nil {
		return err
	}
	if self == host {
		return fmt.Errorf("running in the host's network namespace %s", host)
	}
	hostNS := os.Getenv(hostNetnsEnv)
	inHost := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + hostNS, "ip"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	var errs []error
	for _, q := range [][]string{
		{"-4", "-o", "route", "show", "table", "all", "root", machineNet},
		{"-4", "-o", "addr", "show", "to", machineNet},
	} {
		out, err := inHost(q...)
		if err != nil {
			errs = append(errs, fmt.Errorf("host namespace: ip %s: %w: %s", strings.Join(q, " "), err, out))
		} else if out != "" {
			errs = append(errs, fmt.Errorf("host namespace: ip %s: %s", strings.Join(q, " "), out))
		}
	}
	if out, err := inHost("-o", "link", "show", bridgeName); err == nil {
		errs = append(errs, fmt.Errorf("host namespace has the harness bridge: %s", out))
	}
	for _, fam := range []string{"-4", "-6"} {
		out, err := exec.CommandContext(ctx, "ip", fam, "route", "show", "default").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			errs = append(errs, fmt.Errorf("harness namespace: ip %s route show default: %q %v", fam, out, err))
		}
	}
	out, err := exec.CommandContext(ctx, "ip", "-o", "link", "show").CombinedOutput()
	if err != nil {
		errs = append(errs, fmt.Errorf("harness namespace: ip link: %w", err))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if name != "lo" && name != bridgeName && !strings.HasPrefix(name, "vb-") {
			errs = append(errs, fmt.Errorf("harness namespace has link %q", name))
		}
	}
	return errors.Join(errs...)
}
