package machineadm

import "strings"

// SystemDrive is the drive letter of a Windows machine's system drive, on
// which a spec.os windows path without a drive letter ("/etc/kubernetes")
// lies, as kubeadm and the kubelet use such paths on Windows.
const SystemDrive = "C"

// SplitWindowsPath splits a machine path of a spec.os windows spec into
// its drive letter, upper case ("C" for 'c:\x'; "" for a path without
// one), and the rest in slash form ('C:\ProgramData\x' gives "C" and
// "/ProgramData/x"; "/etc/x" gives "" and "/etc/x"). It only splits: the
// rest of a relative path ('C:x') stays relative, as validation refuses
// it.
func SplitWindowsPath(p string) (drive, rest string) {
	if len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z') {
		drive, p = strings.ToUpper(p[:1]), p[2:]
	}
	return drive, strings.ReplaceAll(p, `\`, "/")
}
