package report

import "path/filepath"

// HostPath is where the machine path p is for writers rooted at root.
// root "" or a bare separator ("/", or `\` on Windows) is the machine
// itself: p is returned cleaned, keeping its drive on Windows
// ("C:/ProgramData/machineadm/report.json"). Any other root (a dry run's
// directory, a test root) holds the machine's tree: p's volume name, if
// any, is dropped and the rest joined under root, so
// HostPath(`Z:\tmp\dry`, "C:/ProgramData/x") is `Z:\tmp\dry\ProgramData\x`
// where filepath.Join would give an invalid `Z:\tmp\dry\C:\ProgramData\x`
// (and `\C:\…` for root "/").
func HostPath(root, p string) string {
	if root == "" || root == "/" || root == `\` {
		return filepath.Clean(p)
	}
	return filepath.Join(root, p[len(filepath.VolumeName(p)):])
}
