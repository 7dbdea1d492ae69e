package redact

import (
	"context"
	"log/slog"
)

// Handler is a slog.Handler that masks known secrets in every record's message
// and attributes (strings, errors and anything else that prints as text, in
// groups too) before the handler it wraps writes it. It is the last line of
// defence: the code that builds a message should not put a secret in it.
type Handler struct {
	next slog.Handler
	r    *Replacer
}

// NewHandler wraps next so that the secrets of r never reach it. With an empty
// r it returns next itself.
func NewHandler(next slog.Handler, r *Replacer) slog.Handler {
	if r.Empty() {
		return next
	}
	return &Handler{next: next, r: r}
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle masks the record's secrets and passes it on.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs masks the attributes once, when they are added.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(clean), r: h.r}
}

// WithGroup opens a group in the wrapped handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), r: h.r}
}

// attr returns a with its secrets masked.
func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); h.r.Any(s) {
			return slog.String(a.Key, h.r.String(s))
		}
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// An error, a Stringer or a value printed with %+v: masked as its text
		// when that holds a secret.
		if s := v.String(); h.r.Any(s) {
			return slog.String(a.Key, h.r.String(s))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
