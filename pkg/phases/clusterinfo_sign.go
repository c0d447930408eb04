package phases

import (
	"context"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// SignClusterInfoName is the name of the control-plane init's phase that
// signs cluster-info, right after kubeadm's bootstrap-token.
const SignClusterInfoName = "sign-cluster-info"

// signClusterInfoHint is the hint of a failed sign-cluster-info.
const signClusterInfoHint = "The API server did not take the cluster-info signatures through /etc/kubernetes/admin.conf, right after kubeadm's bootstrap-token phase used it: check the control plane " +
	"(kubectl --kubeconfig /etc/kubernetes/admin.conf get --raw /readyz) and run bootstrap again; it resumes at " + SignClusterInfoName + "."

// SignClusterInfoPhase signs the cluster-info ConfigMap (kube-public) for
// each of spec.controlPlane.bootstrapTokens the controller-manager's
// bootstrap signer would sign for (kubeadm.SignClusterInfo: the same
// signature, computed by cluster-bootstrap's jws; the same token checks),
// through kubeadm's admin.conf, right after kubeadm's bootstrap-token phase
// created the tokens, cluster-info and its RBAC rules. After init the
// signer took 3.3–8.5 s on the e2e harness to add the signature, and the
// first worker's discovery (wait-cluster-info) waited for it; signed here,
// it finds cluster-info signed at its first request. The signer, once it
// runs, computes the same values and leaves them.
//
// A token whose Secret is gone, expired or not usable for signing is
// skipped (named in the message). Run again after success it changes
// nothing (Unchanged). A dry run says what it would sign and contacts no
// API server (kubeadm's dry run created no token either). Failures (the
// API server unreachable or refusing, cluster-info missing; bounded by
// kubeadm.DefaultClusterInfoSignTimeout and
// kubeadm.DefaultClusterInfoSignAttempts) are ControlPlaneUnhealthy. No
// token secret and no signature is logged.
func SignClusterInfoPhase() Phase {
	return Phase{
		Name:  SignClusterInfoName,
		Short: "Sign the cluster-info ConfigMap for the spec's bootstrap tokens, as the controller-manager's bootstrap signer does",
		Class: errclass.ControlPlaneUnhealthy,
		Hint:  signClusterInfoHint,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			st := d.kubeadm
			if st == nil {
				var err error
				if st, _, err = prepareKubeadm(d); err != nil {
					return Result{}, err
				}
			}
			ids := kubeadm.TokenIDs(st.inputs.BootstrapTokens)
			if len(ids) == 0 {
				return Result{Message: "no bootstrap tokens in spec.controlPlane.bootstrapTokens: nothing to sign"}, nil
			}
			keys := make([]string, len(ids))
			for i, id := range ids {
				keys[i] = "jws-kubeconfig-" + id
			}
			if d.DryRun {
				line := fmt.Sprintf("would add %s to ConfigMap kube-public/cluster-info (the bootstrap signer's signature for each token whose Secret it signs for)", strings.Join(keys, ", "))
				return Result{Changed: true, Changes: []string{line}}, nil
			}
			path, err := d.host().Path(kubeadm.AdminKubeconfigPath())
			if err != nil {
				return Result{}, err
			}
			client, err := kubeadm.ClientFromKubeconfig(path)
			if err != nil {
				return Result{}, err
			}
			res, err := kubeadm.SignClusterInfo(ctx, client, kubeadm.ClusterInfoSigning{TokenIDs: ids})
			if err != nil {
				return Result{}, err
			}
			var signed, already, changes []string
			for _, t := range res.Tokens {
				switch t.Outcome {
				case kubeadm.TokenSigned:
					signed = append(signed, t.ID)
					changes = append(changes, "signed ConfigMap kube-public/cluster-info for bootstrap token "+t.ID+" (jws-kubeconfig-"+t.ID+")")
				case kubeadm.TokenAlreadySigned:
					already = append(already, t.ID)
				default:
					d.log().Info("bootstrap token not signed for", "tokenID", t.ID, "reason", t.Reason)
					changes = append(changes, "not signed for bootstrap token "+t.ID+": "+t.Reason)
				}
			}
			d.log().Info("cluster-info signed", "signed", signed, "alreadySigned", already, "attempts", res.Attempts, "updated", res.Updated)
			var msg []string
			if len(signed) > 0 {
				msg = append(msg, "signed for bootstrap token(s) "+strings.Join(signed, ", "))
			}
			if len(already) > 0 {
				msg = append(msg, "already signed for "+strings.Join(already, ", "))
			}
			if n := len(res.Tokens) - len(signed) - len(already); n > 0 {
				msg = append(msg, fmt.Sprintf("%d token(s) skipped (not signable)", n))
			}
			return Result{
				Changed: res.Updated,
				Changes: changes,
				Message: "cluster-info (kube-public): " + strings.Join(msg, "; "),
			}, nil
		},
	}
}

// withSignClusterInfo puts sign-cluster-info into a control-plane init's
// kubeadm phase list right after kubeadm's bootstrap-token.
func withSignClusterInfo(kubeadmPhases []Phase) []Phase {
	for i, p := range kubeadmPhases {
		if p.Name == "bootstrap-token" {
			out := append([]Phase{}, kubeadmPhases[:i+1]...)
			out = append(out, SignClusterInfoPhase())
			return append(out, kubeadmPhases[i+1:]...)
		}
	}
	return kubeadmPhases
}
