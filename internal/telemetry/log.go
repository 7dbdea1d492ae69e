package telemetry

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// requestIDKey holds a request's id in its context.
type requestIDKey struct{}

// WithRequestID returns ctx carrying id, the id of the HTTP request it
// serves, for the log lines written with it (LogHandler).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id of ctx, "" when it has none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// LogHandler wraps h so that every record logged with a context gets the
// request_id of the request it serves (WithRequestID) and, while a span is
// recording, its trace_id and span_id: a log line and its trace find each
// other. The attributes are added after the record's own, inside any group
// the logger opened (Relay's loggers open none).
func LogHandler(h slog.Handler) slog.Handler {
	return &logHandler{next: h}
}

type logHandler struct {
	next slog.Handler
	// pending are the attributes of WithAttrs not yet given to next: a
	// logger made for each run (its id as an attribute) mostly writes
	// nothing, and a handler such as slog's formats the attributes it is
	// given at once. They are given at its first record.
	pending []slog.Attr
	once    sync.Once
	with    slog.Handler // next with pending, once made
}

// handler is next with the pending attributes.
func (h *logHandler) handler() slog.Handler {
	if len(h.pending) == 0 {
		return h.next
	}
	h.once.Do(func() { h.with = h.next.WithAttrs(h.pending) })
	return h.with
}

func (h *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	next := h.handler()
	if ctx == nil {
		return next.Handle(ctx, r)
	}
	id, span := RequestID(ctx), trace.SpanFromContext(ctx)
	recording := span.IsRecording()
	if id == "" && !recording {
		return next.Handle(ctx, r)
	}
	r = r.Clone() // the caller's record may share its attributes' storage
	if id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if recording {
		sc := span.SpanContext()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return next.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return &logHandler{next: h.next, pending: slices.Concat(h.pending, attrs)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: h.handler().WithGroup(name)}
}
