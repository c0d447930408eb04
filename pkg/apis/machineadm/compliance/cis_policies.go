package compliance

// cisPolicies are section 5 of the CIS Kubernetes Benchmark v1.12.0: all
// manual, all about the cluster's RBAC, Pod Security, network policies,
// secrets and admission, none about a node.
var cisPolicies = []struct{ id, title string }{
	{"5.1.1", "cluster-admin bound only where needed"},
	{"5.1.2", "few subjects can read Secrets"},
	{"5.1.3", "few wildcards in Roles and ClusterRoles"},
	{"5.1.4", "few subjects can create pods"},
	{"5.1.5", "default service accounts unused"},
	{"5.1.6", "service account tokens mounted only where needed"},
	{"5.1.7", "system:masters group not used"},
	{"5.1.8", "bind, impersonate and escalate granted sparingly"},
	{"5.1.9", "few subjects can create persistent volumes"},
	{"5.1.10", "few subjects can use the nodes/proxy subresource"},
	{"5.1.11", "few subjects can approve CSRs"},
	{"5.1.12", "few subjects can change webhook configurations"},
	{"5.1.13", "few subjects can create service account tokens"},
	{"5.2.1", "an active policy control mechanism (Pod Security admission)"},
	{"5.2.2", "privileged containers restricted"},
	{"5.2.3", "host PID namespace sharing restricted"},
	{"5.2.4", "host IPC namespace sharing restricted"},
	{"5.2.5", "host network namespace sharing restricted"},
	{"5.2.6", "allowPrivilegeEscalation restricted"},
	{"5.2.7", "root containers restricted"},
	{"5.2.8", "the NET_RAW capability restricted"},
	{"5.2.9", "added capabilities restricted"},
	{"5.2.10", "Windows HostProcess containers restricted"},
	{"5.2.11", "HostPath volumes restricted"},
	{"5.2.12", "host ports restricted"},
	{"5.3.1", "a CNI plugin that enforces NetworkPolicies"},
	{"5.3.2", "every namespace has NetworkPolicies"},
	{"5.4.1", "Secrets as files rather than environment variables"},
	{"5.4.2", "external secret storage considered"},
	{"5.5.1", "image provenance through admission"},
	{"5.6.1", "namespaces as administrative boundaries"},
	{"5.6.2", "a seccomp profile in pod definitions"},
	{"5.6.3", "security contexts on pods and containers"},
	{"5.6.4", "the default namespace unused"},
}

func init() {
	for _, p := range cisPolicies {
		cisChecks = append(cisChecks, cis(p.id, ScopePolicies, false, HowClusterPolicy, p.title, policyNote, nil))
	}
}
