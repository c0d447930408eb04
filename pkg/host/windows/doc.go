// Package windows prepares a Windows Server host to be a Kubernetes
// worker: the Windows features it needs (Containers), containerd's
// configuration in its Windows form, the kubelet registered as a Windows
// service the way kubeadm's Windows init system
// (cmd/kubeadm/app/util/initsystem/initsystem_windows.go) starts it, and
// the inbound firewall rules the kubelet needs.
//
// Every concern has a pure part, tested on Linux: FeatureState parses
// DISM's answer, ContainerdConfig renders config.toml, KubeletService
// describes the service and KubeletCommand the kubelet's command line
// built from kubeadm's flags file, FirewallRules lists the rules with
// their netsh arguments. The appliers that touch Windows
// (golang.org/x/sys/windows/svc/mgr, dism.exe, netsh.exe) are in
// _windows.go files behind the small interfaces of this package
// (ServiceManager, Runner); tests use fakes.
//
// The four register as host concerns for host.OSWindows (register.go);
// pkg/host/builtins links them into the Windows binary, where host.Steps
// builds them with the default Options.
package windows
