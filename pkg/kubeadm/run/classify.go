package run

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/discovery"
)

// rule recognises a failure by its error message. The message is compared
// in lower case. A rule matches when the message contains one of any, or
// when match (if set) returns true. Rules are tried in order: the specific
// kubeadm messages first, the generic network and timeout words last.
type rule struct {
	class errclass.Class
	hint  string
	any   []string
	match func(msg string) bool
	// join marks a rule of init's and join's own steps (token discovery,
	// the kubelet's TLS bootstrap, a control-plane join): it does not
	// apply to an upgrade phase (Phase.Upgrade).
	join bool
	// upgrade marks a rule of kubeadm's upgrade alone: it applies only to
	// an upgrade phase.
	upgrade bool
	// phaseClass keeps the phase's class (class is then unused): the
	// rule gives only the hint.
	phaseClass bool
}

// The rules' strings are what kubeadm v1.37.2 prints, from
// k8s.io/kubernetes/cmd/kubeadm/app: discovery/discovery.go and
// discovery/token/token.go, util/pubkeypin, util/runtime/runtime.go,
// preflight/checks.go, util/apiclient/wait.go, util/etcd/etcd.go,
// phases/etcd/local.go and cmd/phases/{init,join}/*.go.
var rules = []rule{
	{class: errclass.ContainerRuntimeUnavailable,
		hint: "containerd does not answer on the CRI socket (spec.node.criSocket): check `systemctl status containerd` and that the socket path is right.",
		any: []string{
			"container runtime is not running",           // util/runtime IsRunning
			"could not connect to the container runtime", // preflight ContainerRuntimeCheck
			"failed to create new cri runtime service",   // util/runtime Connect
			"failed to create new cri image service",     // util/runtime Connect
			`container runtime condition "runtimeready"`, // util/runtime IsRunning
		},
		match: criSocketDown},
	{class: errclass.TLSBootstrapFailed, join: true,
		hint: "The kubelet got no client certificate: check that the bootstrap token may create CSRs and that the controller manager approves and signs them (`kubectl get csr`).",
		any: []string{
			"failed while waiting for tls bootstrap", // join/kubelet.go
			"could not create client from bootstrap kubeconfig",
			"the tls bootstrap kubeconfig is malformed",
			"couldn't save bootstrap-kubelet.conf",
			"certificatesigningrequest",
			"certificate signing request",
		}},
	{class: errclass.TLSBootstrapFailed, join: true,
		hint: "A Ready Node with this name is already in the cluster: delete the old Node or give this machine another spec.node.name.",
		any:  []string{"already exists in the cluster. you must delete the existing node"}},
	{class: errclass.KubeletFailed,
		hint: "The kubelet did not become healthy on http://127.0.0.1:10248/healthz: check `systemctl status kubelet` and `journalctl -u kubelet` (cgroup driver, swap, config).",
		any: []string{
			"failed while waiting for the kubelet to start", // init/waitcontrolplane.go, join/kubelet.go
			"the http call equal to 'curl -ssl http",        // apiclient WaitForKubelet
			"the kubelet is not healthy",
		}},
	{class: errclass.ControlPlaneUnhealthy,
		hint: "A control-plane component did not report healthy: check `crictl ps -a` and `crictl logs` of kube-apiserver, kube-controller-manager and kube-scheduler.",
		any: []string{
			"failed while waiting for the control plane to start", // wait-control-plane
			"check failed at https://",                            // apiclient WaitForControlPlaneComponents
			"kubeadm's health check of",                           // cpcheck.Check: a component that never answers
		}},
	// phases/upgrade/staticpods.go performEtcdStaticPodUpgrade: the
	// local etcd member's upgrade failed and kubeadm rolled it back
	// (its manifest, and its data when the old member did not come
	// back), or could not. Before the generic etcd rule (kubeadm's etcd
	// wait fails with its words) and the static pods' rollback, which
	// kubeadm wraps it in: this is etcd's upgrade, with its backups.
	{class: errclass.EtcdUnhealthy, upgrade: true,
		hint: "kubeadm's upgrade of the local etcd member failed: kubeadm put etcd's manifest back from /etc/kubernetes/tmp/kubeadm-backup-manifests-* and, when needed, its data from /etc/kubernetes/tmp/kubeadm-backup-etcd-* (the error says whether that worked and where the backup is). Check the etcd container (`crictl ps -a --name etcd`, `crictl logs <container>`), the etcd data directory, ports 2379/2380 and the etcd certificates; then run `machineadm upgrade` again.",
		any: []string{
			"fatal error when trying to upgrade the etcd cluster", // the new member did not come up, rolled back
			"fatal error upgrading local etcd cluster",            // the new member came up unhealthy, rolled back
			"fatal error rolling back local etcd cluster",         // the rollback of its data or manifest failed
		}},
	{class: errclass.EtcdUnhealthy,
		hint: "The etcd cluster is not healthy or this member did not start/join: check the etcd container's logs, ports 2379/2380 and the etcd certificates.",
		any: []string{
			"etcd cluster is not healthy",                      // phases/etcd/local.go
			"timeout waiting for etcd cluster to be available", // util/etcd
			"error creating local etcd static pod manifest",
			"error creating etcd client",
			"error syncing endpoints with etcd",
			"etcdserver:",
			"the etcd member",
			"etcd member",
		}},
	{class: errclass.DiscoveryFailed, join: true,
		hint: "The cluster CA does not match spec.join.caCertHashes: use the sha256 hash of the cluster CA's public key (`machineadm pki init` prints it; `kubeadm token create --print-join-command` shows it).",
		any: []string{
			"none of the public keys",                               // util/pubkeypin CheckAny
			"cluster ca found in cluster-info configmap is invalid", // discovery/token validateClusterCA
			"invalid discovery token ca certificate hash",
		}},
	{class: errclass.DiscoveryFailed, join: true,
		hint: "The bootstrap token is unknown to the cluster or expired: create a new one on a control-plane node and put it in spec.join.token.",
		any: []string{
			"is invalid for this cluster or it has expired",
			"failed to verify jws signature",
			"could not find a jws signature in the cluster-info configmap",
		}},
	{class: errclass.DiscoveryFailed, join: true,
		hint: "The endpoint answered but is not set up for token discovery (no cluster-info ConfigMap in kube-public): check spec.join.apiServerEndpoint points at this cluster's API server.",
		any:  []string{"isn't set up for token bootstrapping"}},
	{class: errclass.Timeout, join: true,
		hint: discovery.HintEndpointRefused,
		match: func(msg string) bool {
			return isDiscovery(msg) && !isTLS(msg) && strings.Contains(msg, "connection refused")
		}},
	{class: errclass.Timeout, join: true,
		hint: "The API server endpoint (spec.join.apiServerEndpoint) did not answer within spec.join.timeout: check the address, port, firewall and load balancer from this machine.",
		match: func(msg string) bool {
			return isDiscovery(msg) && !isTLS(msg) && isNetwork(msg)
		}},
	{class: errclass.DiscoveryFailed, join: true,
		hint:  "The API server's identity could not be verified: check spec.join.apiServerEndpoint and spec.join.caCertHashes.",
		match: func(msg string) bool { return isDiscovery(msg) || isTLS(msg) }},
	{class: errclass.PayloadUnavailable, join: true,
		hint: "The shared certificates could not be downloaded: check spec.controlPlane.certificateKey and that `kubeadm init phase upload-certs` ran less than 2 hours ago (the kubeadm-certs Secret expires).",
		any:  []string{"error downloading certs"}},
	{class: errclass.PreflightFailed, join: true,
		hint: "The cluster has no stable control-plane endpoint: a control-plane join needs spec.kubernetes.controlPlaneEndpoint set when the cluster was created.",
		any:  []string{"doesn't have a stable controlplaneendpoint address"}},
	// util/config GetAPIEndpoint, which kubeadm's upgrade data calls on a
	// static-pod control plane: it polls for kubeadm's API call timeout
	// and reports only the deadline, whatever the reads said.
	{class: errclass.ControlPlaneUnhealthy, upgrade: true,
		hint: "kubeadm reads this node's API server endpoint from the annotation kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint of its kube-apiserver mirror Pod and needs exactly one Pod in kube-system with the labels component=kube-apiserver,tier=control-plane and spec.nodeName this node, with that annotation, which it must parse as IP:port; until kubeadm's API call timeout it reports only the deadline. Check that the kubelet runs the kube-apiserver static pod and the Pod is in the API (`kubectl -n kube-system get pods -l component=kube-apiserver,tier=control-plane --field-selector spec.nodeName=<node> -o yaml`), that no other Pod there has those labels, that the annotation is there and valid, and that the credential (/etc/kubernetes/admin.conf) may list Pods in kube-system; then run `machineadm upgrade` again.",
		any:  []string{"using pod annotations"}},
	// phases/upgrade/staticpods.go rollbackOldManifests: a new static
	// pod did not come up (its mirror Pod's hash did not change within
	// the wait) and kubeadm put the old manifests back. The control-plane
	// phase's own failure, which its hint explains, not the wait's
	// Timeout; no hint here, so the phase's.
	{class: errclass.ControlPlaneUnhealthy, upgrade: true,
		any: []string{"kubeadm has tried to recover everything into the earlier state"}},
	{class: errclass.PreflightFailed,
		any: []string{"preflight checks failed", "[preflight] some fatal errors occurred"}},
	{class: errclass.VerificationFailed,
		any: []string{"digest mismatch", "sha256 mismatch", "checksum mismatch", "signature verification failed"}},
	{class: errclass.Timeout,
		any: []string{"context deadline exceeded", "timed out", "i/o timeout", "timeout waiting", "deadline exceeded", "did not change after"}},
	// cmd/upgrade apply.go newApplyData, node.go newNodeData (and
	// day2's localData in their words): kubeadm builds its upgrade data
	// in the first phase a run gets to, so its failure is not that
	// phase's own (a preflight check, the version skew policy). After
	// the network's words, which stay a Timeout.
	{phaseClass: true, upgrade: true,
		hint: "kubeadm could not build its upgrade data, which it does in the first kubeadm phase a run gets to (the preflight of a whole run; any phase of a resumed run or after a failed one): it reads the kubeadm-config, kubelet-config and kube-proxy ConfigMaps in kube-system, this node's Node (named by /etc/kubernetes/kubelet.conf) and /var/lib/kubelet/instance-config.yaml with /etc/kubernetes/admin.conf (kubelet.conf on a worker). The error names what failed: check that the API server answers and that the credential may read it, then run `machineadm upgrade` again.",
		any:  []string{"[upgrade] fatal", "unable to fetch the kubeadm-config configmap", "couldn't create a kubernetes client from file"}},
}

