// Package builtins links the host concerns of machineadm into a binary:
// importing it registers, through each concern package's init, every
// concern of this OS in the host registry (host.Register), from which the
// host phases, `prepare`'s help and docs/host-preparation.md's phase
// table are made. One file per OS lists the concern packages
// (builtins_linux.go, builtins_windows.go); pkg/host's own Linux concerns
// (files, kernel-modules, sysctl, containerd, static-pods) register with
// the host package itself.
//
// The tests of this package hold two fences over the registry: every
// field of spec.host, in the machine spec and in the Cluster API
// MachineadmConfig, is owned by a concern or excluded with a reason
// (fields_test.go), and docs/host-preparation.md's phase table is the
// registry's (doc_test.go, -update rewrites it).
package builtins
