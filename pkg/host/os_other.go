//go:build !windows

package host

// currentOS is the concerns' OS on this GOOS (CurrentOS).
const currentOS = OSLinux
