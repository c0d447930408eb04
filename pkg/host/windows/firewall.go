package windows

import "strconv"

// FirewallRule is one inbound Windows Firewall rule machineadm keeps.
type FirewallRule struct {
	// Name is the rule's unique name ("machineadm kubelet").
	Name string
	// Protocol is "TCP" or "UDP".
	Protocol string
	// Ports is the local port or range, for example "10250" or
	// "30000-32767".
	Ports string
	// Why says what needs the rule.
	Why string
}

// FirewallRules are the inbound rules a Windows worker needs: the
// kubelet API (10250, used by the API server for logs, exec and
// metrics) and the NodePort range (30000-32767, kube-proxy's default
// service-node-port-range), TCP and UDP.
func FirewallRules() []FirewallRule {
	return []FirewallRule{
		{Name: "machineadm kubelet", Protocol: "TCP", Ports: strconv.Itoa(KubeletPort), Why: "kubelet API (logs, exec, metrics) from the API server"},
		{Name: "machineadm NodePort TCP", Protocol: "TCP", Ports: "30000-32767", Why: "NodePort services"},
		{Name: "machineadm NodePort UDP", Protocol: "UDP", Ports: "30000-32767", Why: "NodePort services"},
	}
}

// KubeletPort is the kubelet's secure port (KubeletConfiguration port).
const KubeletPort = 10250

// ShowArgs are the netsh arguments that look the rule up; netsh exits
// non-zero when no rule has the name.
func (r FirewallRule) ShowArgs() []string {
	return []string{"advfirewall", "firewall", "show", "rule", "name=" + r.Name}
}

// AddArgs are the netsh arguments that create the rule (inbound, allow,
// every profile).
func (r FirewallRule) AddArgs() []string {
	return []string{"advfirewall", "firewall", "add", "rule", "name=" + r.Name, "dir=in", "action=allow",
		"protocol=" + r.Protocol, "localport=" + r.Ports, "profile=any", "description=" + r.Why + " (machineadm)"}
}
