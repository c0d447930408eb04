package cpcheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// UnitStableFor is how long the healthy checks in a row of a
// control-plane component run as a systemd unit (the Systemd runtime)
// must span: 4 s. No kubelet probe holds a unit back until it has run for
// a while, as kubeadm's startup probe does a static pod, so a unit that
// answers once and exits a moment later (systemd restarts it, Restart=)
// would pass a single check.
const UnitStableFor = 4 * time.Second

// CheckTimeout bounds one health check of the waits after a
// control-plane component changed (day2's WaitLocalControlPlane, the
// Systemd runtime's unit restart): 10 s, within which kubeadm's waiter
// polls every KubernetesAPICallRetryInterval. A check counts only when it
// answered at the waiter's first try (Stable.FirstTry).
const CheckTimeout = 10 * time.Second

// Stable is a wait until a health check passes several times in a row,
// each time at its first try, over at least a given span (WaitStable).
// One healthy answer may come from a component that is about to fail
// again: a unit whose new flags make it exit a few seconds after it
// starts serving, which systemd then restarts.
type Stable struct {
	// Check is one health check, bounded by timeout (the smaller of
	// CheckTimeout and what is left of Timeout). Required.
	Check func(ctx context.Context, timeout time.Duration) error
	// Timeout bounds the whole wait. Required (> 0).
	Timeout time.Duration
	// CheckTimeout bounds one check; default Timeout.
	CheckTimeout time.Duration
	// Count is how many healthy checks in a row are needed; default 1.
	Count int
	// For is how long the healthy checks in a row must span, from the
	// start of the first to the end of the last; 0 none.
	For time.Duration
	// Interval is the pause between two checks; default kubeadm's
	// KubernetesAPICallRetryInterval (500 ms), the period of its waiter.
	Interval time.Duration
	// FirstTry, when > 0, is how long a check may take and still count as
	// answered at its first try: kubeadm's waiter retries every
	// KubernetesAPICallRetryInterval until the components answer, so one
	// that took that long saw a component down first. Such a check
	// starts a new run in a row, at its end. 0 counts every healthy
	// check (a check that does not retry).
	FirstTry time.Duration
	// Abort, when set, runs after each check; a non-nil error ends the
	// wait with it at once (the service manager says the unit restarted
	// since the wait began). Its ctx ends with the wait's Timeout (and
	// no later than AbortTimeout after it began); an Abort that cannot
	// tell returns ErrUnknown (or an error that wraps it): the wait goes
	// on, but does not take the check as vouched for (Watched).
	Abort func(ctx context.Context) error
	// Watched says that Abort watches the checked component's process
	// (the service manager's record of its run: an exit, a restart or a
	// new activation ends the wait). A healthy check that took FirstTry
	// or longer after one healthy at its first try then continues the run
	// instead of starting it again (the first check of a run is still
	// held to FirstTry, so a start-up that needed retries is not in it): had
	// the process exited during it, Abort would have said so, so the slow
	// answer is a loaded machine or a slow dependency (the API server's
	// /livez waits up to --etcd-healthcheck-timeout, 2 s, for etcd), and
	// restarting the run for it would time a healthy component out and
	// roll it back.
	Watched bool
}

// AbortTimeout bounds one Stable.Abort: 5 s, a D-Bus property read that
// systemd answers in milliseconds when it is not stuck.
const AbortTimeout = 5 * time.Second

// StableResult is what WaitStable saw.
type StableResult struct {
	// Streak is the number of healthy checks in a row at the end.
	Streak int
	// Span is the time from the start of the streak's first check to the
	// end of the wait (0 without a streak).
	Span time.Duration
	// Longest is the longest span of a run of healthy checks in a row
	// (from the start of its first check to the end of its last).
	Longest time.Duration
	// Checks is the number of checks made.
	Checks int
	// Slow is the number of healthy checks that took FirstTry or longer.
	Slow int
	// Took is the whole wait.
	Took time.Duration
}

// ErrUnknown is what a Stable.Abort returns (wrapped) when it cannot tell
// whether the component stayed up: a failed read of the service manager.
var ErrUnknown = errors.New("cannot tell whether the component stayed up")

// ErrAborted wraps the error of Stable.Abort that ended a wait.
var ErrAborted = errors.New("health wait aborted")