// classifyMessage applies the rules to one message (without init's and
// join's own when upgrade is set).
func classifyMessage(msg string, upgrade bool) (errclass.Class, string, bool) {
	r, ok := matchRule(msg, upgrade)
	if !ok {
		return "", "", false
	}
	if r.phaseClass {
		// Read for a phase without a class (Classify): Internal.
		return errclass.Internal, hintOr(r.hint, errclass.Internal), true
	}
	return r.class, hintOr(r.hint, r.class), true
}

// matchRule returns the first rule that matches msg, leaving out init's
// and join's own rules when upgrade is set (Phase.Upgrade) and the
// upgrade's own when it is not.
func matchRule(msg string, upgrade bool) (rule, bool) {
	msg = strings.ToLower(msg)
	if upgrade {
		msg = withoutClusterText(msg)
	}
	for _, r := range rules {
		if (upgrade && r.join) || (!upgrade && r.upgrade) {
			continue
		}
		if containsAny(msg, r.any) || (r.match != nil && r.match(msg)) {
			return r, true
		}
	}
	return rule{}, false
}

// admissionDenials end the API server's words of an admission webhook's
// denial (apiserver's webhook errors ToStatusErr: "admission webhook %q
// denied the request: MESSAGE"), a ValidatingAdmissionPolicy's
// ("ValidatingAdmissionPolicy '%s' with binding '%s' denied request:
// MESSAGE") and of a webhook the API server called and got an error from
// (util/webhook ErrCallingWebhook: "failed calling webhook %q: failed to
// call webhook: ERROR", ERROR the webhook's own answer, its body or its
// Status's message), in lower case: what follows is the webhook's or
// policy's.
var admissionDenials = []string{"denied the request", "denied request", "failed calling webhook"}

