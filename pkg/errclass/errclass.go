// Package errclass holds machineadm's error classes: the fixed, documented
// list of words that an outcome report uses to tell an SRE where to look
// first, and the error type that carries a class and a hint from the place
// a failure is born. Each class is one row of one table (classes.go): its
// word, default hint and documentation lines; docs/report.md's class table
// is generated from it. It is a leaf package: host steps, phases and the
// report all import it, and it imports only the standard library.
package errclass

import (
	"errors"
	"fmt"
)

// Error is an error that carries its report class and a hint for a person.
// Code that knows why something failed wraps the cause with New; the
// report takes the outermost class found with errors.As.
type Error struct {
	// Class is the report class.
	Class Class
	// Hint says what to check, in one sentence for a person.
	Hint string
	// Err is the cause.
	Err error
}

// New wraps err with a class and a hint.
func New(class Class, hint string, err error) *Error {
	return &Error{Class: class, Hint: hint, Err: err}
}

// Errorf is New with a formatted cause (%w is supported).
func Errorf(class Class, hint, format string, args ...any) *Error {
	return &Error{Class: class, Hint: hint, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Of returns the class and hint carried by err, or Internal and an empty
// hint when err carries none.
func Of(err error) (Class, string) {
	var re *Error
	if errors.As(err, &re) {
		return re.Class, re.Hint
	}
	return Internal, ""
}

// InterruptedHint is the hint of a run of the machineadm command command
// ("bootstrap", "prepare") stopped by a signal: it names that command,
// the one to run again. An empty command gives DefaultHint(Interrupted).
func InterruptedHint(command string) string {
	if command == "" {
		return DefaultHint(Interrupted)
	}
	return "The run was stopped by a signal; run `machineadm " + command + "` again with the same spec and flags: it continues from where the host is."
}
