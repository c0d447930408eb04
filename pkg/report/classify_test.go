package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/spec"
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
		want  Class
		hint  string // a substring the hint must contain
	}{
		// discovery/token/token.go validateClusterCA + util/pubkeypin CheckAny
		{"wrong CA hash", "kubelet-start",
			identity + `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "sha256:` + strings.Repeat("ab", 32) + `" are pinned`,
			ClassDiscoveryFailed, "caCertHashes"},
		// discovery/token/token.go getClusterInfo: lastError after the poll ran out
		{"endpoint refused", "kubelet-start",
			identity + "failed to request the cluster-info ConfigMap: " + get + "dial tcp " + ep + ": connect: connection refused",
			ClassTimeout, "spec.join.apiServerEndpoint"},
		{"endpoint black hole", "preflight",
			identity + "failed to request the cluster-info ConfigMap: " + get + "dial tcp 127.0.0.2:6443: i/o timeout",
			ClassTimeout, "timeout"},
		{"endpoint with an untrusted certificate", "kubelet-start",
			identity + "failed to request the cluster-info ConfigMap: " + get + "tls: failed to verify certificate: x509: certificate signed by unknown authority",
			ClassDiscoveryFailed, "caCertHashes"},
		{"cluster-info forbidden", "kubelet-start",
			identity + "failed to request the cluster-info ConfigMap: configmaps \"cluster-info\" is forbidden: User \"system:anonymous\" cannot get resource",
			ClassDiscoveryFailed, "identity"},
		{"unknown token id", "kubelet-start",
			identity + `could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"`,
			ClassDiscoveryFailed, "token"},
		{"expired token", "preflight",
			identity + `token id "abcdef" is invalid for this cluster or it has expired. Use "kubeadm token create" on the control-plane node to create a new valid token`,
			ClassDiscoveryFailed, "token"},
		{"bad JWS", "kubelet-start",
			identity + "failed to verify JWS signature of received cluster info object, can't trust this API Server",
			ClassDiscoveryFailed, "token"},
		{"not a kubeadm cluster", "kubelet-start",
			identity + "there is no kubeconfig key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect",
			ClassDiscoveryFailed, "cluster-info"},
		// util/runtime/runtime.go IsRunning, with the CRI client's gRPC error
		{"CRI socket refused", "preflight",
			`container runtime is not running: output: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: connection refused"`,
			ClassContainerRuntimeUnavailable, "containerd"},
		{"CRI socket missing, other wording", "kubelet-start",
			`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix /var/run/containerd/containerd.sock: connect: no such file or directory"`,
			ClassContainerRuntimeUnavailable, "criSocket"},
		// cmd/phases/join/kubelet.go + util/apiclient/wait.go WaitForKubelet
		{"kubelet unhealthy", "kubelet-start",
			"failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: Get \"http://127.0.0.1:10248/healthz\": dial tcp 127.0.0.1:10248: connect: connection refused\n",
			ClassKubeletFailed, "kubelet"},
		{"kubelet unhealthy in init", "wait-control-plane",
			"failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: context deadline exceeded\n",
			ClassKubeletFailed, "kubelet"},
		{"TLS bootstrap", "kubelet-start",
			"failed while waiting for TLS bootstrap: context deadline exceeded",
			ClassTLSBootstrapFailed, "CSR"},
		{"node exists", "kubelet-start",
			`a Node with name "w1" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node`,
			ClassTLSBootstrapFailed, "spec.node.name"},
		// cmd/phases/init/waitcontrolplane.go + apiclient WaitForControlPlaneComponents
		{"control plane unhealthy", "wait-control-plane",
			"failed while waiting for the control plane to start: [kube-apiserver check failed at https://127.0.0.1:6443/livez: Get \"https://127.0.0.1:6443/livez?timeout=10s\": dial tcp 127.0.0.1:6443: connect: connection refused, kube-scheduler check failed at https://127.0.0.1:10259/livez: context deadline exceeded]",
			ClassControlPlaneUnhealthy, "kube-apiserver"},
		// phases/etcd/local.go + util/etcd/etcd.go
		{"etcd unhealthy", "check-etcd",
			"etcd cluster is not healthy: failed to dial endpoint https://10.0.0.5:2379 with maintenance client: context deadline exceeded",
			ClassEtcdUnhealthy, "etcd"},
		{"etcd timeout", "control-plane-join/etcd",
			"timeout waiting for etcd cluster to be available",
			ClassEtcdUnhealthy, "etcd"},
		// cmd/phases/join/controlplaneprepare.go
		{"download certs", "control-plane-prepare/download-certs",
			"error downloading certs: error decoding secret data with provided key: cipher: message authentication failed",
			ClassPayloadUnavailable, "certificateKey"},
		// preflight/checks.go handleError
		{"preflight", "preflight", "preflight checks failed", ClassPreflightFailed, "ERROR"},
		{"no stable endpoint", "preflight",
			"unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address",
			ClassPreflightFailed, "controlPlaneEndpoint"},
		// generic words, then phase defaults
		{"generic timeout", "upload-config", "error uploading the kubeadm ClusterConfiguration: context deadline exceeded", ClassTimeout, "reachable"},
		{"upload config refused", "upload-config", "error uploading the kubeadm ClusterConfiguration: Post \"https://10.0.0.5:6443/api/v1/namespaces/kube-system/configmaps\": EOF", ClassControlPlaneUnhealthy, "crictl"},
		{"files phase", "files", "writing /etc/foo: permission denied", ClassHostPreparationFailed, "permissions"},
		{"sub-phase falls back to parent", "certs/apiserver", "failure loading CA", ClassHostPreparationFailed, ""},
		{"etcd-join", "etcd-join", "adding member: rpc error", ClassEtcdUnhealthy, "etcd"},
		{"kubelet-wait-bootstrap", "kubelet-wait-bootstrap", "kubelet.conf did not appear", ClassTLSBootstrapFailed, "CSR"},
		{"containerd phase", "containerd", "restarting containerd: exit status 1", ClassContainerRuntimeUnavailable, "containerd"},
		{"unknown phase", "mystery", "boom", ClassInternal, "bug"},
		{"no phase", "", "boom", ClassInternal, "bug"},
		{"digest", "", "payload digest mismatch: got sha256:00, want sha256:11", ClassVerificationFailed, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, h := Classify(tc.phase, fmt.Errorf("%w", errors.New(tc.msg)))
			if c != tc.want {
				t.Errorf("Classify(%q, %q) class = %s, want %s", tc.phase, tc.msg, c, tc.want)
			}
			if h == "" || !strings.Contains(h, tc.hint) {
				t.Errorf("hint %q does not contain %q", h, tc.hint)
			}
		})
	}
}

