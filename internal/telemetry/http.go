package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Unmatched is the route label of a request answered before any route
// matched it (a rate limit, a CORS preflight, a body over the limit).
const Unmatched = "unmatched"

// routeKey holds a request's *route in its context.
type routeKey struct{}

// route is where the routed handler leaves the pattern that matched, for the
// middleware that wraps the router: requests may be copied (WithContext) on
// the way in, and the middleware sees only its own copy.
type route struct{ pattern string }

// SetRoute records pattern (an http.ServeMux pattern such as "GET
// /api/runs/{id}") as the route of the request of ctx, for the middleware's
// metrics and span name. It does nothing outside Middleware.
func SetRoute(ctx context.Context, pattern string) {
	if rt, ok := ctx.Value(routeKey{}).(*route); ok && pattern != "" {
		rt.pattern = pattern
	}
}

// Routed wraps a router, such as an http.ServeMux, so that the pattern it
// matched (the request's Pattern once it has routed it) reaches Middleware
// even when the handlers between them pass on copies of the request.
func Routed(router http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { SetRoute(r.Context(), r.Pattern) }()
		router.ServeHTTP(w, r)
	})
}

// routeLabel is the path of a pattern, without its method and host: the
// route label and the span's http.route.
func routeLabel(pattern string) string {
	if pattern == "" {
		return Unmatched
	}
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = strings.TrimLeft(p, " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // a host
	}
	return pattern
}

// methodLabel keeps the standard methods; any other is "other", since a
// client may send any word.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return Other
}

// probe reports whether r is a scrape of the metrics or a health check:
// counted in the metrics like any request, but not traced, since they come
// every few seconds and say nothing of what users do.
func probe(r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics", "/healthz", "/readyz":
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	return false
}

// Middleware measures every request that h answers (relay_http_* metrics)
// and, with tracing on, gives it (probes aside) a server span, continuing the caller's
// trace (W3C traceparent). Metrics and the span are named by the route
// pattern that matched: the Pattern of the request that reached an
// http.ServeMux which got the middleware's own copy, else what SetRoute (or
// Routed) recorded.
func (t *Telemetry) Middleware(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		t.m.httpInFlight.Inc()
		rt := &route{}
		ctx := context.WithValue(r.Context(), routeKey{}, rt)
		var span trace.Span
		if t.tracer != nil && !probe(r) {
			ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.scheme", scheme(r))))
		}
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			code := sw.code
			switch {
			case code == 0 && v != nil:
				code = http.StatusInternalServerError
			case code == 0:
				code = http.StatusOK
			}
			pattern := rt.pattern
			if pattern == "" {
				pattern = r.Pattern
			}
			path, method := routeLabel(pattern), methodLabel(r.Method)
			t.m.httpInFlight.Dec()
			t.m.httpRequests.WithLabelValues(path, method, strconv.Itoa(code)).Inc()
			t.m.httpDuration.WithLabelValues(path, method).Observe(time.Since(start).Seconds())
			if span != nil {
				if pattern != "" {
					span.SetName(r.Method + " " + path)
					span.SetAttributes(attribute.String("http.route", path))
				}
				span.SetAttributes(attribute.Int("http.response.status_code", code))
				if code >= 500 {
					span.SetStatus(codes.Error, "")
					span.SetAttributes(attribute.String("error.type", strconv.Itoa(code)))
				}
				span.End()
			}
			if v != nil {
				panic(v)
			}
		}()
		h.ServeHTTP(sw, r)
	})
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// statusWriter remembers the status code of the answer.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer underneath (flushes
// of streams, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Transport returns rt that, with tracing on, sends the trace context of
// each request's context (W3C traceparent) along with it, so that the
// server it reaches continues the trace.
func (t *Telemetry) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil || t.tracer == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &traceTransport{base: rt, prop: t.prop}
}

type traceTransport struct {
	base http.RoundTripper
	prop propagation.TextMapPropagator
}

func (t *traceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if trace.SpanContextFromContext(r.Context()).IsValid() {
		r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
		t.prop.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
	return t.base.RoundTrip(r)
}
