package domainjoin

// DefaultStateDir keeps machineadm's state on Windows.
const DefaultStateDir = `C:\ProgramData\machineadm`

// DefaultJoiner is the Windows joiner: netapi32 (root is unused: the
// join changes the running Windows).
func DefaultJoiner(root, stateDir string) Joiner {
	return &NetJoiner{API: sysNetAPI{}, StateDir: stateDir}
}
