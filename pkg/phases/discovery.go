package phases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// WaitClusterInfoName is the name of the join's discovery wait, the phase
// right before kubeadm's preflight.
const WaitClusterInfoName = "wait-cluster-info"

// WaitClusterInfoPhase waits, before kubeadm join's preflight, until the
// cluster-info ConfigMap at spec.join.apiServerEndpoint is signed for the
// join token, and verifies it with the token and spec.join.caCertHashes
// exactly as kubeadm's discovery does (kubeadm.WaitClusterInfo). kubeadm
// retries discovery every 5 s; a worker joining right after init, before
// the controller-manager's bootstrap signer has signed cluster-info for
// the new token, lost up to 10 s there. This wait asks every 200 ms.
//
// It is bounded by kubeadm.DefaultClusterInfoTimeout (60 s) or
// spec.join.timeout when that is shorter. When the bound runs out first the
// phase only warns and kubeadm's own discovery takes over, within
// spec.join.timeout as before: the wait shortens a join and never fails
// one kubeadm would complete. A cluster-info that fails verification (the
// signature, the CA pin, the server's certificate) fails the phase at once
// as DiscoveryFailed. A dry run plans without contacting the endpoint
// (kubeadm's dry run discovers nothing either). The token is never logged.
func WaitClusterInfoPhase() Phase {
	return Phase{
		Name:  WaitClusterInfoName,
		Short: "Wait for the cluster-info ConfigMap signed for the join token, CA pinned (every 200ms, at most 60s)",
		Class: errclass.DiscoveryFailed,
		Check: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			j := d.Config.Spec.Join
			if j == nil {
				return Result{}, errclass.Errorf(errclass.Internal, "", "%s: the spec has no spec.join", WaitClusterInfoName)
			}
			w := kubeadm.ClusterInfoWait{
				Endpoint: j.APIServerEndpoint, CACertHashes: j.CACertHashes, UnsafeSkipCAVerification: j.UnsafeSkipCAVerification,
				Interval: kubeadm.DefaultClusterInfoInterval, Timeout: kubeadm.DefaultClusterInfoTimeout,
			}
			if t, err := time.ParseDuration(j.Timeout); err == nil && t > 0 && t < w.Timeout {
				w.Timeout = t
			}
			if d.DryRun {
				return Result{Message: fmt.Sprintf("dry run: would wait up to %s for the cluster-info ConfigMap at %s signed for the join token", w.Timeout, w.Endpoint)}, nil
			}
			st := d.kubeadm
			if st == nil {
				var err error
				if st, _, err = prepareKubeadm(d); err != nil {
					return Result{}, err
				}
			}
			w.Token = st.inputs.JoinToken
			d.log().Info("waiting for the signed cluster-info", "endpoint", w.Endpoint, "interval", w.Interval, "timeout", w.Timeout, "pinned", len(w.CACertHashes) > 0)
			res, err := d.waitClusterInfo()(ctx, w)
			switch {
			case err == nil:
				how := "CA pinned, verified over TLS"
				if !res.Pinned {
					how = "CA not pinned (spec.join.unsafeSkipCAVerification)"
				}
				d.log().Info("cluster-info signed for the join token", "endpoint", w.Endpoint, "requests", res.Attempts, "waited", res.Waited, "pinned", res.Pinned)
				return Result{Message: fmt.Sprintf("cluster-info at %s signed for the join token, %s, after %d request(s) in %s",
					w.Endpoint, how, res.Attempts, res.Waited.Round(time.Millisecond))}, nil
			case errors.Is(err, kubeadm.ErrClusterInfoPending) && ctx.Err() == nil:
				d.log().Warn("cluster-info not signed within the bound; kubeadm's discovery takes over", "endpoint", w.Endpoint, "requests", res.Attempts, "waited", res.Waited, "error", err)
				return Result{Message: fmt.Sprintf("cluster-info at %s not signed for the join token within %s (%d requests); kubeadm's discovery continues within spec.join.timeout",
					w.Endpoint, w.Timeout, res.Attempts)}, nil
			}
			return Result{}, err
		},
	}
}
