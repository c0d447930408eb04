package domainjoin

// DefaultStateDir keeps machineadm's state on Linux.
const DefaultStateDir = "/var/lib/machineadm"

// DefaultJoiner is the Linux joiner: adcli, writing below root.
func DefaultJoiner(root, stateDir string) Joiner { return &Adcli{Root: root} }
