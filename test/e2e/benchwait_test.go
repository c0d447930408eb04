package e2e

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when slept on (or set); safe for
// firstSeen's goroutine and the test's beside it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) after(d time.Duration) func() bool {
	at := c.now().Add(d)
	return func() bool { return !c.now().Before(at) }
}

func newEndStateWait(c *fakeClock, current func() error, stable func() bool) endStateWait {
	return endStateWait{current: current, stable: stable, currentPoll: 250 * time.Millisecond,
		stablePoll: 100 * time.Millisecond, budget: 3 * time.Minute, now: c.now, sleep: c.sleep}
}

// Static pods that never become current are an error, not a sample whose
// time to the end state reads 0 and whose unavailability stops short.
func TestEndStateWaitStaticPodsNeverCurrent(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	settled := c.now()
	w := newEndStateWait(c, func() error { return errors.New("mirror pod hash a, the kubelet's b") }, func() bool { return true })
	at, err := w.run(settled, true)
	if err == nil || !strings.Contains(err.Error(), "mirror pod hash a") {
		errorf(t, "got %v at %v: want an error that says why the static pods were not current", err, at)
	}
	if c.now().Sub(settled) < w.budget {
		errorf(t, "gave up after %s, before the budget %s", c.now().Sub(settled), w.budget)
	}
}

// Each wait has its own budget: static pods that take most of theirs
// still leave the API server its full budget to become stable.
func TestEndStateWaitBudgetsApart(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	settled := c.now()
	currentAfter := c.after(170 * time.Second)
	var stable func() bool
	w := newEndStateWait(c, func() error {
		if !currentAfter() {
			return errors.New("not yet")
		}
		if stable == nil {
			stable = c.after(30 * time.Second) // the restart's outage, then 10 s of answers
		}
		return nil
	}, func() bool { return stable != nil && stable() })
	at, err := w.run(settled, true)
	if err != nil {
		fatalf(t, "%v (after %s)", err, c.now().Sub(settled))
	}
	if d := at.Sub(settled); d < 170*time.Second || d > 171*time.Second {
		errorf(t, "static pods current %s after the Node's version, want 170 s", d)
	}
	if !stable() {
		errorln(t, "returned before the API server was stable")
	}
}

// A worker has no static pods: only the API server's stability is waited
// for, and a never-stable API server is an error.
func TestEndStateWaitWorker(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	w := newEndStateWait(c, func() error { fatalln(t, "static pods checked on a worker"); return nil }, func() bool { return false })
	if at, err := w.run(c.now(), false); err == nil || !at.IsZero() {
		errorf(t, "got %v, %v: want an error and no static-pod time", at, err)
	}
	c2 := &fakeClock{t: time.Unix(1000, 0)}
	w = newEndStateWait(c2, nil, c2.after(5*time.Second))
	if _, err := w.run(c2.now(), false); err != nil {
		errorf(t, "stable after 5 s: %v", err)
	}
}

// firstSeenWait is how long a test waits in real time for firstSeen's
// goroutine, which runs on the fake clock and so ends in milliseconds:
// only a goroutine that never ends reaches it. The fake clock moves by
// whole polls (100 ms), so the times seen are exact.
const firstSeenWait = 30 * time.Second

// waitFor is f.wait(until), failing the test when it does not return in
// firstSeenWait of real time (a poll that never ends).
func waitFor(t *testing.T, f *firstSeen, until time.Time) time.Time {
	t.Helper()
	ch := make(chan time.Time, 1)
	go func() { ch <- f.wait(until) }()
	select {
	case at := <-ch:
		return at
	case <-time.After(firstSeenWait):
		fatalln(t, "wait did not return")
		return time.Time{}
	}
}

// waitCalled says whether wait has bounded the poll (wait has been
// called).
func (f *firstSeen) waitCalled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.until.IsZero()
}

// pollEnded waits for firstSeen's goroutine to return while the test's
// "command" still runs (before wait).
func pollEnded(t *testing.T, f *firstSeen) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(firstSeenWait):
		fatalln(t, "the poll did not end while the command ran")
	}
}

// The Node at the new version is seen while the command still runs: a
// command that waits on for a minute after that (machineadm upgrade on a
// control plane, for its static pods) is timed to the Node, not to its
// exit, as the command of plain kubeadm, which ends before the Node is at
// the new version, is.
func TestFirstSeenWhileCommandRuns(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	start := c.now()
	f := startFirstSeen(c.after(30*time.Second), 100*time.Millisecond, c.now, c.sleep)
	defer f.stop()
	// The command: it runs until the poll has seen the Node (which on the
	// fake clock takes no time) and returns a minute later.
	pollEnded(t, f)
	c.set(start.Add(90 * time.Second))
	at := waitFor(t, f, c.now().Add(4*time.Minute))
	if d := at.Sub(start); d != 30*time.Second {
		errorf(t, "the Node's new version seen %s after the start, want 30 s (the command returned at 90 s)", d)
	}
}