// withoutAdmissionText cuts a message at the first admission denial (the
// API server writes its words in lower case): the message that follows
// is whatever the webhook or policy wrote, and must not pick a rule or be
// quoted (an upgrade phase's objects pass through the cluster's
// admission; kubeadm wraps its causes as a prefix,
// so what comes before is kubeadm's and the API server's).
func withoutAdmissionText(msg string) string {
	for _, d := range admissionDenials {
		if i := strings.Index(msg, d); i >= 0 {
			msg = msg[:i+len(d)]
		}
	}
	return msg
}

// authorizationDenialRE is the API server's words of a request its
// authorizers refused, up to their reason (apiserver responsewriters
// ForbiddenStatusError: "User %q cannot %s resource %q in API group %q in
// the namespace %q" or "... at the cluster scope", "User %q cannot %s
// path %q", then ": REASON" when an authorizer gave one), after
// apimachinery's NewForbidden "is forbidden: " ("forbidden: " for a
// path), in any case.
var authorizationDenialRE = sync.OnceValue(func() *regexp.Regexp {
	const q = `"(?:[^"\\]|\\.)*"` // a %q string
	return regexp.MustCompile(`(?i)forbidden: user ` + q + ` cannot [^ ]+ (?:path ` + q + `|resource ` + q + ` in api group ` + q + ` (?:in the namespace ` + q + `|at the cluster scope))`)
})

