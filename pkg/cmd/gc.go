package cmd

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target (runtime/debug
// SetGCPercent) machineadm runs with unless the environment sets GOGC:
// 50, where Go's default of 100 lets the heap grow to twice what is live
// between collections. machineadm runs on the node beside the kubelet and
// the control plane it is changing, on machines that may be small, and
// spends its time waiting (on the API server, the kubelet, etcd), not
// computing: a lower peak resident memory is worth the collector's few
// milliseconds more (docs/design.md, "Memory"). GOGC=100 restores Go's
// default.
const DefaultGCPercent = 50

// setGCPercent applies DefaultGCPercent unless GOGC is set.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