// A command that runs longer than wait's bound after it (readyTimeout, 4
// min; upgradeTimeout allows 10), with the Node at the new version after
// 4 min 30 s: still seen while the command runs, not at its exit. A poll
// bounded by readyTimeout from the start (as the benchmark's was) gives
// up at 4 min, and the Node is then seen only after the command, at 5 min.
func TestFirstSeenCommandPastReadyTimeout(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	start := c.now()
	f := startFirstSeen(c.after(4*time.Minute+30*time.Second), 100*time.Millisecond, c.now, c.sleep)
	defer f.stop()
	pollEnded(t, f)
	c.set(start.Add(5 * time.Minute)) // the command returns
	at := waitFor(t, f, c.now().Add(4*time.Minute))
	if d := at.Sub(start); d != 4*time.Minute+30*time.Second {
		errorf(t, "the Node's new version seen %s after the start, want 4m30s (the command returned at 5m0s)", d)
	}
}

// A command that returns before the Node is at the new version (plain
// kubeadm's, right after its kubelet restart): the poll goes on after it,
// and wait waits for it.
func TestFirstSeenAfterCommand(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	start := c.now()
	// The condition holds from 20 s, and not before wait has been called
	// (the command has returned).
	var waited atomic.Bool
	reached := c.after(20 * time.Second)
	f := startFirstSeen(func() bool {
		if !waited.Load() {
			c.set(start) // the command still runs: fake time stands still
			return false
		}
		return reached()
	}, 100*time.Millisecond, c.now, c.sleep)
	defer f.stop()
	ch := make(chan time.Time, 1)
	go func() { ch <- f.wait(start.Add(5 * time.Second).Add(4 * time.Minute)) }()
	for end := time.Now().Add(firstSeenWait); !f.waitCalled(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			fatalln(t, "wait was not called")
		}
	}
	waited.Store(true)
	var at time.Time
	select {
	case at = <-ch:
	case <-time.After(firstSeenWait):
		fatalln(t, "wait did not return")
	}
	if d := at.Sub(start); d != 20*time.Second {
		errorf(t, "the Node's new version seen %s after the start, want 20 s", d)
	}
}

// wait's bound ends the poll, and a condition that never held gives the
// zero time, after that bound.
func TestFirstSeenNeverHolds(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	var calls atomic.Int64
	f := startFirstSeen(func() bool { calls.Add(1); return false }, 100*time.Millisecond, c.now, c.sleep)
	defer f.stop()
	until := c.now().Add(9 * time.Minute)
	if at := waitFor(t, f, until); !at.IsZero() {
		errorf(t, "never held, but wait returned %v", at)
	}
	if c.now().Before(until) {
		errorf(t, "wait gave up at %v, before its bound %v", c.now(), until)
	}
	n := calls.Load()
	f.stop()
	if m := calls.Load(); m != n {
		errorf(t, "the condition was called %d times after wait returned", m-n)
	}
}

// stop ends the goroutine, long before any bound, and returns only once
// a call of the condition under way has returned: none follows it.
func TestFirstSeenStop(t *testing.T) {
	var calls atomic.Int64
	var inCond, condReturned atomic.Bool
	entered := make(chan struct{})
	release := make(chan struct{})
	f := startFirstSeen(func() bool {
		if calls.Add(1) == 3 {
			// The third call blocks, as a GET under way does, until
			// the test releases it.
			inCond.Store(true)
			close(entered)
			<-release
			condReturned.Store(true)
		}
		return false
	}, time.Millisecond, time.Now, time.Sleep)
	select {
	case <-entered:
	case <-time.After(firstSeenWait):
		fatalln(t, "the condition was not polled")
	}
	stopped := make(chan bool, 1)
	go func() { f.stop(); stopped <- condReturned.Load() }()
	// Give a stop that would not wait the time to return (not a bound:
	// a stop that waits passes however long this takes).
	time.Sleep(100 * time.Millisecond)
	close(release)
	select {
	case returned := <-stopped:
		if !returned {
			errorln(t, "stop returned while a call of the condition was under way")
		}
	case <-time.After(firstSeenWait):
		fatalln(t, "stop did not end the poll")
	}
	n := calls.Load()
	time.Sleep(50 * time.Millisecond)
	if m := calls.Load(); m != n {
		errorf(t, "the condition was called %d times after stop returned", m-n)
	}
	f.stop() // again: nothing
	if !waitFor(t, f, time.Now().Add(time.Hour)).IsZero() {
		errorln(t, "a stopped poll whose condition never held returned a time")
	}
	if m := calls.Load(); m != n {
		errorf(t, "wait after stop called the condition %d times", m-n)
	}
}
