package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Handler is a slog.Handler that redacts a record's message and attribute
// values before passing the record to the wrapped handler. String values
// are redacted; error, fmt.Stringer and other non-scalar values are
// formatted (err.Error(), String(), %+v) and replaced by the redacted text
// when it differs, so a secret inside a struct or an error never reaches
// the wrapped handler. Groups are redacted recursively; attribute keys are
// kept as they are.
type Handler struct {
	r    *Redactor
	next slog.Handler
}

// NewHandler wraps next so that everything it receives is redacted by r.
func (r *Redactor) NewHandler(next slog.Handler) *Handler {
	return &Handler{r: r, next: next}
}

// Enabled reports whether the wrapped handler handles records at level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle redacts rec and passes it on.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts attrs and returns a handler that adds them to every
// record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &Handler{r: h.r, next: h.next.WithAttrs(red)}
}

// WithGroup returns a handler that puts later attributes into group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{r: h.r, next: h.next.WithGroup(name)}
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		red := make([]any, len(group))
		for i, g := range group {
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		case []byte:
			text = string(x)
		default:
			text = fmt.Sprintf("%+v", x)
			// A JSON handler marshals the value instead: check that form too.
			if js, err := json.Marshal(x); err == nil && h.r.String(string(js)) != string(js) {
				return slog.String(a.Key, h.r.String(text))
			}
		}
		if red := h.r.String(text); red != text {
			return slog.String(a.Key, red)
		}
		return slog.Attr{Key: a.Key, Value: v}
	}
	// Numbers, booleans, times and durations hold no secret text.
	return slog.Attr{Key: a.Key, Value: v}
}
