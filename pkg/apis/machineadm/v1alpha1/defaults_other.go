//go:build !windows

package v1alpha1

// DefaultOS is spec.os of a spec that names none: the OS this machineadm
// is built for, linux on every GOOS except windows.
const DefaultOS = OSLinux
