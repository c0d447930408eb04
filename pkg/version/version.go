// Package version reports machineadm's own version and the Kubernetes
// version of the kubeadm compiled into it. Both are stamped at build time
// with -ldflags (see the Makefile); an unstamped build says so.
package version

import (
	"fmt"
	"runtime"

	k8sversion "k8s.io/component-base/version"
)

// Version is machineadm's version, set with
// -ldflags "-X github.com/machineadm/machineadm/pkg/version.Version=v0.1.0".
// Default "v0.0.0-dev".
var Version = "v0.0.0-dev"

// GitCommit is the source commit, set with -ldflags like Version.
var GitCommit = "unknown"

// unstampedKubernetes is component-base's placeholder when the build did
// not set k8s.io/component-base/version.gitVersion.
const unstampedKubernetes = "v0.0.0-master+$Format:%H$"

// Info is the version report printed by `machineadm version`.
type Info struct {
	// Machineadm is machineadm's version, for example "v0.1.0".
	Machineadm string `json:"machineadm"`
	// GitCommit is machineadm's source commit.
	GitCommit string `json:"gitCommit"`
	// Kubernetes is the version of the embedded kubeadm, for example
	// "v1.37.2" (k8s.io/component-base/version.gitVersion).
	Kubernetes string `json:"kubernetes"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is "GOOS/GOARCH".
	Platform string `json:"platform"`
}

// Get returns the version report.
func Get() Info {
	return Info{
		Machineadm: Version,
		GitCommit:  GitCommit,
		Kubernetes: k8sversion.Get().GitVersion,
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// CheckStamped returns an error when the embedded Kubernetes version was
// not stamped at build time: kubeadm would then think it is
// "v0.0.0-master" and derive wrong version-skew checks and defaults.
func CheckStamped() error {
	if v := k8sversion.Get().GitVersion; v == unstampedKubernetes || v == "" || v == "v0.0.0-master" {
		return fmt.Errorf("this machineadm build does not know its embedded Kubernetes version (got %q); build it with `make build` (or run tests with `make test`), which set k8s.io/component-base/version through -ldflags", v)
	}
	return nil
}
