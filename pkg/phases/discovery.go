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
// the new token, lost up to 10 s there. This wait asks every 200 ms for
// the first minute, then every 5 s as kubeadm does.
//
// It is the join's discovery wait, bounded once by spec.join.timeout:
// kubeadm's own discovery waits for the same signed, verifiable
// cluster-info with the same bound, so when this wait runs out the phase
// fails (class Timeout) instead of handing over to kubeadm for another
// spec.join.timeout. Once it succeeded, kubeadm's discovery finds the
// signature on its first request. A cluster-info that fails verification
// (the signature, the CA pin, the server's certificate) fails the phase at
// once as DiscoveryFailed. A dry run plans without contacting the endpoint
// (kubeadm's dry run discovers nothing either). The token is never logged.
func WaitClusterInfoPhase() Phase {
	return Phase{
		Name:  WaitClusterInfoName,
		Short: "Wait for the cluster-info ConfigMap signed for the join token, CA pinned (every 200ms, within spec.join.timeout)",
		Class: errclass.DiscoveryFailed,
		Check: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			j := d.Config.Spec.Join
			if j == nil {
				return Result{}, errclass.Errorf(errclass.Internal, "", "%s: the spec has no spec.join", WaitClusterInfoName)
			}
			w := kubeadm.ClusterInfoWait{
				Endpoint: j.APIServerEndpoint, CACertHashes: j.CACertHashes, UnsafeSkipCAVerification: j.UnsafeSkipCAVerification,
				Interval: kubeadm.DefaultClusterInfoInterval, Timeout: joinTimeout(j.Timeout), FastFor: kubeadm.DefaultClusterInfoFastFor,
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
				how := "CA pinned, the server's certificate verified with it"
				if !res.Pinned {
					how = "CA not pinned (spec.join.unsafeSkipCAVerification)"
				}
				d.log().Info("cluster-info signed for the join token", "endpoint", w.Endpoint, "requests", res.Attempts, "waited", res.Waited, "unsigned", res.Unsigned, "pinned", res.Pinned)
				return Result{Message: fmt.Sprintf("cluster-info at %s signed for the join token, %s, after %d request(s) in %s (%s %s)",
					w.Endpoint, how, res.Attempts, res.Waited.Round(time.Millisecond), res.Unsigned.Round(time.Millisecond), UnsignedMessage)}, nil
			case errors.Is(err, kubeadm.ErrEndpointUnreachable) && ctx.Err() == nil:
				// Never reached: the cluster was not asked whether it
				// signed cluster-info. The wait's hint says which way.
				_, hint := errclass.Of(err)
				return Result{}, errclass.New(errclass.Timeout, hint+" The wait was bounded by spec.join.timeout.",
					fmt.Errorf("spec.join.timeout (%s): discovery at %s: %w", w.Timeout, w.Endpoint, err))
			case errors.Is(err, kubeadm.ErrClusterInfoPending) && ctx.Err() == nil:
				// kubeadm's discovery would wait for the same thing, as long:
				// the join's discovery is over.
				return Result{}, errclass.New(errclass.Timeout, hintDiscoveryTimeout,
					fmt.Errorf("spec.join.timeout (%s): discovery at %s: %w", w.Timeout, w.Endpoint, err))
			}
			return Result{}, err
		},
	}
}

// UnsignedMessage follows, in the wait-cluster-info phase's message of a
// successful wait, the time before the request that found the signature
// (kubeadm.ClusterInfoResult.Unsigned, rounded to the millisecond, as Go
// prints a time.Duration): "(412ms before the signature was there)". It
// is the cluster's time, not machineadm's: `make bench-e2e` reads it to
// tell the two apart.
const UnsignedMessage = "before the signature was there"

// hintDiscoveryTimeout is the hint of a join whose discovery ran out of
// spec.join.timeout.
const hintDiscoveryTimeout = "No signed cluster-info within spec.join.timeout: check that spec.join.apiServerEndpoint is reachable from this machine and serves this cluster, that the bootstrap token exists and has not expired (the controller-manager signs cluster-info for it), or raise spec.join.timeout."

// joinTimeout is spec.join.timeout (validated, defaulted to 5m), or
// kubeadm.DefaultClusterInfoTimeout when it does not parse.
func joinTimeout(s string) time.Duration {
	if t, err := time.ParseDuration(s); err == nil && t > 0 {
		return t
	}
	return kubeadm.DefaultClusterInfoTimeout
}
