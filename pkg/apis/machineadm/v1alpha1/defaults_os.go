package v1alpha1

// OSDefaults are the defaults that differ by spec.os. Every build knows
// both sets: the spec's OS, not the binary's, chooses (DefaultsFor).
type OSDefaults struct {
	// CRISocket is containerd's CRI endpoint (spec.node.criSocket).
	CRISocket string
	// ContainerdConfig is containerd's configuration file
	// (spec.host.containerd.configFile).
	ContainerdConfig string
	// RuntimeName is containerd's default runtime handler
	// (spec.host.containerd.defaultRuntime); machineadm's containerd
	// configuration always defines it.
	RuntimeName string
	// RuntimeType is the shim of runtimes without a type
	// (spec.host.containerd.runtimes[].type).
	RuntimeType string
	// ReportPath is where the outcome report is written (spec.report.path).
	ReportPath string
	// Sentinel is Cluster API's bootstrap sentinel file
	// (spec.report.sentinel).
	Sentinel string
}

// linuxDefaults are the OS-dependent defaults of spec.os linux.
var linuxDefaults = OSDefaults{
	CRISocket:        "unix:///run/containerd/containerd.sock",
	ContainerdConfig: "/etc/containerd/config.toml",
	RuntimeName:      "runc",
	RuntimeType:      "io.containerd.runc.v2",
	ReportPath:       "/var/lib/machineadm/report.json",
	Sentinel:         "/run/cluster-api/bootstrap-success.complete",
}

// windowsDefaults are the OS-dependent defaults of spec.os windows:
// Windows' own endpoint and paths, so that kubeadm never rewrites a Unix
// CRI socket into a named pipe. The CRI named pipe is containerd's
// defaults.DefaultAddress and kubeadm's Windows DefaultCRISocket; the
// configuration file is under containerd's defaults.DefaultConfigDir; the
// runtime is process-isolated Windows containers with hcsshim's runhcs
// shim; the report and sentinel are on the system drive.
var windowsDefaults = OSDefaults{
	CRISocket:        "npipe:////./pipe/containerd-containerd",
	ContainerdConfig: "C:/Program Files/containerd/config.toml",
	RuntimeName:      "runhcs-wcow-process",
	RuntimeType:      "io.containerd.runhcs.v1",
	ReportPath:       "C:/ProgramData/machineadm/report.json",
	Sentinel:         "C:/run/cluster-api/bootstrap-success.complete",
}

// OSOf returns the OS a spec is for: s.OS, or DefaultOS when it is empty
// (a spec not yet defaulted). An unknown value is returned as is;
// validation refuses it.
func OSOf(s *MachineBootstrapSpec) OS {
	if s.OS == "" {
		return DefaultOS
	}
	return s.OS
}

// DefaultsFor returns the OS-dependent defaults of os: the Windows set for
// OSWindows, the Linux one for OSLinux, and those of DefaultOS for ""
// or an unknown value (which validation refuses at spec.os).
func DefaultsFor(os OS) OSDefaults {
	switch os {
	case OSWindows:
		return windowsDefaults
	case OSLinux:
		return linuxDefaults
	}
	if DefaultOS == OSWindows {
		return windowsDefaults
	}
	return linuxDefaults
}

// setOSDefaults fills the defaults only one OS has: on Linux the keytab of
// a domain join (on Windows spec.host.domainJoin.linux is refused by
// validation: the machine keeps its account secret itself).
func setOSDefaults(s *MachineBootstrapSpec) {
	if OSOf(s) != OSLinux {
		return
	}
	if dj := s.Host.DomainJoin; dj != nil {
		if dj.Linux == nil {
			dj.Linux = &LinuxDomainJoin{}
		}
		setString(&dj.Linux.Keytab, DefaultKeytab)
	}
}
