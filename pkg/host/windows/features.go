package windows

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// RequiredFeatures are the Windows optional features a worker needs:
// Containers (the Host Compute Service that runs Windows containers).
var RequiredFeatures = []string{"Containers"}

// DismArgs are the arguments of `dism.exe` that report one feature's
// state without changing anything.
func DismArgs(feature string) []string {
	return []string{"/Online", "/English", "/Get-FeatureInfo", "/FeatureName:" + feature}
}

// FeatureState parses `dism /Online /English /Get-FeatureInfo` output
// and returns the "State :" value ("Enabled", "Disabled", "Enable
// Pending", ...).
func FeatureState(out []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "State" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no State line in DISM's output")
}

// CheckFeature turns a feature's state into nil (Enabled) or an error of
// class HostPreparationFailed that says how to enable it.
func CheckFeature(feature, state string) error {
	switch state {
	case "Enabled":
		return nil
	case "Enable Pending":
		return errclass.Errorf(errclass.RebootRequired, "", "Windows feature %s is enabled but needs a reboot", feature)
	}
	return errclass.Errorf(errclass.HostPreparationFailed,
		fmt.Sprintf("enable it in the image: `Install-WindowsFeature -Name %s` (Server) or `Enable-WindowsOptionalFeature -Online -FeatureName %s`, then reboot", feature, feature),
		"Windows feature %s is %s; a Kubernetes worker needs it", feature, strings.ToLower(state))
}
