package windows

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The kubelet service and the files kubeadm writes for it on Windows.
// kubeadm uses its Linux paths on Windows; they resolve on the system
// drive (C:\var\lib\kubelet\...).
const (
	// KubeletServiceName is the service kubeadm's Windows init system
	// starts, stops and checks (kubeadm constants.Kubelet).
	KubeletServiceName = "kubelet"
	// KubeadmFlagsFile is kubeadm's flags file
	// (KUBELET_KUBEADM_ARGS="..."), written by its kubelet-start phase.
	KubeadmFlagsFile = `C:\var\lib\kubelet\kubeadm-flags.env`
	// KubeletConfigFile is the KubeletConfiguration kubeadm writes.
	KubeletConfigFile = `C:\var\lib\kubelet\config.yaml`
	// BootstrapKubeconfig and Kubeconfig are the kubelet's TLS bootstrap
	// and client kubeconfigs.
	BootstrapKubeconfig = `C:\etc\kubernetes\bootstrap-kubelet.conf`
	Kubeconfig          = `C:\etc\kubernetes\kubelet.conf`
	// KubeletCertDir holds the kubelet's certificates.
	KubeletCertDir = `C:\var\lib\kubelet\pki`
	// DefaultKubeletPath is where the image provides kubelet.exe.
	DefaultKubeletPath = `C:\k\kubelet.exe`
	// DefaultMachineadmPath is where the image provides machineadm.exe.
	DefaultMachineadmPath = `C:\Program Files\machineadm\machineadm.exe`
	// ContainerdServiceName is containerd's Windows service.
	ContainerdServiceName = "containerd"
	// KubeletServiceCommand is the machineadm subcommand that runs as the
	// kubelet service (see RunKubeletService).
	KubeletServiceCommand = "kubelet-service"
)

// ServiceDefinition is a Windows service as machineadm registers it.
type ServiceDefinition struct {
	// Name is the service name ("kubelet").
	Name string
	// DisplayName and Description are shown by services.msc.
	DisplayName, Description string
	// Executable is the program the service control manager starts.
	Executable string
	// Args are its arguments.
	Args []string
	// AutoStart starts the service at boot (SERVICE_AUTO_START);
	// kubeadm's ServiceIsEnabled wants a start type other than disabled.
	AutoStart bool
	// Dependencies are services that must run first.
	Dependencies []string
	// RestartDelay restarts the service this long after it fails
	// (recovery action), as systemd's Restart=always for the kubelet.
	RestartDelay time.Duration
}

// CommandLine is the service's BinaryPathName: the executable and its
// arguments, each quoted by the rules CommandLineToArgvW reads back.
func (d ServiceDefinition) CommandLine() string {
	parts := []string{QuoteArg(d.Executable)}
	for _, a := range d.Args {
		parts = append(parts, QuoteArg(a))
	}
	return strings.Join(parts, " ")
}

// KubeletService is the kubelet service kubeadm expects: named
// "kubelet", started automatically after containerd, restarted 10 s
// after a failure. Its program is machineadm itself
// (`machineadm.exe kubelet-service --kubelet PATH`): at every start it
// reads kubeadm's flags file, as the Linux unit's drop-in does, and runs
// the kubelet with KubeletCommand, so that the flags kubeadm writes in
// kubelet-start (node labels, taints, hostname override) take effect at
// the restart kubeadm then asks for. Empty paths take the defaults.
func KubeletService(machineadmPath, kubeletPath string) ServiceDefinition {
	if machineadmPath == "" {
		machineadmPath = DefaultMachineadmPath
	}
	if kubeletPath == "" {
		kubeletPath = DefaultKubeletPath
	}
	return ServiceDefinition{
		Name:         KubeletServiceName,
		DisplayName:  "Kubernetes kubelet",
		Description:  "The Kubernetes node agent, configured by kubeadm and run by machineadm.",
		Executable:   machineadmPath,
		Args:         []string{KubeletServiceCommand, "--kubelet", kubeletPath},
		AutoStart:    true,
		Dependencies: []string{ContainerdServiceName},
		RestartDelay: 10 * time.Second,
	}
}

// ParseKubeadmFlags reads kubeadm's flags file, one line
// KUBELET_KUBEADM_ARGS="--name=value ..." (kubeadm
// phases/kubelet.WriteKubeletDynamicEnvFile), into its flags. A missing
// variable is an error; an empty one gives no flags.
func ParseKubeadmFlags(data []byte) ([]string, error) {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		v, ok := strings.CutPrefix(line, "KUBELET_KUBEADM_ARGS=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return strings.Fields(v), nil
	}
	return nil, fmt.Errorf("no KUBELET_KUBEADM_ARGS line")
}

// KubeletCommand is the kubelet's command line on Windows: kubelet.exe,
// the fixed flags of a kubeadm node (its configuration file, the
// bootstrap and client kubeconfigs, the certificate directory), the
// flags Windows needs (no QoS cgroups, no node-allocatable enforcement,
// no resolv.conf), then kubeadm's flags, which win when repeated
// (the kubelet keeps a flag's last value).
func KubeletCommand(kubeletPath string, kubeadmFlags []string) []string {
	cmd := []string{kubeletPath,
		"--config=" + KubeletConfigFile,
		"--bootstrap-kubeconfig=" + BootstrapKubeconfig,
		"--kubeconfig=" + Kubeconfig,
		"--cert-dir=" + KubeletCertDir,
		"--cgroups-per-qos=false",
		"--enforce-node-allocatable=",
		"--resolv-conf=",
	}
	return append(cmd, slices.Clone(kubeadmFlags)...)
}

// QuoteArg quotes one argument for a Windows command line so that
// CommandLineToArgvW (and Go's os.Args on Windows) read it back
// unchanged: arguments without space, tab or quote stay as they are;
// others are enclosed in quotes, with each quote escaped and the
// backslashes before a quote (or the closing one) doubled.
func QuoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}
