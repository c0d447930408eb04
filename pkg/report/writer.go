package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Writer delivers a finished report somewhere: a file, the console, a URL.
type Writer interface {
	// Name names the writer in errors, for example "file" or "console".
	Name() string
	// Write delivers r, which is complete and redacted. It must respect
	// ctx and must not keep r after returning.
	Write(ctx context.Context, r *BootstrapReport) error
}

// ProgressWriter is a Writer that also keeps the record of a run that has
// not ended, for when it never ends (SIGKILL, an out-of-memory kill, a
// power loss: no handler runs, so no final report is written). It gets a
// provisional report when the run begins (Recorder.Begin) and as it goes;
// the final report replaces it through Write.
type ProgressWriter interface {
	Writer
	// WriteProgress delivers the provisional report p (redacted; Result
	// Failed, ErrorClass Interrupted unless a failure was recorded). first
	// is set for the run's first one. Called from one goroutine at a time,
	// never concurrently with or after Write.
	WriteProgress(p *BootstrapReport, first bool) error
}

// WriterError is the failure of one writer.
type WriterError struct {
	// Writer is the writer's name.
	Writer string
	// Err is its error.
	Err error
}

func (e *WriterError) Error() string { return "report writer " + e.Writer + ": " + e.Err.Error() }
func (e *WriterError) Unwrap() error { return e.Err }

// runWriters runs every writer concurrently and joins their errors in
// writer order. A writer that panics is reported as failed; it does not
// stop the others. With log set each writer's duration is logged at debug
// level when it returns.
func runWriters(ctx context.Context, writers []Writer, r *BootstrapReport, log *slog.Logger) error {
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i, w := range writers {
		if w == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					errs[i] = &WriterError{Writer: w.Name(), Err: fmt.Errorf("panic: %v", v)}
				}
			}()
			// Each writer gets its own copy: none can disturb another.
			c := *r
			c.Phases = append(make([]Phase, 0, len(r.Phases)), r.Phases...)
			c.LogTail = append([]string(nil), r.LogTail...)
			start := time.Now()
			err := w.Write(ctx, &c)
			if err != nil {
				errs[i] = &WriterError{Writer: w.Name(), Err: err}
			}
			if log != nil {
				log.Debug("outcome report: writer done", "writer", w.Name(), "took", time.Since(start).Round(time.Microsecond), "error", err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RetryPolicy bounds the attempts of a writer that talks to a server.
// Zero fields take the defaults.
type RetryPolicy struct {
	// Attempts is the most attempts made. Default 3.
	Attempts int
	// Total bounds all attempts and the waits between them. Default 30s.
	Total time.Duration
	// PerAttempt bounds one attempt. Default 10s.
	PerAttempt time.Duration
	// Backoff is the wait after the first failed attempt, doubled after
	// each further one. Default 1s.
	Backoff time.Duration
}

// Default retry bounds.
const (
	DefaultAttempts   = 3
	DefaultTotal      = 30 * time.Second
	DefaultPerAttempt = 10 * time.Second
	DefaultBackoff    = time.Second
)

// Permanent marks an error that retrying cannot fix (an HTTP 4xx answer,
// a bad URL); Do returns it at once.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

// Do calls attempt until it succeeds, returns a *Permanent error, the
// attempts run out or Total (or ctx) expires. Each call gets a context
// bounded by PerAttempt. The last error is returned, with the number of
// attempts made.
func (p RetryPolicy) Do(ctx context.Context, attempt func(ctx context.Context) error) error {
	attempts, total, per, backoff := p.Attempts, p.Total, p.PerAttempt, p.Backoff
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	if total <= 0 {
		total = DefaultTotal
	}
	if per <= 0 {
		per = DefaultPerAttempt
	}
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	var err error
	n := 0
	for n < attempts {
		n++
		actx, acancel := context.WithTimeout(ctx, per)
		err = attempt(actx)
		acancel()
		var perm *Permanent
		if err == nil {
			return nil
		}
		if errors.As(err, &perm) {
			return err
		}
		if n == attempts {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %d attempt(s) within %v: %w", n, total, err)
		case <-t.C:
		}
		backoff *= 2
	}
	return fmt.Errorf("gave up after %d attempt(s): %w", n, err)
}
