//go:build !windows

package v1alpha1

// Defaults of a Linux (and every other non-Windows) build.
const (
	// DefaultCRISocket is containerd's CRI socket on Linux.
	DefaultCRISocket = "unix:///run/containerd/containerd.sock"
	// DefaultContainerdConfig is containerd's configuration file on Linux.
	DefaultContainerdConfig = "/etc/containerd/config.toml"
	// DefaultRuntimeName is containerd's default runtime handler.
	DefaultRuntimeName = "runc"
	// DefaultRuntimeType is the shim of runtimes without a type.
	DefaultRuntimeType = "io.containerd.runc.v2"
	// DefaultReportPath is where the outcome report is written.
	DefaultReportPath = "/var/lib/machineadm/report.json"
	// DefaultSentinel is Cluster API's bootstrap sentinel file.
	DefaultSentinel = "/run/cluster-api/bootstrap-success.complete"
)

// setOSDefaults fills the defaults only a Linux host has: the keytab of
// a domain join.
func setOSDefaults(s *MachineBootstrapSpec) {
	if dj := s.Host.DomainJoin; dj != nil {
		if dj.Linux == nil {
			dj.Linux = &LinuxDomainJoin{}
		}
		setString(&dj.Linux.Keytab, DefaultKeytab)
	}
}