// WaitStable runs s.Check every s.Interval until s.Count checks in a row
// were healthy at their first try (s.FirstTry) and span at least s.For.
// A failed check, or one that took s.FirstTry or longer, starts the run
// again (the latter counts as the first check of the new run). It gives
// up after s.Timeout or s.Timeout/s.Interval+s.Count checks, whichever
// comes first, with an error that says how far the last run of healthy
// checks got (or the longest, when the last check failed), how many
// healthy checks were slow (StableResult.Slow), and wraps the last
// failure; when s.Abort returns an error, it ends at once
// with that error wrapped in ErrAborted; when ctx ends, with ctx's
// error. Each check runs with a context that ends Grace after its
// timeout, each Abort with one that ends AbortTimeout after it began or
// at the wait's end, so one that blocks cannot hold the wait past its
// bound by more than that.
func WaitStable(ctx context.Context, s Stable) (StableResult, error) {
	if s.Count <= 0 {
		s.Count = 1
	}
	if s.Interval <= 0 {
		s.Interval = kubeadmconstants.KubernetesAPICallRetryInterval
	}
	if s.CheckTimeout <= 0 {
		s.CheckTimeout = s.Timeout
	}
	start := time.Now()
	deadline := start.Add(s.Timeout)
	maxChecks := int(s.Timeout/s.Interval) + s.Count
	var res StableResult
	var since time.Time // the start of the run's first check
	last := errors.New("not checked")
	done := func() StableResult {
		res.Took = time.Since(start)
		if res.Streak > 0 {
			res.Span = time.Since(since)
		}
		return res
	}
	for res.Checks < maxChecks {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		res.Checks++
		began := time.Now()
		timeout := min(left, s.CheckTimeout)
		// A check ends with its timeout (and Grace) even when it does not
		// bound itself; the wait's bound holds for it.
		cctx, cancel := context.WithTimeout(ctx, timeout+Grace)
		err := s.Check(cctx, timeout)
		cancel()
		if ctx.Err() != nil {
			return done(), ctx.Err()
		}
		took := time.Since(began)
		if err == nil && s.FirstTry > 0 && took >= s.FirstTry {
			res.Slow++
		}
		vouch := false // a slow check continues the run if Abort vouches
		switch {
		case err != nil:
			res.Streak, last = 0, err
		case s.FirstTry > 0 && took >= s.FirstTry && s.Watched && s.Abort != nil && res.Streak > 0:
			// The run so far was healthy at the first try and the process
			// stayed (Abort, below): slow, not down.
			res.Streak++
			vouch = true
		case s.FirstTry > 0 && took >= s.FirstTry:
			// Healthy now, not since the check began.
			res.Streak, since = 1, time.Now()
			last = fmt.Errorf("a component answered the health check only after %s (not at the first try)", took.Round(time.Millisecond))
		default:
			if res.Streak == 0 {
				since = began
			}
			res.Streak++
		}
		if res.Streak > 0 {
			res.Longest = max(res.Longest, time.Since(since))
		}
		if s.Abort != nil {
			// Past the wait's end, Abort still has Grace: a check that
			// ended the run is not let through unasked.
			actx, cancel := context.WithTimeout(ctx, min(AbortTimeout, max(time.Until(deadline), Grace)))
			err := s.Abort(actx)
			cancel()
			if ctx.Err() != nil {
				return done(), ctx.Err()
			}
			switch {
			case errors.Is(err, ErrUnknown):
				if vouch {
					// Not vouched for: healthy now, not since the check
					// began, as without Watched.
					res.Streak, since = 1, time.Now()
					last = fmt.Errorf("a component answered the health check only after %s (not at the first try), and %w", took.Round(time.Millisecond), err)
				}
			case err != nil:
				res.Streak = 0
				return done(), fmt.Errorf("%w: %w", ErrAborted, err)
			}
		}
		if res.Streak >= s.Count && time.Since(since) >= s.For {
			return done(), nil
		}
		select {
		case <-ctx.Done():
			return done(), ctx.Err()
		case <-time.After(s.Interval):
		}
	}
	res = done()
	switch {
	case res.Streak > 0:
		run := fmt.Sprintf("%d healthy checks in a row over %s when the wait ended", res.Streak, res.Span.Round(100*time.Millisecond))
		if last.Error() == "not checked" {
			last = errors.New(run)
		} else {
			last = fmt.Errorf("%s; before them: %w", run, last)
		}
	case res.Longest > 0:
		last = fmt.Errorf("healthy checks in a row spanned %s at most; the last check: %w", res.Longest.Round(100*time.Millisecond), last)
	}
	if res.Slow > 0 {
		// Else hidden behind the last check's error.
		last = fmt.Errorf("%d of %d checks were healthy only after %s or longer (a component that was down first, or a slow machine); %w", res.Slow, res.Checks, s.FirstTry, last)
	}
	return res, last
}
