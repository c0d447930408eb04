//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The overlay's boot units: nspawn fix-ups (cgroups read-write, kubelet
// tunables) and the import of the preloaded images.
const (
	setupUnit  = "machineadm-e2e-nspawn-setup.service"
	importUnit = "machineadm-e2e-import-images.service"
)

// Bounds of the machine lifecycle.
const (
	leaderTimeout   = 30 * time.Second
	bootTimeout     = 4 * time.Minute // w2 boots through cloud-init running the whole bootstrap
	poweroffTimeout = 60 * time.Second
)

// Machine is one systemd-nspawn container booted from a copy of the cached
// root filesystem, with systemd as its PID 1 and a fixed address on the
// harness bridge.
type Machine struct {
	// Name is the machine name, its host name and its Node name.
	Name string
	// IP is its address on the harness bridge.
	IP string
	// Dir holds root/ (its root filesystem), console.log and nspawn.pid.
	Dir string
	// Root is Dir/root, the machine's "/" as seen from the host.
	Root string

	// MayDegrade accepts a boot that ends "degraded" (a unit failed on
	// purpose); Boot then returns nil and the test checks the unit.
	MayDegrade bool
	// BindRO are host directories mounted read-only into the machine,
	// "HOST:MACHINE" (systemd-nspawn --bind-ro).
	BindRO []string
	// Detached machines outlive the test process: systemd-nspawn gets no
	// parent-death signal (the demo keeps its cluster, demo.go).
	Detached bool
	binds    []string // read-write bind mounts, "HOST:MACHINE"

	cmd     *exec.Cmd
	cgroups []string      // the machine's own cgroups, one per hierarchy
	leader  int           // host PID of the machine's systemd
	exited  chan struct{} // closed when systemd-nspawn has exited
	logf    func(string, ...any)
}

// hostsEntry is one line of the machines' /etc/hosts.
type hostsEntry struct{ IP, Name string }

// newMachine copies the base root filesystem into dir, lays the e2e
// overlay (hack/e2e/rootfs: boot fix-ups for nspawn) over it and writes the
// machine's identity: host name, /etc/hosts with every harness machine, a
// fresh machine ID and a systemd-networkd file with its static address.
func newMachine(ctx context.Context, baseRoot, overlay, dir, name, ip string, hosts []hostsEntry, logf func(string, ...any)) (*Machine, error) {
	m := &Machine{Name: name, IP: ip, Dir: dir, Root: filepath.Join(dir, "root"), logf: logf}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	start := time.Now()
	// The machine's root is an overlay over the shared, read-only base: no
	// copy, and everything the machine writes stays in Dir/upper.
	// containerd's overlayfs snapshotter cannot work on an overlay, so its
	// state directory is a plain host directory bind-mounted at boot.
	for _, d := range []string{m.Root, filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "containerd")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", baseRoot, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if err := syscall.Mount("overlay", m.Root, "overlay", 0, opts); err != nil {
		return nil, fmt.Errorf("mount overlay root filesystem: %w", err)
	}
	m.binds = append(m.binds, filepath.Join(dir, "containerd")+":/var/lib/containerd")
	if out, err := exec.CommandContext(ctx, "cp", "-a", overlay+"/.", m.Root+"/").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy overlay: %w: %s", err, out)
	}
	if err := m.enableUnit(setupUnit, "sysinit.target"); err != nil {
		return nil, err
	}
	if err := m.enableUnit(importUnit, "multi-user.target"); err != nil {
		return nil, err
	}
	var hostsFile strings.Builder
	hostsFile.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, h := range hosts {
		fmt.Fprintf(&hostsFile, "%s\t%s\n", h.IP, h.Name)
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	files := map[string]string{
		"/etc/hostname":   name + "\n",
		"/etc/hosts":      hostsFile.String(),
		"/etc/machine-id": hex.EncodeToString(id) + "\n",
		// No name server: nothing in a machine resolves names outside /etc/hosts.
		"/etc/resolv.conf":                      "# machineadm e2e machine: no DNS\n",
		"/etc/systemd/network/10-host0.network": networkdConfig(ip, hosts),
	}
	for p, c := range files {
		if err := m.WriteFile(p, []byte(c), 0o644); err != nil {
			return nil, err
		}
	}
	logf("machine %s: root filesystem ready in %s", name, time.Since(start).Round(time.Millisecond))
	return m, nil
}

