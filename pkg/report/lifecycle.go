package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// PanicError is a recovered panic, recorded as class Internal.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic (runtime/debug.Stack).
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// maxStackLines bounds how much of a panic's stack goes to the log tail.
const maxStackLines = 24

// Recover records a panic and writes the report; use it as
//
//	defer rec.Recover(ctx, &err)
//
// in the function that runs the phases (it must be the deferred call
// itself for recover to work). On a panic the running phase is marked
// Failed, the failure is class Internal with the panic's value as the
// error (redacted like every report string), the first lines of the stack
// are added to the log tail, the report is written, and *errp (when not
// nil) is set to the panic error joined with any writer error — the panic
// does not continue. Without a panic Recover does nothing.
func (r *Recorder) Recover(ctx context.Context, errp *error) {
	v := recover()
	if v == nil {
		return
	}
	perr := &PanicError{Value: v, Stack: debug.Stack()}
	stack := strings.Split(strings.TrimRight(string(perr.Stack), "\n"), "\n")
	if len(stack) > maxStackLines {
		stack = stack[:maxStackLines]
	}
	r.AppendOutput(stack...)
	r.Fail("", errclass.New(errclass.Internal, "machineadm panicked: this is a bug; report it with this report (the log tail holds the stack).", perr))
	werr := r.Finish(ctx)
	if errp != nil {
		*errp = errors.Join(perr, werr)
	}
}

// DefaultSignals are the signals WatchSignals watches when given none.
var DefaultSignals = []os.Signal{syscall.SIGTERM, os.Interrupt}

// WatchSignals makes the first of sigs (DefaultSignals when none) that
// arrives write an Interrupted report — the running phase marked Failed —
// within timeout, and then call exit (which should end the process, for
// example with exit code 1). After the first signal the watched signals
// get their default action again, so a second one stops the process at
// once. stop ends the watching; call it when the run is over.
func (r *Recorder) WatchSignals(timeout time.Duration, exit func(), sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = DefaultSignals
	}
	ch := make(chan os.Signal, 1)
	quit := make(chan struct{})
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			_ = r.Interrupted(ctx, sig)
			cancel()
			if exit != nil {
				exit()
			}
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}
