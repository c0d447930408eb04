package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The console is for people: progress lines, the summary, warnings and
// errors. machineadm's structured log goes elsewhere:
//   - to the run's log file, LogFileName beside the outcome report, at
//     debug level, with the full output of kubeadm;
//   - warnings also to the report's log tail (errors are the report's own);
//   - to standard error only with --log-level (ParseLogLevel), which
//     replaces ConsoleHandler there.

// LogFileName is the name of a run's log file, in the directory of the
// outcome report (/var/lib/machineadm/machineadm.log by default; a dry run's
// is below its directory).
const LogFileName = "machineadm.log"

// maxLogFile bounds the log file: a larger one is moved to
// machineadm.log.1 (replacing it) when a run starts, in bytes.
const maxLogFile = 8 << 20

// LogLevels are the values of --log-level.
var LogLevels = []string{"debug", "info", "warn", "error"}

// ParseLogLevel reads a --log-level value: "" is the default (no
// structured log on standard error, only ConsoleHandler's warnings and
// errors), else one of LogLevels. Anything else is a *UsageError.
func ParseLogLevel(s string) (level slog.Level, structured bool, err error) {
	if s == "" {
		return slog.LevelWarn, false, nil
	}
	if !slices.Contains(LogLevels, strings.ToLower(s)) || level.UnmarshalText([]byte(s)) != nil {
		return 0, false, Usagef("--log-level must be one of %s, got %q", strings.Join(LogLevels, ", "), s)
	}
	return level, true, nil
}

// StderrLogger is the logger of pkg/cmd for standard error: with a level
// from --log-level, slog's text format at that level; without one,
// ConsoleHandler.
func StderrLogger(w io.Writer, logLevel string) (*slog.Logger, error) {
	level, structured, err := ParseLogLevel(logLevel)
	if err != nil {
		return nil, err
	}
	if structured {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
	}
	return slog.New(ConsoleHandler(w)), nil
}

// ConsoleHandler returns a slog.Handler for a person's terminal: it prints
// only warnings and errors, one line each, as "warning: MESSAGE (k=v ...)"
// or "error: MESSAGE (k=v ...)", without time or level keys.
func ConsoleHandler(w io.Writer) slog.Handler {
	return &consoleHandler{w: w, mu: &sync.Mutex{}}
}

type consoleHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	attrs  []slog.Attr
	prefix string
}

func (h *consoleHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *consoleHandler) Handle(_ context.Context, r slog.Record) error {
	word := "warning"
	if r.Level >= slog.LevelError {
		word = "error"
	}
	var kv []string
	add := func(prefix string, a slog.Attr) {
		if a.Equal(slog.Attr{}) {
			return
		}
		kv = append(kv, prefix+a.Key+"="+quoteValue(a.Value.Resolve().String()))
	}
	for _, a := range h.attrs {
		add("", a)
	}
	r.Attrs(func(a slog.Attr) bool { add(h.prefix, a); return true })
	line := word + ": " + r.Message
	if len(kv) > 0 {
		line += " (" + strings.Join(kv, " ") + ")"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line+"\n")
	return err
}

func (h *consoleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	for _, a := range as {
		a.Key = h.prefix + a.Key
		c.attrs = append(append([]slog.Attr(nil), h.attrs...), a)
	}
	return &c
}

func (h *consoleHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

// quoteValue quotes a value that holds a space or a quote.
func quoteValue(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"=") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// belowError passes on the records of h below error level. A run's
// failure is the command's to print (the summary, "Error: ..."), so the
// console and the report's log tail leave out the error records that say
// the same.
type belowError struct{ slog.Handler }

func (h belowError) Enabled(ctx context.Context, l slog.Level) bool {
	return l < slog.LevelError && h.Handler.Enabled(ctx, l)
}

func (h belowError) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h belowError) WithAttrs(as []slog.Attr) slog.Handler {
	return belowError{h.Handler.WithAttrs(as)}
}

func (h belowError) WithGroup(name string) slog.Handler {
	return belowError{h.Handler.WithGroup(name)}
}

// forRun is the caller's handler as a run uses it: ConsoleHandler without
// error records (the run prints its failure itself); any other handler
// (--log-level) as it is.
func forRun(h slog.Handler) slog.Handler {
	if _, ok := h.(*consoleHandler); ok {
		return belowError{h}
	}
	return h
}

// fanout sends every record to each handler that is enabled for it.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}

// lineFunc is an io.Writer that calls fn with each line written; slog's
// text handler writes one record per Write.
type lineFunc func(line string)

func (fn lineFunc) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		fn(l)
	}
	return len(p), nil
}

// logSink is the run's log file in dir, opened on first use by open (a
// run that stops at bad input leaves no file); writes before open, or
// after it failed, are dropped. Safe for concurrent use.
type logSink struct {
	dir string
	mu  sync.Mutex
	f   *os.File
	// tried is set by open, whether or not the file could be opened;
	// name is the file's path once it was.
	tried bool
	name  string
}

func (s *logSink) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tried {
		s.tried, s.f = true, openLogFile(s.dir)
		if s.f != nil {
			s.name = s.f.Name()
		}
	}
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_, _ = s.f.Write(p)
	}
	return len(p), nil
}

// path is the file's path, "" when it was never opened.
func (s *logSink) path() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

func (s *logSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// openLogFile opens the run's log file in dir for appending (0600, dir
// created 0755 when missing), first moving one larger than maxLogFile to
// LogFileName+".1". It returns nil when the file cannot be opened: the log
// file is a convenience, never a reason for a run to fail.
func openLogFile(dir string) *os.File {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil
	}
	path := filepath.Join(dir, LogFileName)
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogFile {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return f
}
