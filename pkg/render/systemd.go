package render

import (
	"fmt"

	"github.com/machineadm/machineadm/pkg/render/quote"
)

// SystemdUnit returns the text of machineadm.service for an agent at agent
// and a spec at spec. It runs `machineadm bootstrap` once per boot, after
// network-online.target, as a oneshot service that stays active when it
// succeeds; machineadm itself makes a run after a success a no-op and
// converges after a crash. Its output goes to the journal and the console.
// contrib/systemd/machineadm.service is this unit for IgnitionAgentPath and
// LinuxSpecPath.
//
// agent must be a plain absolute path (quote.SystemdExecPath) and spec a
// path quote.SystemdExecPath accepts too, since ConditionPathExists= takes
// its value unquoted; SystemdUnit panics otherwise (render checks the
// agent path first; the spec path is a constant).
func SystemdUnit(agent, spec string) string {
	for _, p := range []string{agent, spec} {
		if _, err := quote.SystemdExecPath(p); err != nil {
			panic(fmt.Sprintf("render: %q in a systemd unit: %v", p, err))
		}
	}
	specArg, err := quote.SystemdArg(spec)
	if err != nil {
		panic(err)
	}
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
ExecStart=%[1]s bootstrap -f %[3]s
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=1h

[Install]
WantedBy=multi-user.target
`, agent, spec, specArg)
}