// networkdConfig is the machine's systemd-networkd file: its static
// address on the bridge and, for pod traffic between nodes, a route to
// every other machine's pod CIDR (the bridge CNI's host-local range, see
// podCIDR) through that machine's address: the static routes a flat
// network needs instead of an overlay.
func networkdConfig(ip string, hosts []hostsEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Match]\nName=host0\n\n[Network]\nAddress=%s/24\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n", ip)
	for _, h := range hosts {
		if h.IP != ip {
			fmt.Fprintf(&b, "\n[Route]\nDestination=%s\nGateway=%s\n", podCIDR(h), h.IP)
		}
	}
	return b.String()
}

// enableUnit enables a unit of /etc/systemd/system as systemctl enable
// would, by a symlink in the target's .wants directory.
func (m *Machine) enableUnit(unit, target string) error {
	wants := filepath.Join(m.Root, "etc/systemd/system", target+".wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		return err
	}
	if err := os.Symlink("/etc/systemd/system/"+unit, filepath.Join(wants, unit)); err != nil && !os.IsExist(err) {
		return err
	}
	return nil
}

// WriteFile writes a file into the machine's root filesystem, creating its
// parent directories (0755).
func (m *Machine) WriteFile(path string, data []byte, mode os.FileMode) error {
	p := filepath.Join(m.Root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	_ = os.Remove(p) // a symlink in the base (e.g. resolv.conf) is replaced, never followed
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

// ReadFile reads a file of the machine's root filesystem.
func (m *Machine) ReadFile(path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(m.Root, path))
}

// Boot starts systemd-nspawn and waits until systemd inside reports the
// system running (or degraded, which is returned as an error naming the
// failed units).
func (m *Machine) Boot(ctx context.Context) error {
	console, err := os.Create(filepath.Join(m.Dir, "console.log"))
	if err != nil {
		return err
	}
	start := time.Now()
	// The run directory's name is the run's ID (see Machine.Dir).
	cgroupName := "machineadm-e2e-" + filepath.Base(filepath.Dir(m.Dir)) + "-" + m.Name
	if m.cgroups, err = machineCgroups(cgroupName); err != nil {
		console.Close()
		return err
	}
	// The shell moves itself into the machine's cgroups, then becomes
	// systemd-nspawn, which roots the machine's cgroup namespace there.
	m.cmd = exec.Command("/bin/sh", "-c", `for d in $MAE2E_CGROUPS; do echo $$ >"$d/cgroup.procs"; done; exec "$@"`,
		"sh", "systemd-nspawn", "--boot", "--register=no", "--keep-unit",
		"--capability=all", "--directory="+m.Root, "--machine="+m.Name,
		"--network-bridge="+bridgeName, "--resolv-conf=off", "--timezone=off",
		"--link-journal=no", "--console=read-only")
	for _, b := range m.BindRO {
		m.cmd.Args = append(m.cmd.Args, "--bind-ro="+b)
	}
	for _, b := range m.binds {
		m.cmd.Args = append(m.cmd.Args, "--bind="+b)
	}
	// No systemd on the host: nspawn cannot take its usual image lock.
	m.cmd.Env = append(os.Environ(), "SYSTEMD_NSPAWN_LOCK=0", "MAE2E_CGROUPS="+strings.Join(m.cgroups, " "))
	m.cmd.Stdout, m.cmd.Stderr = console, console
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if m.Detached {
		m.cmd.SysProcAttr.Pdeathsig = 0
	}
	if err := m.cmd.Start(); err != nil {
		console.Close()
		return fmt.Errorf("start systemd-nspawn: %w", err)
	}
	m.exited = make(chan struct{})
	go func() { _ = m.cmd.Wait(); console.Close(); close(m.exited) }()
	if err := os.WriteFile(filepath.Join(m.Dir, "nspawn.pid"), []byte(strconv.Itoa(m.cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	if m.leader, err = m.findLeader(ctx); err != nil {
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, bootTimeout)
	defer cancel()
	var res ExecResult
	for {
		// Until systemd has created its bus socket, systemctl cannot ask;
		// until it has created /run/systemd/system (just after the leader
		// appears), systemctl answers "offline" at once.
		res, err = m.Exec(bctx, nil, "systemctl", "is-system-running", "--wait")
		early := strings.Contains(res.Stderr, "Failed to connect to bus") || strings.TrimSpace(res.Stdout) == "offline"
		if !early || bctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	state := strings.TrimSpace(res.Stdout)
	m.logf("machine %s: systemd %s after %s (leader pid %d)", m.Name, state, time.Since(start).Round(time.Millisecond), m.leader)
	if state == "running" || (state == "degraded" && m.MayDegrade) {
		return nil
	}
	return fmt.Errorf("machine %s: system state %q after %s (%v)%s", m.Name, state, time.Since(start).Round(time.Second), err, m.bootDiagnostics(ctx))
}

// bootDiagnostics says why a boot did not end "running": the failed
// units, the jobs still queued (a boot that never ends waits on one of
// them), the warnings other than the kubelet's restarts (it restarts every
// few seconds until a bootstrap configures it, and would fill any
// window), and the end of cloud-init's output when cloud-init ran. The
// part that names the cause comes last: a CI log keeps the tail.
func (m *Machine) bootDiagnostics(ctx context.Context) string {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var b strings.Builder
	section := func(title string, args ...string) {
		res, err := m.Exec(dctx, nil, args...)
		out := strings.TrimSpace(res.Stdout)
		if err != nil && out == "" {
			out = fmt.Sprintf("(%v) %s", err, strings.TrimSpace(res.Stderr))
		}
		fmt.Fprintf(&b, "\n%s:\n%s", title, out)
	}
	logs, _ := m.Exec(dctx, nil, "journalctl", "--no-pager", "-n", "400", "-p", "warning", "-o", "short-monotonic")
	var kept []string
	for _, l := range strings.Split(logs.Stdout, "\n") {
		if l != "" && !strings.Contains(l, "kubelet.service") {
			kept = append(kept, l)
		}
	}
	if len(kept) > 25 {
		kept = kept[len(kept)-25:]
	}
	fmt.Fprintf(&b, "\nwarnings (kubelet restarts left out):\n%s", strings.Join(kept, "\n"))
	var fs syscall.Statfs_t
	if err := syscall.Statfs(m.Dir, &fs); err == nil {
		fmt.Fprintf(&b, "\nhost disk: %.1f GiB available to the run directory", float64(fs.Bavail)*float64(fs.Bsize)/(1<<30))
	}
	section("failed units", "systemctl", "--failed", "--no-legend", "--plain")
	if _, err := os.Stat(filepath.Join(m.Root, "var/log/cloud-init-output.log")); err == nil {
		section("cloud-init output (last 25 lines)", "tail", "-n", "25", "/var/log/cloud-init-output.log")
	}
	section("boot jobs still queued", "systemctl", "list-jobs", "--no-legend", "--plain")
	return b.String()
}

// findLeader waits for the machine's systemd and returns its host PID.
func (m *Machine) findLeader(ctx context.Context) (int, error) {
	deadline := time.Now().Add(leaderTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-m.exited:
			return 0, fmt.Errorf("machine %s: systemd-nspawn exited during boot; see %s/console.log", m.Name, m.Dir)
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		for _, pid := range descendants(m.cmd.Process.Pid) {
			if commOf(pid) == "systemd" {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("machine %s: no systemd after %s", m.Name, leaderTimeout)
}

// commOf is the command name of a host PID, "" when it is gone.
func commOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// descendants lists the PIDs below pid, breadth first.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// ExecResult is the outcome of a command run in a machine.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int
	// MaxRSSKiB is, after ExecPeakRSS, the peak resident set of the
	// command's process tree (the kernel's ru_maxrss of it and its
	// waited-for descendants: the VmHWM of the largest one), in KiB; 0
	// after Exec. (Exec cannot measure it: Go starts a child with vfork,
	// and the kernel counts the parent's own peak, this test process's,
	// into the child's ru_maxrss when it execs.)
	MaxRSSKiB int64
}

// Exec runs a command inside the machine (all of its namespaces, its root,
// a clean environment) and returns its output. A non-zero exit is an error
// of type *exec.ExitError with the result filled in.
func (m *Machine) Exec(ctx context.Context, stdin []byte, args ...string) (ExecResult, error) {
	// Like systemd-nspawn, the command first joins the machine's cgroups, so
	// everything it starts is accounted to (and cleaned up with) the machine.
	full := append([]string{"-c", `for d in $MAE2E_CGROUPS; do echo $$ >"$d/cgroup.procs"; done; exec "$@"`, "sh",
		"nsenter", "-t", strconv.Itoa(m.leader), "-a", "--", "/usr/bin/env", "-i",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}, args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", full...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "MAE2E_CGROUPS=" + strings.Join(m.cgroups, " ")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}
	if err != nil {
		return res, fmt.Errorf("%s: %s: %w: %s", m.Name, strings.Join(args, " "), err, strings.TrimSpace(tail(res.Stderr, 5)))
	}
	return res, nil
}

// Stop powers the machine off (systemd-nspawn turns SIGTERM into an orderly
// shutdown), kills it when that takes longer than poweroffTimeout, and
// removes its cgroups.
func (m *Machine) Stop() error {
	if err := m.stop(); err != nil {
		return err
	}
	busy, err := removeCgroups(m.cgroups)
	if busy > 0 {
		// The race a single attempt lost (see cgroup.go).
		stopLogf("machine %s: cgroups still busy after power-off, removed after %d retries: %v", m.Name, busy, err)
	}
	if err != nil {
		return err
	}
	if err := syscall.Unmount(m.Root, 0); err != nil && err != syscall.EINVAL {
		return fmt.Errorf("unmount %s: %w", m.Root, err)
	}
	return m.waitVethGone()
}

// vethGrace is how long Stop lets the kernel remove a stopped machine's
// host-side veth before it deletes the veth itself; vethGoneTimeout
// bounds the wait after that.
const (
	vethGrace       = 3 * time.Second
	vethGoneTimeout = 10 * time.Second
)

// waitVethGone makes sure the host side of the stopped machine's veth
// (systemd-nspawn's "vb-NAME") is gone. A machine that did not power off
// and was killed can leave its network namespace, and the veth pair in
// it, behind (seen for Systemd control planes, whose namespace outlived
// the kill by more than 30 s): the next machine of the same name (the
// same veth) then failed with systemd-nspawn exiting during boot. After
// vethGrace the veth is deleted (`ip link del`, which removes both ends;
// its machine is gone). Names longer than an interface name allows are
// shortened by systemd-nspawn in its own way and are left alone.
func (m *Machine) waitVethGone() error {
	veth := "vb-" + m.Name
	if len(veth) > 15 {
		return nil
	}
	gone := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for {
			if _, err := net.InterfaceByName(veth); err != nil {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if gone(vethGrace) {
		return nil
	}
	out, err := exec.Command("ip", "link", "del", veth).CombinedOutput()
	if gone(vethGoneTimeout) {
		stopLogf("machine %s: its veth %s outlived it; deleted", m.Name, veth)
		return nil
	}
	return fmt.Errorf("machine %s stopped, but its veth %s is still there (ip link del: %v %s)", m.Name, veth, err, strings.TrimSpace(string(out)))
}

// prunedDirs are the parts of a stopped machine's directory that prune
// removes: the overlay's upper and work directories (every file the
// machine wrote: binaries, etcd's data, logs) and its containerd state
// (the images it imported and their snapshots), about 1.4 GiB for a
// control plane. Its console.log and bootstrap.log stay.
var prunedDirs = []string{"upper", "work", "containerd"}

// prune removes a stopped machine's prunedDirs. A run boots some 40
// machines; kept until the run's end, their state filled the disk in the
// last tests (an ENOSPC in a machine shows as a boot that never ends or a
// write that fails). Nothing reads a machine's files after it stopped: a
// machine is never booted again. It refuses while anything is still
// mounted below the machine's directory (it logs and keeps it), so it can
// never remove through a mount into the host.
func (m *Machine) prune() error {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == m.Dir || strings.HasPrefix(f[4], m.Dir+"/")) {
			stopLogf("machine %s: %s is still mounted; its directory is kept whole", m.Name, f[4])
			return nil
		}
	}
	for _, d := range prunedDirs {
		if err := os.RemoveAll(filepath.Join(m.Dir, d)); err != nil {
			return fmt.Errorf("machine %s: %w", m.Name, err)
		}
	}
	return nil
}

// stopLogf logs while stopping machines. Not the booting test's t.Logf:
// machines are also stopped by TestMain's teardown, after every test has
// completed, when t.Logf would panic.
func stopLogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}

func (m *Machine) stop() error {
	if m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	select {
	case <-m.exited:
		return nil
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		return nil
	case <-time.After(poweroffTimeout):
	}
	stopLogf("machine %s: no power-off after %s, killing%s", m.Name, poweroffTimeout, stopJobsNote(filepath.Join(m.Dir, "console.log")))
	if m.leader > 0 {
		_ = syscall.Kill(m.leader, syscall.SIGKILL)
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-m.exited:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("systemd-nspawn still running after SIGKILL")
	}
}

// stopJobRE matches systemd's shutdown progress line on the console, "A
// stop job is running for DESCRIPTION (12s / 1min)" or, in newer
// versions, "Job UNIT/stop running (58s / 1min)".
var stopJobRE = regexp.MustCompile(`(?:A stop job is running for (.+?)|Job (\S+)/stop running) \(\d[^)]*/[^)]*\)`)

// stopJobs returns, once each and in order of first appearance, the unit
// descriptions that systemd's console said it was still waiting for while
// shutting down, and the one its last progress line named: the earlier
// ones may have stopped since, the last is what the machine still waited
// for when it was killed.
func stopJobs(console string) (all []string, last string) {
	seen := map[string]bool{}
	for _, m := range stopJobRE.FindAllStringSubmatch(console, -1) {
		last = strings.TrimSpace(m[1] + m[2])
		if !seen[last] {
			seen[last] = true
			all = append(all, last)
		}
	}
	return all, last
}

// stopJobsNote is stopJobs of the console log at path as a suffix for the
// kill message ("; … waiting for: A, B (last shown: B)"), or, when the
// console names none, its last lines; "" when it cannot be read or is
// empty.
func stopJobsNote(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	// Escape sequences and carriage returns of the progress display
	// would split a description.
	clean := regexp.MustCompile("\x1b(?:\\[[0-9;]*[A-Za-z]|[@-Z\\\\-_])").ReplaceAllString(string(b), "")
	clean = strings.ReplaceAll(clean, "\r", "\n")
	if jobs, last := stopJobs(clean); len(jobs) > 0 {
		return "; its console says shutdown was waiting for: " + strings.Join(jobs, ", ") + " (last shown: " + last + ")"
	}
	// No progress line (systemd shows one only after a while): the
	// console's last lines say where shutdown stands.
	var last []string
	for _, l := range strings.Split(clean, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			last = append(last, l)
		}
	}
	if len(last) == 0 {
		return ""
	}
	return "; its console ends:\n\t" + strings.Join(last[max(0, len(last)-8):], "\n\t")
}
