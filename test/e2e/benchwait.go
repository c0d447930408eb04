package e2e

// No build tag: the benchmark's end-state wait and its background poll
// of the Node are unit-tested on the host (benchwait_test.go) with a fake
// clock.

import (
	"fmt"
	"sync"
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

// firstSeen polls cond in a goroutine of its own, every poll from its
// start until cond holds, stop is called or the bound wait gives it has
// passed, and keeps the first time cond held: bench-upgrade-e2e polls the
// Node for the new kubelet version from the command's start, for as long
// as the command runs, so that a tool whose command waits on past that
// point (as machineadm upgrade does for the static pods) is not timed to
// its exit. The goroutine has no bound of its own before wait: one (as
// readyTimeout from the start was) would end it under a command that runs
// longer, and the Node's new version would then be seen only at the
// command's exit.
type firstSeen struct {
	cond func() bool
	poll time.Duration
	// now and sleep are the clock (time.Now and time.Sleep).
	now   func() time.Time
	sleep func(time.Duration)

	quit     chan struct{} // closed by stop
	stopOnce sync.Once
	done     chan struct{} // closed when the goroutine has returned
	// until is wait's bound, zero before wait; mu guards it.
	mu    sync.Mutex
	until time.Time
	// at is the first time cond held: written by the goroutine before
	// done is closed, read by wait after it.
	at time.Time
}

// startFirstSeen starts polling cond now. stop must be called (a
// deferred call) to end it.
func startFirstSeen(cond func() bool, poll time.Duration, now func() time.Time, sleep func(time.Duration)) *firstSeen {
	f := &firstSeen{cond: cond, poll: poll, now: now, sleep: sleep, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for {
			select {
			case <-f.quit:
				return
			default:
			}
			if f.cond() {
				f.at = f.now()
				return
			}
			f.mu.Lock()
			until := f.until
			f.mu.Unlock()
			if !until.IsZero() && f.now().After(until) {
				return
			}
			f.sleep(f.poll)
		}
	}()
	return f
}

// wait bounds the poll by until and returns the first time cond held:
// the zero time when it did not hold by until, or when stop had ended
// the poll before.
func (f *firstSeen) wait(until time.Time) time.Time {
	f.mu.Lock()
	f.until = until
	f.mu.Unlock()
	<-f.done
	return f.at
}

// stop ends the goroutine and waits until it has returned (at most one
// more call of cond and one poll later); calling it again does nothing.
func (f *firstSeen) stop() {
	f.stopOnce.Do(func() { close(f.quit) })
	<-f.done
}