// withoutAuthorizationReason cuts a message after the API server's words
// of an authorization denial (authorizationDenialRE): the reason that
// follows is the authorizers' (RBAC's, the Node authorizer's, an
// authorization webhook's status.reason of its own choosing, several
// joined by newlines) and must not pick a rule or be quoted. Who could
// not do what, before it, is kept.
func withoutAuthorizationReason(msg string) string {
	if loc := authorizationDenialRE().FindStringIndex(msg); loc != nil {
		msg = msg[:loc[1]]
	}
	return msg
}

// serverErrorBody is client-go's words of an answer of code 500 or over
// that was not a Status (apimachinery NewGenericServerResponse: "an
// error on the server (%q) has prevented the request from succeeding"),
// the quoted body being whatever answered: the API server's "Internal
// Server Error" with its authorizers' errors (an authorization webhook's
// answer among them: apiserver WithAuthorization), or a proxy's page.
const serverErrorBody = "an error on the server ("

// withoutServerErrorBody cuts a message before the quoted body of a
// server's answer (serverErrorBody), keeping "an error on the server".
func withoutServerErrorBody(msg string) string {
	if i := strings.Index(msg, serverErrorBody); i >= 0 {
		msg = msg[:i+len(serverErrorBody)-2]
	}
	return msg
}

// mirrorPodEndpoint ends kubeadm's words of its failed read of this
// node's API endpoint from its kube-apiserver mirror Pod (util/config
// getAPIEndpointWithRetry: "could not retrieve API endpoints for node %q
// using pod annotations: ERROR"), in lower case: ERROR is the poll's
// deadline or, for an annotation kubeadm could not parse, the
// annotation's value unquoted ("invalid API endpoint IP: VALUE"), which
// whoever may update Pods in kube-system wrote.
const mirrorPodEndpoint = "using pod annotations"

// apiServerErrorRE is the API server's words before a cause that may
// quote what the cluster chose, in any case (the message is in lower
// case when rules are matched, as written when a check is quoted):
//   - apimachinery NewInternalError, "Internal error occurred: ERROR":
//     ERROR is also a mutating admission webhook's JSON patch that did not
//     apply, naming the patch's path, any text the webhook chose
//     ("testing value PATH failed", "... doc is missing path: PATH");
//   - NewInvalid, "KIND "NAME" is invalid: FIELD: Invalid value: VALUE:
//     DETAIL": VALUE is the object's as the API server validated it,
//     after the cluster's mutating webhooks and policies changed it, or
//     as stored.
var apiServerErrorRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(internal error occurred|is invalid):`)
})

// withoutAPIServerErrorCause cuts a message after the API server's words
// of apiServerErrorRE, keeping them.
func withoutAPIServerErrorCause(msg string) string {
	if loc := apiServerErrorRE().FindStringSubmatchIndex(msg); loc != nil {
		msg = msg[:loc[3]]
	}
	return msg
}

// storedConfigRE is kubeadm's and apimachinery's words before what they
// quote of the configuration stored in kube-system's ConfigMaps
// (kubeadm-config, kubelet-config, kube-proxy), which whoever may update
// them wrote, in any case: util/config getInitConfigurationFromCluster's
// "failed to decode cluster configuration data: ERROR" (a decoding
// error, nothing read over the network), componentconfigs'
// "unsupported apiVersion %q", apimachinery's "no kind %q is registered
// ...", util SplitConfigDocuments' "invalid configuration for
// GroupVersionKind %+v" and "invalid configuration: kind %q is specified
// twice", and the YAML decoding errors of the kubelet-config and
// kube-proxy data (componentconfigs, "failed to get component
// configs"): apimachinery's "could not interpret GroupVersionKind;
// unmarshal error: ERROR" and "couldn't get version/kind; json parse
// error: ERROR", sigs.k8s.io/yaml's "error converting YAML to JSON:
// ERROR", ERROR quoting the document's text ("yaml: invalid map key:
// []interface {}{"KEY"}").
//
// It also holds kubeadm's words before a kubelet version it could not
// parse (phases/upgrade EnforceVersionPolicies' "couldn't parse kubelet
// version %s", the version skew policy of an upgrade apply's preflight):
// the version is a Node's status.nodeInfo.kubeletVersion, which that
// node's kubelet (or whoever may update Node status) wrote.
var storedConfigRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(failed to decode cluster configuration data|unsupported apiversion|no kind|invalid configuration for groupversionkind|invalid configuration: kind|could not interpret groupversionkind; unmarshal error|couldn't get version/kind; json parse error|error converting yaml to json|couldn't parse kubelet version)[: ]`)
})

