// Command pause is the e2e machines' pod sandbox process: it holds the pod's
// namespaces open, reaps orphaned children (it is PID 1 of the sandbox) and
// exits 0 on SIGTERM or SIGINT. Built static and packed into the pause image
// by hack/e2e/components.sh.
//
// Like the pause of the Kubernetes images, "-v" prints its version and
// exits 0: kubeadm's upgrade preflight (the CreateJob check) runs a Job of
// the pause image with that argument and waits up to 60 s for it to
// complete.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is what "-v" prints.
const version = "machineadm-e2e pause v1"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println(version)
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
