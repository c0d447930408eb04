package compliance

import (
	"path"
	"strings"
)

// Arg is one command-line flag a profile gives a component, without the
// leading "--".
type Arg struct {
	// Name of the flag, for example "profiling".
	Name string
	// Value of the flag, for example "false".
	Value string
}

// Remediation is what a profile changes in a spec before anything runs.
// Each value is a default: a value the spec gives itself wins, and the
// evidence then reports the check it breaks (FAIL, unless waived).
type Remediation struct {
	// APIServer, ControllerManager and Scheduler are flags for
	// spec.controlPlane.{apiServer,controllerManager,scheduler}.extraArgs.
	APIServer, ControllerManager, Scheduler []Arg
	// Kubelet are KubeletConfiguration fields for spec.node.kubelet.config
	// on every node.
	Kubelet map[string]any
	// WorkerKubelet are KubeletConfiguration fields for workers only.
	WorkerKubelet map[string]any
	// Sysctl are kernel parameters for spec.host.sysctl, set before the
	// kubelet starts.
	Sysctl map[string]string
}

// KernelDefaults are the kernel parameters a kubelet with
// protectKernelDefaults requires (it exits when one differs): the values
// of k8s.io/kubernetes pkg/kubelet/cm setupKernelTunables, checked
// against them by a test.
var KernelDefaults = map[string]string{
	"vm.overcommit_memory":      "1",
	"vm.panic_on_oom":           "0",
	"kernel.panic":              "10",
	"kernel.panic_on_oops":      "1",
	"kernel.keys.root_maxkeys":  "1000000",
	"kernel.keys.root_maxbytes": "25000000",
}

// TLSMinVersion is the minimum TLS version a profile gives every component.
const TLSMinVersion = "VersionTLS12"

// PodPidsLimit is the kubelet's podPidsLimit under a profile (CIS 4.2.13).
const PodPidsLimit = 4096

// RemediationFor returns profile p's remediation for a cluster whose
// certificates are in certificatesDir (kubeadm's certificatesDir,
// "/etc/kubernetes/pki" by default). Zero for an unknown profile.
func RemediationFor(p Profile, certificatesDir string) Remediation {
	if !Known(p) {
		return Remediation{}
	}
	tls := []Arg{{"tls-min-version", TLSMinVersion}, {"tls-cipher-suites", CipherSuites}}
	r := Remediation{
		APIServer: append([]Arg{
			{"profiling", "false"},
			{"service-account-extend-token-expiration", "false"},
			{"kubelet-certificate-authority", path.Join(certificatesDir, "ca.crt")},
		}, tls...),
		ControllerManager: append([]Arg{
			{"profiling", "false"},
			{"terminated-pod-gc-threshold", "12500"},
		}, tls...),
		Scheduler: append([]Arg{{"profiling", "false"}}, tls...),
		Kubelet: map[string]any{
			"serverTLSBootstrap": true,
			"tlsMinVersion":      TLSMinVersion,
			"tlsCipherSuites":    strings.Split(CipherSuites, ","),
			"podPidsLimit":       PodPidsLimit,
		},
	}
	if p == STIG {
		r.Kubelet["protectKernelDefaults"] = true
		r.Sysctl = map[string]string{}
		for k, v := range KernelDefaults {
			r.Sysctl[k] = v
		}
		r.WorkerKubelet = map[string]any{"staticPodPath": ""}
	}
	return r
}

// AnonymousPaths are the only paths a profile lets anonymous requests
// reach (spec.controlPlane.apiServer.authentication.anonymous.conditions):
// the health endpoints the kubelet's probes and load balancers read, and
// the cluster-info ConfigMap kubeadm's token discovery reads before it has
// any credential. (--anonymous-auth=false would break that discovery.)
var AnonymousPaths = []string{"/livez", "/readyz", "/healthz", "/api/v1/namespaces/kube-public/configmaps/cluster-info"}