// withoutStoredConfig cuts a message after the words of storedConfigRE,
// keeping them.
func withoutStoredConfig(msg string) string {
	if loc := storedConfigRE().FindStringSubmatchIndex(msg); loc != nil {
		msg = msg[:loc[3]]
	}
	return msg
}

// withoutClusterText is an upgrade phase's message without the text the
// cluster's admission webhooks and policies (withoutAdmissionText),
// authorizers (withoutAuthorizationReason), a server's answer that was
// not a Status (withoutServerErrorBody), the mirror Pod's endpoint
// annotation (after mirrorPodEndpoint, whose rule needs nothing more), an
// internal error's or invalid object's cause (withoutAPIServerErrorCause)
// and the configuration stored in kube-system and a Node's kubelet
// version (withoutStoredConfig) chose.
func withoutClusterText(msg string) string {
	if i := strings.Index(msg, mirrorPodEndpoint); i >= 0 {
		msg = msg[:i+len(mirrorPodEndpoint)]
	}
	return withoutStoredConfig(withoutAPIServerErrorCause(withoutServerErrorBody(withoutAuthorizationReason(withoutAdmissionText(msg)))))
}

func hintOr(hint string, c errclass.Class) string {
	if hint != "" {
		return hint
	}
	return errclass.DefaultHint(c)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// isDiscovery reports whether a (lower-case) message comes from kubeadm's
// token discovery (discovery.For and getClusterInfo).
func isDiscovery(msg string) bool {
	return strings.Contains(msg, "couldn't validate the identity of the api server") ||
		strings.Contains(msg, "failed to request the cluster-info configmap")
}

// isTLS reports whether a message is about a certificate the client did
// not trust, as Go's crypto/tls and crypto/x509 word it.
func isTLS(msg string) bool {
	return containsAny(msg, []string{"x509:", "tls: failed to verify certificate", "certificate signed by unknown authority", "public key"})
}

// isNetwork reports whether a message says the other end could not be
// reached or did not answer in time.
func isNetwork(msg string) bool {
	return containsAny(msg, []string{
		"connection refused", "no route to host", "network is unreachable", "i/o timeout",
		"context deadline exceeded", "timed out", "no such host", "connection reset by peer",
		"tls handshake timeout", "server misbehaving", "dial tcp",
	})
}

// criSocketRE finds a dial to a CRI socket.
var criSocketRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`dial unix [^ ]*(containerd|crio|cri-dockerd|cri)[^ ]*\.sock`)
})

// criSocketDown reports whether the CRI socket refused or does not exist.
func criSocketDown(msg string) bool {
	return criSocketRE().MatchString(msg) && containsAny(msg, []string{"connection refused", "no such file or directory"})
}