func TestClassifyTypedErrors(t *testing.T) {
	c, h := Classify("files", fmt.Errorf("phase files: %w", NewError(ClassVerificationFailed, "", errors.New("bad digest"))))
	if c != ClassVerificationFailed || h != DefaultHint(ClassVerificationFailed) {
		t.Errorf("classed error: got %s %q", c, h)
	}
	c, h = Classify("files", NewError(ClassPayloadUnavailable, "my hint", errors.New("x")))
	if c != ClassPayloadUnavailable || h != "my hint" {
		t.Errorf("classed error with hint: got %s %q", c, h)
	}
	invalid := &spec.InvalidSpecError{Source: "s.yaml", Errors: field.ErrorList{field.Required(field.NewPath("spec", "role"), "")}}
	if c, _ := Classify("", fmt.Errorf("loading: %w", invalid)); c != ClassInvalidSpec {
		t.Errorf("invalid spec: got %s", c)
	}
	if c, _ := Classify("preflight", fmt.Errorf("running: %w", context.Canceled)); c != ClassPreflightFailed {
		t.Errorf("canceled in a known phase keeps the phase class, got %s", c)
	}
	if c, _ := Classify("", fmt.Errorf("running: %w", context.Canceled)); c != ClassInterrupted {
		t.Errorf("canceled outside a phase: got %s", c)
	}
	if c, _ := Classify("mystery", fmt.Errorf("x: %w", context.DeadlineExceeded)); c != ClassTimeout {
		t.Errorf("deadline: got %s", c)
	}
	if c, h := Classify("x", nil); c != ClassInternal || h == "" {
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
	c, h := ClassifyOutput("preflight", err, out)
	if c != ClassPreflightFailed || !strings.Contains(h, "Port-10250, Swap") || !strings.Contains(h, "Port 10250 is in use") {
		t.Errorf("got %s %q", c, h)
	}
	cri := append(out[:2:2], "\t[ERROR CRI]: could not connect to the container runtime: failed to create new CRI runtime service")
	if c, _ := ClassifyOutput("preflight", err, cri); c != ClassContainerRuntimeUnavailable {
		t.Errorf("CRI check: got %s", c)
	}
	kubelet := []string{"[kubelet-check] Waiting for a healthy kubelet", "The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: EOF"}
	if c, _ := ClassifyOutput("", errors.New("exit status 1"), kubelet); c != ClassKubeletFailed {
		t.Errorf("internal refined by output: got %s", c)
	}
	if c, h := ClassifyOutput("preflight", NewError(ClassPayloadUnavailable, "h", err), cri); c != ClassPayloadUnavailable || h != "h" {
		t.Errorf("classed error must win over output: %s %q", c, h)
	}
}

func TestEveryClassDocumented(t *testing.T) {
	for _, c := range Classes() {
		if DefaultHint(c) == "" {
			t.Errorf("class %s has no default hint", c)
		}
		if !c.Known() {
			t.Errorf("class %s not known", c)
		}
	}
	if Class("Nope").Known() {
		t.Error("unknown class reported known")
	}
}
