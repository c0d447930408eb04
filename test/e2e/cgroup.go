//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// On a cgroup v1 host systemd-nspawn roots the machine's cgroup namespace at
// the cgroups its own process is in. Started from the same cgroups, two
// machines would share one "/kubepods" and each kubelet would remove the
// other's pod cgroups as orphans. So every machine gets its own cgroup in
// each hierarchy, below the test process's cgroup there, and systemd-nspawn
// is started inside them.

// machineCgroups creates the cgroups of one machine and returns their
// directories.
func machineCgroups(name string) ([]string, error) {
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
		if len(parts) != 3 || parts[1] == "" {
			continue // the cgroup v2 line of a hybrid host
		}
		mount := filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(parts[1], "name="))
		if _, err := os.Stat(filepath.Join(mount, "cgroup.procs")); err != nil {
			continue // a co-mounted hierarchy is reached through its other name
		}
		dir := filepath.Join(mount, parts[2], "machineadm-e2e-"+name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
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

// removeCgroups removes the machine cgroups and everything the machine
// created below them, deepest first. Cgroups still holding processes stay
// and are reported.
func removeCgroups(dirs []string) error {
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
