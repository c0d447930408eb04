package render

import "fmt"

// SystemdUnit returns the text of machineadm.service for an agent at agent
// and a spec at spec. It runs `machineadm bootstrap` once per boot, after
// network-online.target, as a oneshot service that stays active when it
// succeeds; machineadm itself makes a run after a success a no-op and
// converges after a crash. Its output goes to the journal and the console.
// contrib/systemd/machineadm.service is this unit for IgnitionAgentPath and
// LinuxSpecPath.
func SystemdUnit(agent, spec string) string {
	return fmt.Sprintf(`# Runs machineadm once, after the network is online, on systems provisioned
# by Ignition (machineadm render --format ignition). See docs/render.md.
[Unit]
Description=Bootstrap this machine into its Kubernetes cluster (machineadm)
Wants=network-online.target
After=network-online.target
ConditionPathExists=%[2]s

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%[1]s bootstrap -f %[2]s
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=1h

[Install]
WantedBy=multi-user.target
`, agent, spec)
}
