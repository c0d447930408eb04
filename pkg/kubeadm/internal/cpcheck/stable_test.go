package cpcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWaitStableHealthy: a check that always passes at once ends the wait
// once the checks in a row span For.
func TestWaitStableHealthy(t *testing.T) {
	t.Parallel()
	res, err := WaitStable(context.Background(), Stable{
		Check:   func(context.Context, time.Duration) error { return nil },
		Timeout: time.Minute, Count: 2, For: time.Second, Interval: 100 * time.Millisecond, FirstTry: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Span < time.Second || res.Streak < 2 || res.Checks != res.Streak {
		t.Errorf("%+v, want a streak of every check over at least 1s", res)
	}
}

// TestWaitStableFailsAgain: healthy answers that stop before For (a
// component that answers and then exits) are not healthy, and the error
// says how long they lasted.
func TestWaitStableFailsAgain(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := WaitStable(context.Background(), Stable{
		Check: func(context.Context, time.Duration) error {
			if time.Since(start) < 500*time.Millisecond {
				return nil
			}
			return errors.New("connection refused")
		},
		Timeout: 3 * time.Second, For: 2 * time.Second, Interval: 100 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "spanned") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want the longest run and the last failure", err)
	}
}

// TestWaitStableRetriedCheck: a check that takes FirstTry or longer (the
// waiter had to try again) starts a new run, so Count such checks in a
// row never pass.
func TestWaitStableRetriedCheck(t *testing.T) {
	t.Parallel()
	res, err := WaitStable(context.Background(), Stable{
		Check: func(context.Context, time.Duration) error {
			time.Sleep(60 * time.Millisecond)
			return nil
		},
		Timeout: 2 * time.Second, Count: 2, Interval: 10 * time.Millisecond, FirstTry: 50 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "not at the first try") {
		t.Fatalf("err = %v (%+v), want checks that needed retries not to count", err, res)
	}
}

// TestWaitStableAbort: Abort's error ends the wait at the first check,
// healthy or not.
func TestWaitStableAbort(t *testing.T) {
	t.Parallel()
	res, err := WaitStable(context.Background(), Stable{
		Check:   func(context.Context, time.Duration) error { return nil },
		Timeout: time.Minute, For: 30 * time.Second,
		Abort: func(context.Context) error { return errors.New("restarted") },
	})
	if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "restarted") || res.Checks != 1 {
		t.Fatalf("err = %v after %d checks, want ErrAborted with Abort's error after one", err, res.Checks)
	}
}

// TestWaitStableContext: ctx's end ends the wait with ctx's error.
func TestWaitStableContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := WaitStable(ctx, Stable{
		Check:   func(context.Context, time.Duration) error { return errors.New("down") },
		Timeout: time.Minute,
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestWaitStableBounded: a check or an Abort that blocks until its
// context ends (a stuck systemd on D-Bus, a check that ignores its
// timeout) cannot hold the wait past its Timeout by more than Grace or
// AbortTimeout. The wait used to pass them the caller's context, which
// has no deadline, and waited for ever.
func TestWaitStableBounded(t *testing.T) {
	t.Parallel()
	block := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for name, s := range map[string]Stable{
		"check": {Check: func(ctx context.Context, _ time.Duration) error { return block(ctx) }},
		"abort": {Check: func(context.Context, time.Duration) error { return nil }, Abort: block},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s.Timeout, s.For, s.Interval = time.Second, time.Minute, 100*time.Millisecond
			ended := make(chan error, 1)
			go func() {
				_, err := WaitStable(context.Background(), s)
				ended <- err
			}()
			select {
			case err := <-ended:
				if err == nil {
					t.Error("healthy, want an error: the checks never spanned a minute")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the wait with a 1 s timeout did not end within 30 s")
			}
		})
	}
}

// TestWaitStableWatchedSlow: when Abort watches the process (Watched), a
// healthy check that took FirstTry or longer continues a run begun by one
// at its first try, and a run cannot begin with a slow check's start.
func TestWaitStableWatchedSlow(t *testing.T) {
	t.Parallel()
	n := 0
	res, err := WaitStable(context.Background(), Stable{
		Check: func(context.Context, time.Duration) error {
			n++
			if n == 1 {
				return errors.New("connection refused")
			}
			time.Sleep(60 * time.Millisecond)
			return nil
		},
		Timeout: time.Minute, Count: 3, Interval: 10 * time.Millisecond, FirstTry: 50 * time.Millisecond,
		Watched: true, Abort: func(context.Context) error { return nil },
	})
	if err != nil || res.Streak < 3 {
		t.Fatalf("%+v, %v; want slow healthy checks of a watched process to count", res, err)
	}
	// Watched, but the service manager cannot tell (a failed read): a
	// slow check is not vouched for.
	n = 0
	_, err = WaitStable(context.Background(), Stable{
		Check: func(context.Context, time.Duration) error {
			n++
			if n > 1 {
				time.Sleep(60 * time.Millisecond)
			}
			return nil
		},
		Timeout: time.Second, Count: 3, Interval: 10 * time.Millisecond, FirstTry: 50 * time.Millisecond,
		Watched: true, Abort: func(context.Context) error { return fmt.Errorf("%w: D-Bus timeout", ErrUnknown) },
	})
	if err == nil || errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "D-Bus timeout") {
		t.Fatalf("err = %v, want slow checks not vouched for when Abort cannot tell, and no abort", err)
	}
	// Without Watched, the old rule: slow checks never count.
	_, err = WaitStable(context.Background(), Stable{
		Check:   func(context.Context, time.Duration) error { time.Sleep(60 * time.Millisecond); return nil },
		Timeout: time.Second, Count: 3, Interval: 10 * time.Millisecond, FirstTry: 50 * time.Millisecond,
		Abort: func(context.Context) error { return nil },
	})
	if err == nil || !strings.Contains(err.Error(), "not at the first try") || !strings.Contains(err.Error(), "were healthy only after 50ms or longer") {
		t.Fatalf("err = %v, want slow checks not to count without Watched, and the error to count them", err)
	}
}
