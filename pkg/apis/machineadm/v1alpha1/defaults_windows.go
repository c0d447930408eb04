//go:build windows

package v1alpha1

// Defaults of a Windows build: Windows' own endpoint and paths, so that
// kubeadm never rewrites a Unix CRI socket into a named pipe.
const (
	// DefaultCRISocket is containerd's CRI named pipe on Windows
	// (containerd defaults.DefaultAddress, kubeadm's Windows
	// DefaultCRISocket).
	DefaultCRISocket = "npipe:////./pipe/containerd-containerd"
	// DefaultContainerdConfig is containerd's configuration file on
	// Windows (containerd defaults.DefaultConfigDir).
	DefaultContainerdConfig = "C:/Program Files/containerd/config.toml"
	// DefaultRuntimeName is containerd's default runtime handler on
	// Windows: process-isolated Windows containers.
	DefaultRuntimeName = "runhcs-wcow-process"
	// DefaultRuntimeType is the Windows shim (hcsshim's runhcs).
	DefaultRuntimeType = "io.containerd.runhcs.v1"
	// DefaultReportPath is where the outcome report is written.
	DefaultReportPath = "C:/ProgramData/machineadm/report.json"
	// DefaultSentinel is Cluster API's bootstrap sentinel file on the
	// system drive.
	DefaultSentinel = "C:/run/cluster-api/bootstrap-success.complete"
)

// setOSDefaults has nothing to fill on Windows: the domain join needs no
// keytab (spec.host.domainJoin.linux is refused by validation).
func setOSDefaults(*MachineBootstrapSpec) {}
