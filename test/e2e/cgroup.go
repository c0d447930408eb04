//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// On a cgroup v1 host systemd-nspawn roots the machine's cgroup namespace at
// the cgroups its own process is in. Started from the same cgroups, two
// machines would share one "/kubepods" and each kubelet would remove the
// other's pod cgroups as orphans. So every machine gets its own cgroup in
// each hierarchy, below the test process's cgroup there, and systemd-nspawn
// is started inside them.
//
// That includes the unified (cgroup v2) hierarchy a hybrid host mounts
// besides the v1 controllers (see machineCgroups).
//
// The cgroup's name carries the run as well as the machine
// (machineadm-e2e-RUN-NAME): a machine never boots into a cgroup an
// earlier machine of the same name used.

// cgroupRemoveTimeout bounds how long removal waits for the last
// processes of a stopped machine to leave its cgroups.
const cgroupRemoveTimeout = 20 * time.Second

// machineCgroups creates the cgroups of one machine (named by
// cgroupName) and returns their directories. A cgroup that exists already
// is an error: it would be shared.
func machineCgroups(cgroupName string) ([]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mount string
		if parts[0] == "0" && parts[1] == "" {
			// The unified (cgroup v2) hierarchy of a hybrid host. The
			// machine needs its own cgroup here too: systemd-nspawn takes
			// its own cgroup from this hierarchy, creates the container's
			// "payload" (and its own "supervisor") below it, and moves the
			// container's name=systemd cgroup to the same path. Without it
			// every machine's systemd shared /payload in both hierarchies,
			// and one machine removing a unit's cgroup broke the same unit
			// starting in another ("Failed to attach to cgroup
			// /system.slice/...: No such device").
			if mount = cgroup2Mount(); mount == "" {
				continue
			}
		} else {
			mount = filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(parts[1], "name="))
		}
		if _, err := os.Stat(filepath.Join(mount, "cgroup.procs")); err != nil {
			continue // a co-mounted hierarchy is reached through its other name
		}
		dir := filepath.Join(mount, parts[2], cgroupName)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if strings.Contains(","+parts[1]+",", ",cpuset,") {
			// A new v1 cpuset has no CPUs or memory nodes: inherit the parent's.
			for _, k := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), k))
				if err != nil {
					return nil, err
				}
				if err := os.WriteFile(filepath.Join(dir, k), v, 0o644); err != nil {
					return nil, fmt.Errorf("cgroup %s/%s: %w", dir, k, err)
				}
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs, sc.Err()
}

// cgroup2Mount returns where the unified cgroup hierarchy is mounted, or
// "" without one.
func cgroup2Mount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) > 4 && len(g) > 0 && g[0] == "cgroup2" {
			return f[4]
		}
	}
	return ""
}

// removeCgroups removes the machine cgroups and everything the machine
// created below them, deepest first. A stopped machine's last processes
// leave asynchronously (they are killed with its PID namespace and reaped
// later), so a busy cgroup is retried, with the processes still in it
// killed, for at most cgroupRemoveTimeout; what still stays is reported.
//
// It returns how many removal attempts found a cgroup busy.
func removeCgroups(dirs []string) (busy int, err error) {
	deadline := time.Now().Add(cgroupRemoveTimeout)
	for {
		err := removeCgroupsOnce(dirs)
		if err == nil || time.Now().After(deadline) {
			return busy, err
		}
		busy++
		killCgroupProcs(dirs)
		time.Sleep(200 * time.Millisecond)
	}
}

// killCgroupProcs sends SIGKILL to every process in the cgroup trees.
func killCgroupProcs(dirs []string) {
	for _, root := range dirs {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

func removeCgroupsOnce(dirs []string) error {
	var errs []string
	for _, root := range dirs {
		var all []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
		for _, p := range all {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove cgroups: %s", strings.Join(errs, "; "))
	}
	return nil
}
