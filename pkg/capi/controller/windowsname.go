package controller

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// Windows limits a computer (NetBIOS) name to 15 characters without
// dots, and Cluster API names Machines after their MachineDeployment and
// MachineSet with random suffixes ("win-workers-7d9f8-x2k4q", 23
// characters). A Windows Machine's Node name is therefore the Machine's
// name mapped into that limit by WindowsNodeName, the same value every
// time, and it is the name the infrastructure provider should give the
// computer (the data Secret carries it in NodeNameAnnotation).
const (
	// MaxWindowsNameLen is Windows' limit on a computer name (NetBIOS:
	// 15 characters).
	MaxWindowsNameLen = 15
	// windowsHashLen is the length of the hash suffix: 5 base32
	// characters, 25 bits.
	windowsHashLen = 5
	// NodeNameAnnotation holds, on the data Secret of a Windows Machine,
	// the Node (and computer) name its spec sets (spec.node.name).
	NodeNameAnnotation = "bootstrap.machineadm.io/node-name"
)

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// WindowsNodeName maps a Machine name (a DNS-1123 subdomain: lower-case
// letters, digits, '-' and '.') to a Windows computer name that is also a
// valid Node name. A name of at most 15 characters without '.', not of
// digits only (Windows refuses those), is kept as it is; any other becomes its first 9 characters ('.' turned into '-',
// trailing '-' dropped), '-' and 5 characters of base32 of the SHA-256 of
// the whole name, for example "win-worke-q3x7a". Two Machine names share
// a mapped name only when they share the prefix and, by chance (1 in
// 2^25), the hash.
func WindowsNodeName(machine string) string {
	// Windows refuses a computer name of digits only ("12345").
	if len(machine) <= MaxWindowsNameLen && !strings.Contains(machine, ".") && strings.Trim(machine, "0123456789") != "" {
		return machine
	}
	prefix := machine[:min(len(machine), MaxWindowsNameLen-windowsHashLen-1)]
	prefix = strings.TrimRight(strings.ReplaceAll(prefix, ".", "-"), "-")
	sum := sha256.Sum256([]byte(machine))
	hash := lowerBase32.EncodeToString(sum[:])[:windowsHashLen]
	if prefix == "" {
		return hash
	}
	return prefix + "-" + hash
}

// ReasonNodeNameTaken is the Ready and DataSecretAvailable reason of a
// Windows Machine's config whose mapped Node name (WindowsNodeName) is
// another Machine's name or another Windows Machine's mapped name in the
// Cluster: two kubelets would register as one Node. Looked at again
// every secretRetry; it resolves when the other Machine goes.
const ReasonNodeNameTaken = "NodeNameTaken"

// windowsNameTaken returns who else in cfg's namespace has node, the Node
// name of cfg's Windows Machine m: a Machine of that name (when node is
// mapped, not m's own name) or another config's data Secret of Cluster
// cl carrying it in NodeNameAnnotation; "" when nobody does.
func windowsNameTaken(ctx context.Context, c client.Client, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster, node string) (string, error) {
	if node != m.Name {
		err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: node}, &clusterv1.Machine{})
		if err == nil {
			return fmt.Sprintf("Machine %s/%s is named %q", m.Namespace, node, node), nil
		}
		if !apierrors.IsNotFound(err) {
			return "", err
		}
	}
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(cfg.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cl.Name}); err != nil {
		return "", err
	}
	for i := range list.Items {
		ds := &list.Items[i]
		if ds.Name != cfg.Name && ds.Type == ClusterSecretType && ds.Annotations[NodeNameAnnotation] == node {
			return fmt.Sprintf("data Secret %s/%s gives its Windows Machine the Node name %q", ds.Namespace, ds.Name, node), nil
		}
	}
	return "", nil
}
