package windows

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/windows/svc"
)

// RunKubeletService is the body of `machineadm.exe kubelet-service
// --kubelet PATH`, the program of the kubelet service (KubeletService).
// Under the service control manager it reads KubeadmFlagsFile at each
// start, runs the kubelet with KubeletCommand as a child process, reports
// Running, and stops the kubelet on a stop or shutdown request. When the
// kubelet exits by itself the service stops with an error and the
// recovery action restarts it. Run outside the service control manager
// (interactively) it returns an error.
func RunKubeletService(kubeletPath string, log *slog.Logger) error {
	inService, err := svc.IsWindowsService()
	if err != nil {
		return err
	}
	if !inService {
		return fmt.Errorf("%s runs as the Windows service %q only", KubeletServiceCommand, KubeletServiceName)
	}
	return svc.Run(KubeletServiceName, &kubeletHandler{kubelet: kubeletPath, log: log})
}

type kubeletHandler struct {
	kubelet string
	log     *slog.Logger
}

// Execute implements svc.Handler.
func (h *kubeletHandler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	var flags []string
	if data, err := os.ReadFile(KubeadmFlagsFile); err == nil {
		if flags, err = ParseKubeadmFlags(data); err != nil {
			h.log.Error("kubeadm flags file", "file", KubeadmFlagsFile, "err", err)
			return false, 1
		}
	}
	argv := KubeletCommand(h.kubelet, flags)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		h.log.Error("starting the kubelet", "err", err)
		return false, 2
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-exited:
			h.log.Error("the kubelet exited", "err", err)
			return false, 3
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending, WaitHint: uint32((10 * time.Second).Milliseconds())}
				_ = cmd.Process.Kill()
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
				}
				return false, 0
			}
		}
	}
}
