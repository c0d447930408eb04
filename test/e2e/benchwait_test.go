package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when slept on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time        { return c.t }
func (c *fakeClock) sleep(d time.Duration) { c.t = c.t.Add(d) }
func (c *fakeClock) after(d time.Duration) func() bool {
	at := c.t.Add(d)
	return func() bool { return !c.t.Before(at) }
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
		t.Errorf("got %v at %v: want an error that says why the static pods were not current", err, at)
	}
	if c.now().Sub(settled) < w.budget {
		t.Errorf("gave up after %s, before the budget %s", c.now().Sub(settled), w.budget)
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
		t.Fatalf("%v (after %s)", err, c.now().Sub(settled))
	}
	if d := at.Sub(settled); d < 170*time.Second || d > 171*time.Second {
		t.Errorf("static pods current %s after the Node's version, want 170 s", d)
	}
	if !stable() {
		t.Error("returned before the API server was stable")
	}
}

// A worker has no static pods: only the API server's stability is waited
// for, and a never-stable API server is an error.
func TestEndStateWaitWorker(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	w := newEndStateWait(c, func() error { t.Fatal("static pods checked on a worker"); return nil }, func() bool { return false })
	if at, err := w.run(c.now(), false); err == nil || !at.IsZero() {
		t.Errorf("got %v, %v: want an error and no static-pod time", at, err)
	}
	c2 := &fakeClock{t: time.Unix(1000, 0)}
	w = newEndStateWait(c2, nil, c2.after(5*time.Second))
	if _, err := w.run(c2.now(), false); err != nil {
		t.Errorf("stable after 5 s: %v", err)
	}
}
