package e2e

// No build tag: the benchmark's end-state wait is unit-tested on the host
// (benchwait_test.go) with a fake clock.

import (
	"fmt"
	"time"
)

// endStateWait is how bench-upgrade-e2e waits, after the Node reports the
// new kubelet version, for the state over which both tools' figures are
// taken: on a control plane until the kubelet runs the current static
// pods (current returns nil), then until the API server has answered for
// apiStableFor in a row (stable returns true).
type endStateWait struct {
	// current reports why the static pods are not current yet; nil when
	// they are. Not called on a worker.
	current func() error
	// stable reports whether the API server has answered long enough.
	stable func() bool
	// currentPoll and stablePoll are the periods of the two checks;
	// budget bounds each wait.
	currentPoll, stablePoll, budget time.Duration
	// now and sleep are the clock (time.Now and time.Sleep).
	now   func() time.Time
	sleep func(time.Duration)
}

// run waits for the end state from settled, the Node's new version. It
// returns when the static pods were current (zero on a worker), or an
// error when a state was not reached within its budget: such a sample
// stops short of the end state, so its figures are not comparable. Each
// wait has its own budget (the API server's from when the static pods
// were current), so that a slow kubelet does not cut the stability wait.
func (w endStateWait) run(settled time.Time, controlPlane bool) (time.Time, error) {
	var at time.Time
	from := settled
	if controlPlane {
		for {
			err := w.current()
			if err == nil {
				at = w.now()
				break
			}
			if w.now().Sub(settled) > w.budget {
				return at, fmt.Errorf("the static pods were not current within %s of the Node's new version: %w", w.budget, err)
			}
			w.sleep(w.currentPoll)
		}
		from = at
	}
	for !w.stable() {
		if w.now().Sub(from) > w.budget {
			return at, fmt.Errorf("the API server did not answer long enough in a row within %s", w.budget)
		}
		w.sleep(w.stablePoll)
	}
	return at, nil
}
