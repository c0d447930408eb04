//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Paths and versions shared with hack/e2e/lib.sh (keep in sync).
const (
	kubernetesVersion = "v1.37.2"
	imageRepository   = "registry.e2e.invalid"
	pauseImage        = imageRepository + "/pause:3.10.2"
	podSubnet         = "10.244.0.0/16"
)

// env is the state of one e2e run: the cache it reads, the directory its
// machines live in, and every machine it booted (all stopped and removed
// at the end, whatever happened).
type env struct {
	cache      string // MACHINEADM_E2E_CACHE
	repo       string // repository root
	runDir     string // this run's machines
	machineadm string // the machineadm binary copied into machines
	keep       bool   // MACHINEADM_E2E_KEEP=1: keep failed machines
	demo       *demo  // `make demo` (demo.go): nil in other runs
	// inotifyRestore is the host's fs.inotify.max_user_instances before
	// the run raised it (hostlimits.go); 0 when it was high enough.
	inotifyRestore int

	mu       sync.Mutex
	machines []*Machine
}

// theEnv is set up by TestMain.
var theEnv *env

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// setupEnv checks the prerequisites, removes what a killed earlier run left
// behind, raises the host's inotify instance limit for the machines
// (raiseInotifyInstances; teardown puts it back) and creates the bridge.
func setupEnv(ctx context.Context) (*env, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the e2e test needs root (systemd-nspawn, bridges, cgroups)")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	e := &env{
		cache:      getenv("MACHINEADM_E2E_CACHE", "/var/cache/machineadm-e2e"),
		repo:       repo,
		machineadm: getenv("MACHINEADM_BIN", filepath.Join(repo, "bin/machineadm")),
		keep:       os.Getenv("MACHINEADM_E2E_KEEP") == "1",
	}
	for _, p := range []string{e.machineadm, e.baseRoot(), e.binPath("kubelet"), e.imagePath("pause")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("missing %s: run `make e2e-prepare` and `make build` first", p)
		}
	}
	if err := setupNetns(ctx); err != nil {
		return nil, err
	}
	if e.demo, err = openDemo(); err != nil {
		return nil, err
	}
	if e.demo == nil && demoUp() {
		return nil, fmt.Errorf("a demo cluster of `make demo` is up (or being made, or left behind: %s exists), "+
			"and this run's clean-up would remove its machines; `make demo-down` removes it", demoNetns)
	}
	work := getenv("MACHINEADM_E2E_WORK", "/var/tmp/machineadm-e2e")
	if err := cleanStale(repo, work); err != nil {
		return nil, err
	}
	e.runDir = filepath.Join(work, time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(e.runDir, 0o700); err != nil {
		return nil, err
	}
	if e.inotifyRestore, err = raiseInotifyInstances(); err != nil {
		return nil, err
	}
	if err := createBridge(ctx); err != nil {
		_ = restoreInotifyInstances(e.inotifyRestore)
		return nil, err
	}
	return e, nil
}

func (e *env) baseRoot() string           { return filepath.Join(e.cache, "rootfs/base") }
func (e *env) binPath(name string) string { return filepath.Join(e.cache, "bin", name) }
func (e *env) imagePath(name string) string {
	return filepath.Join(e.cache, "images", name+".tar")
}

// teardown stops every machine still running, deletes the bridge, puts
// back the host's inotify instance limit and, on success (or without
// MACHINEADM_E2E_KEEP), the run directory.
func (e *env) teardown(failed bool) error {
	var errs []error
	e.mu.Lock()
	ms := e.machines
	e.machines = nil
	e.mu.Unlock()
	for _, m := range ms {
		if err := m.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", m.Name, err))
		}
	}
	if err := deleteBridge(context.Background()); err != nil {
		errs = append(errs, err)
	}
	if err := restoreInotifyInstances(e.inotifyRestore); err != nil {
		errs = append(errs, err)
	}
	if !failed || !e.keep {
		for _, m := range mountsUnder(e.runDir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(e.runDir); err != nil {
			errs = append(errs, err)
		}
	}
	if leftover := mountsUnder(e.runDir); len(leftover) > 0 {
		errs = append(errs, fmt.Errorf("mounts left under %s: %v", e.runDir, leftover))
	}
	return errors.Join(errs...)
}

// cleanStale removes what a killed earlier run left behind (machines,
// mounts, cgroups, bridge ports, run directories) with the same script
// `make e2e` runs after the test.
func cleanStale(repo, work string) error {
	cmd := exec.Command("bash", filepath.Join(repo, "hack/e2e/cleanup.sh"))
	cmd.Env = append(os.Environ(), "MACHINEADM_E2E_WORK="+work)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/e2e/cleanup.sh: %w: %s", err, out)
	}
	return nil
}

// mountsUnder lists the host's mount points below dir.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// bootMachines creates and boots machines in parallel; every machine
// created is registered for teardown even when its boot fails.
func (e *env) bootMachines(ctx context.Context, t *testing.T, specs ...hostsEntry) []*Machine {
	t.Helper()
	return e.bootMachinesWith(ctx, t, bootOptions{}, specs...)
}

// bootOptions change how machines are made before they boot.
type bootOptions struct {
	// withoutAgent leaves machineadm out of the image (a stub fetches it).
	withoutAgent bool
	// prepare runs on each machine's root filesystem before it boots.
	prepare func(*Machine) error
	// mayDegrade accepts machines whose boot ends degraded.
	mayDegrade bool
	// subdir puts the machines in this subdirectory of the run directory,
	// so that a name can be booted again (the benchmark's samples).
	subdir string
}

// bootMachinesWith is bootMachines with options.
func (e *env) bootMachinesWith(ctx context.Context, t *testing.T, opts bootOptions, specs ...hostsEntry) []*Machine {
	t.Helper()
	hosts := allHosts()
	ms := make([]*Machine, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		m, err := newMachine(ctx, e.baseRoot(), filepath.Join(e.repo, "hack/e2e/rootfs"),
			filepath.Join(e.runDir, opts.subdir, s.Name), s.Name, s.IP, hosts, t.Logf)
		if err != nil {
			fatalf(t, "machine %s: %v", s.Name, err)
		}
		e.mu.Lock()
		e.machines = append(e.machines, m)
		e.mu.Unlock()
		if err := e.installNodeComponents(m, opts.withoutAgent); err != nil {
			fatalf(t, "machine %s: %v", s.Name, err)
		}
		if opts.prepare != nil {
			if err := opts.prepare(m); err != nil {
				fatalf(t, "machine %s: %v", s.Name, err)
			}
		}
		m.MayDegrade = opts.mayDegrade
		m.Detached = e.demo != nil
		ms[i] = m
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = ms[i].Boot(ctx)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fatalln(t, err)
	}
	return ms
}

// stopMachine stops one machine now and forgets it. Its prunedDirs go
// too (the run's disk), unless MACHINEADM_E2E_KEEP=1 asks for every
// machine's files: a test stops its machines in deferred calls whether it
// failed or not, and with them went the upper directory the README
// promises a kept failed run (the journal, the report, etcd's and the
// kubelet's logs).
func (e *env) stopMachine(m *Machine) error {
	e.mu.Lock()
	for i, x := range e.machines {
		if x == m {
			e.machines = append(e.machines[:i], e.machines[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	if err := m.Stop(); err != nil {
		return err
	}
	if e.keep {
		return nil
	}
	return m.prune()
}
