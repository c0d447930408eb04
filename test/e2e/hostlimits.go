//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The nspawn machines share the host's user namespace, so every inotify
// instance of every machine counts against the host's per-user limit
// fs.inotify.max_user_instances (128 on a stock kernel). One machine
// running a control plane takes about 25 (systemd 5, the kubelet 7, the
// API server 6, the controller manager 4, containerd, kube-proxy), and
// TestControlPlaneProvider runs the management machine, three control
// planes, a worker and a rollout's fourth control plane at once: the
// sixth machine's containerd could not make its CNI configuration
// watcher ("failed to create fsnotify watcher: too many open files"), so
// its CRI plugin never loaded and machineadm failed in phase containerd.
const (
	inotifyInstancesPath = "/proc/sys/fs/inotify/max_user_instances"
	// e2eInotifyInstances is the limit a run needs: room for about 40
	// such machines.
	e2eInotifyInstances = 1024
)

// raiseInotifyInstances raises fs.inotify.max_user_instances to
// e2eInotifyInstances when it is lower, and returns the value to put
// back at the end of the run (0: nothing changed).
func raiseInotifyInstances() (restore int, err error) {
	cur, err := readSysctlInt(inotifyInstancesPath)
	if err != nil {
		return 0, err
	}
	if cur >= e2eInotifyInstances {
		return 0, nil
	}
	if err := os.WriteFile(inotifyInstancesPath, []byte(strconv.Itoa(e2eInotifyInstances)+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("raising %s from %d to %d (the machines share the host's inotify instances): %w", inotifyInstancesPath, cur, e2eInotifyInstances, err)
	}
	return cur, nil
}

// restoreInotifyInstances puts back the limit raiseInotifyInstances
// found, unless the run changed nothing or someone else changed it since.
func restoreInotifyInstances(old int) error {
	if old == 0 {
		return nil
	}
	if cur, err := readSysctlInt(inotifyInstancesPath); err != nil || cur != e2eInotifyInstances {
		return err
	}
	return os.WriteFile(inotifyInstancesPath, []byte(strconv.Itoa(old)+"\n"), 0o644)
}

func readSysctlInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