// preflightErrorRE is a failed kubeadm preflight check as
// preflight.RunChecks prints it: "\t[ERROR NAME]: message".
var preflightErrorRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[ERROR ([^\]]+)\]: (.*)$`) })

// Classify returns the class and a hint for err, which failed in kubeadm
// phase p, helped by the output the phase printed (oldest line first):
//   - an error that carries a class (errclass.Error) keeps it, and its
//     hint, or the class's default hint when it has none;
//   - otherwise the message is matched against kubeadm's own messages
//     (wrong CA pin → DiscoveryFailed, endpoint unreachable during
//     discovery → Timeout, CRI socket down → ContainerRuntimeUnavailable,
//     kubelet health check → KubeletFailed, ...), then generic timeout
//     words and context.DeadlineExceeded (Timeout); an upgrade phase
//     (p.Upgrade) is not matched against init's and join's own (token
//     discovery, TLS bootstrap, control-plane join), whose words (x509,
//     certificatesigningrequests) its error may carry from the API
//     server for another reason, and only an upgrade phase against the
//     upgrade's own (the mirror Pod kubeadm reads its endpoint from, the
//     local etcd's and the static pods' rollback, the upgrade data); an
//     upgrade phase's message is matched without the text the cluster
//     chose (withoutClusterText): an admission webhook's or policy's
//     after its denial, an authorizer's after its refusal, the body of an
//     answer that was not a Status, the mirror Pod's endpoint annotation,
//     the cause of an internal error (a mutating webhook's patch) and of
//     an invalid object (its values, which webhooks may have set), what
//     kubeadm quotes of the configuration stored in kube-system's
//     ConfigMaps and a Node's kubelet version it could not parse;
//   - then the phase's own class decides. kubeadm's preflight error is only
//     "preflight checks failed"; the failed checks are "[ERROR NAME]: ..."
//     lines of its output: a failed CRI check makes the class
//     ContainerRuntimeUnavailable, otherwise the hint names the failed
//     checks and quotes the first one (an upgrade phase's: only after
//     kubeadm's "preflight checks failed", from the line after the one
//     header of its output, classifyUpgradePreflight);
//   - where the class found is the phase's and nothing above gave a hint
//     (an errclass.Error without one, a rule without one, the phase's
//     class deciding), the hint is the phase's Hint when it has one, else
//     the class's default;
//   - a phase without a class (or class Internal) is matched line by line
//     against the rules, newest line first, but for an upgrade phase,
//     whose output may hold the API server's warnings; what is left is
//     Internal.
//
// output is the phase's whole output; a runner that keeps only its last
// lines calls ClassifyTail. The hint is never empty. A nil err is
// Internal.
func Classify(p Phase, err error, output []string) (errclass.Class, string) {
	return classify(p, err, output, countHeaders(output))
}

// ClassifyTail is Classify with the output a Tail kept: its last lines,
// and how many of kubeadm's preflight headers all of them held.
func ClassifyTail(p Phase, err error, t *Tail) (errclass.Class, string) {
	return classify(p, err, t.lines, t.headers)
}

// classify is Classify, headers the number of preflightFatalHeader lines
// of the phase's whole output (output may be only its last lines).
func classify(p Phase, err error, output []string, headers int) (errclass.Class, string) {
	if err == nil {
		return errclass.Internal, errclass.DefaultHint(errclass.Internal)
	}
	var re *errclass.Error
	if errors.As(err, &re) {
		return re.Class, p.hintOr(re.Hint, re.Class)
	}
	if r, ok := matchRule(err.Error(), p.Upgrade); ok {
		if r.class == errclass.PreflightFailed {
			if pc, ph, ok := classifyPreflight(err, output, p.Upgrade, headers); ok {
				return pc, ph
			}
		}
		if r.phaseClass {
			c := p.Class
			if c == "" {
				c = errclass.Internal
			}
			return c, p.hintOr(r.hint, c)
		}
		return r.class, p.hintOr(r.hint, r.class)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errclass.Timeout, errclass.DefaultHint(errclass.Timeout)
	}
	switch p.Class {
	case "", errclass.Internal:
		// Not an upgrade phase's output: a line there may be a warning
		// the API server sent back (an admission webhook's or policy's,
		// which client-go logs), whose text no cut finds.
		for i := len(output) - 1; i >= 0 && !p.Upgrade; i-- {
			if oc, oh, ok := classifyMessage(output[i], p.Upgrade); ok {
				return oc, oh
			}
		}
		return errclass.Internal, errclass.DefaultHint(errclass.Internal)
	case errclass.PreflightFailed:
		if c, h, ok := classifyPreflight(err, output, p.Upgrade, headers); ok {
			return c, h
		}
	}
	return p.Class, p.hintOr("", p.Class)
}

// hintOr returns hint, or else p's Hint when c is p's class, or else c's
// default hint.
func (p Phase) hintOr(hint string, c errclass.Class) string {
	if hint == "" && c == p.Class && p.Hint != "" {
		return p.Hint
	}
	return hintOr(hint, c)
}

// classifyPreflight reads the failed checks from preflight's output
// (headers: how many preflightFatalHeader lines the whole output held).
// An upgrade's first failed check is quoted without what an admission
// webhook or policy wrote after its denial, an authorizer after its
// refusal, or the other text the cluster chose (withoutClusterText;
// kubeadm's CreateJob check creates a Job in kube-system).
func classifyPreflight(err error, output []string, upgrade bool, headers int) (errclass.Class, string, bool) {
	if upgrade {
		return classifyUpgradePreflight(err, output, headers)
	}
	var names []string
	first := ""
	for _, line := range output {
		m := preflightErrorRE().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] == "CRI" || m[1] == "ContainerRuntimeVersion" {
			return classifyMessage("could not connect to the container runtime", false)
		}
		if first == "" {
			first = m[1] + ": " + m[2]
		}
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return "", "", false
	}
	return errclass.PreflightFailed, "kubeadm preflight checks failed: " + strings.Join(names, ", ") + " (" + first + "). Fix the host, or list a check in spec.node.ignorePreflightErrors if it is safe.", true
}

// preflightFatalHeader is the line preflight.RunChecks (handleError)
// prints, in one write with them, before the checks that failed.
const preflightFatalHeader = "[preflight] Some fatal errors occurred:"

// upgradePreflightErrorRE is the first failed check RunChecks prints
// after preflightFatalHeader: "\t[ERROR NAME]: message".
var upgradePreflightErrorRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\t\[ERROR ([A-Za-z0-9._-]+)\]: (.*)$`)
})

