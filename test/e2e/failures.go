package e2e

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// A CI log keeps the tail of a failed run, and a failing check's message
// can sit hundreds of lines above it, under the logs of the checks that
// passed after it. The scenarios therefore report through errorf, errorln,
// fatalf and fatalln, which record each message before handing it to the
// testing package, and TestMain ends a failed run with the recorded
// messages, one line each (writeFailures).

// failureLog holds the messages of failed checks in the order they were
// reported.
var failureLog struct {
	mu   sync.Mutex
	msgs []failure
}

type failure struct {
	test, msg string
	fatal     bool
}

func recordFailure(t testing.TB, fatal bool, msg string) {
	failureLog.mu.Lock()
	defer failureLog.mu.Unlock()
	failureLog.msgs = append(failureLog.msgs, failure{test: t.Name(), msg: msg, fatal: fatal})
}

// errorf is t.Errorf, recorded for the run's failure summary.
func errorf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	recordFailure(t, false, msg)
	t.Error(msg)
}

// errorln is t.Error, recorded for the run's failure summary.
func errorln(t testing.TB, args ...any) {
	t.Helper()
	msg := strings.TrimSuffix(fmt.Sprintln(args...), "\n")
	recordFailure(t, false, msg)
	t.Error(msg)
}

// fatalf is t.Fatalf, recorded for the run's failure summary.
func fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	recordFailure(t, true, msg)
	t.Fatal(msg)
}

// fatalln is t.Fatal, recorded for the run's failure summary.
func fatalln(t testing.TB, args ...any) {
	t.Helper()
	msg := strings.TrimSuffix(fmt.Sprintln(args...), "\n")
	recordFailure(t, true, msg)
	t.Fatal(msg)
}

// summaryLineMax bounds one message's line in the summary (bytes): a
// message that quotes a journal or a report is cut, its first line kept.
const summaryLineMax = 300

// summaryMax bounds the number of messages the summary shows; the count
// of the others is given.
const summaryMax = 12

// writeFailures writes the recorded messages to w, one line each (the
// test's name, then the message's first line cut at summaryLineMax
// bytes), at most summaryMax of them, and says how many there were. It
// writes nothing when none was recorded.
func writeFailures(w io.Writer) {
	failureLog.mu.Lock()
	msgs := append([]failure(nil), failureLog.msgs...)
	failureLog.mu.Unlock()
	if len(msgs) == 0 {
		return
	}
	fmt.Fprintf(w, "== e2e: %d failed check(s), first line of each:\n", len(msgs))
	for i, f := range msgs {
		if i == summaryMax {
			fmt.Fprintf(w, "  … and %d more (above, in the tests' output)\n", len(msgs)-summaryMax)
			break
		}
		line, _, more := strings.Cut(f.msg, "\n")
		if len(line) > summaryLineMax {
			line, more = strings.ToValidUTF8(line[:summaryLineMax], ""), true
		}
		if more {
			line += " […]"
		}
		kind := "error"
		if f.fatal {
			kind = "fatal"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", f.test, kind, line)
	}
}