// classifyUpgradePreflight is classifyPreflight for an upgrade phase,
// whose checks reach the cluster (CreateJob's Job passes its admission):
// only the line right after kubeadm's preflightFatalHeader is a check's.
// A line before it may be a warning the API server sent back, which
// client-go logs, and a line after it the rest of a check's message that
// a webhook wrote over several lines ("...\n\t[ERROR CRI]: ..."); the
// check's message is cut where the cluster's text starts (an admission
// denial, an authorization denial's reason, an internal error's cause:
// withoutClusterText). Such lines may hold a header too,
// before kubeadm's (a check listed in ignorePreflightErrors prints its
// error as a warning) or after it: kubeadm prints its header once, with
// the error "preflight checks failed" (preflight.RunChecks'
// handleError), so the output is read only after that error, and only
// when the whole output, not just the lines kept of it, held exactly one
// header (headers): a lone header after another error is a webhook's, and
// one among the last lines when kubeadm's was dropped before them too.
func classifyUpgradePreflight(err error, output []string, headers int) (errclass.Class, string, bool) {
	if headers != 1 || !strings.HasSuffix(withoutClusterText(strings.ToLower(err.Error())), "preflight checks failed") {
		return "", "", false
	}
	i := slices.Index(output, preflightFatalHeader)
	if i < 0 || i+1 >= len(output) {
		return "", "", false
	}
	m := upgradePreflightErrorRE().FindStringSubmatch(output[i+1])
	if m == nil {
		return "", "", false
	}
	if m[1] == "CRI" || m[1] == "ContainerRuntimeVersion" {
		return classifyMessage("could not connect to the container runtime", false)
	}
	first := withoutClusterText(m[1] + ": " + m[2])
	return errclass.PreflightFailed, "kubeadm preflight checks failed: " + m[1] + " (" + first + "). Fix the host, or list a check in spec.node.ignorePreflightErrors if it is safe.", true
}

// countHeaders is how many lines of output are preflightFatalHeader.
func countHeaders(output []string) int {
	n := 0
	for _, l := range output {
		if l == preflightFatalHeader {
			n++
		}
	}
	return n
}

// TailLines is how many of a phase's last output lines a Tail keeps.
const TailLines = 200

// Tail keeps what ClassifyTail reads of a phase's output: its last
// TailLines lines, and how many of all its lines, kept or dropped, were
// kubeadm's preflight header, so that a header dropped with the lines
// before the last ones (by a webhook's message or warnings long enough)
// still counts: a header left among the last lines is trusted only when
// it was the output's one (classifyUpgradePreflight). The zero value is
// empty and ready to use.
type Tail struct {
	lines   []string
	headers int
}

// Add keeps line, dropping the oldest kept line past TailLines.
func (t *Tail) Add(line string) {
	if line == preflightFatalHeader {
		t.headers++
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > TailLines {
		t.lines = t.lines[len(t.lines)-TailLines:]
	}
}
