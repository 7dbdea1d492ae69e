package telemetry

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// scope is the instrumentation scope of Relay's spans.
const scope = "github.com/relay-ai/relay"

// tracingConfig is the trace set-up the OTEL_* variables ask for.
type tracingConfig struct {
	endpoint    string // the traces URL, e.g. http://collector:4318/v1/traces
	headers     map[string]string
	timeout     time.Duration // 0: the exporter's default
	gzip        bool
	sampler     sdktrace.Sampler
	samplerName string // as OTEL_TRACES_SAMPLER (and its argument) name it
	service     string
	attrs       []attribute.KeyValue // OTEL_RESOURCE_ATTRIBUTES
	propagators []string
}

// tracingFromEnv reads the OTEL_* variables (docs/observability.md,
// "Traces"). It returns nil, and no error, when they configure no exporter:
// tracing is off unless OTEL_TRACES_EXPORTER says otlp or an OTLP endpoint
// is set, and OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none turn it off.
func tracingFromEnv(getenv func(string) (string, bool)) (*tracingConfig, error) {
	env := func(name string) string {
		v, _ := getenv(name)
		return strings.TrimSpace(v)
	}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	base, traces := env("OTEL_EXPORTER_OTLP_ENDPOINT"), env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	switch exp := strings.ToLower(env("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return nil, nil
	case "":
		if base == "" && traces == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: Relay exports traces with otlp (or none)", exp)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := env(name); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("%s=%s: Relay exports traces over http/protobuf only", name, p)
			}
			break
		}
	}
	c := &tracingConfig{service: "relay"}
	var err error
	switch {
	case traces != "":
		c.endpoint, err = endpointURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces)
	case base != "":
		c.endpoint, err = endpointURL("OTEL_EXPORTER_OTLP_ENDPOINT", base)
		c.endpoint = strings.TrimSuffix(c.endpoint, "/") + "/v1/traces"
	default:
		c.endpoint = "http://localhost:4318/v1/traces"
	}
	if err != nil {
		return nil, err
	}
	c.headers = map[string]string{}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		h, err := parseHeaders(env(name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for k, v := range h {
			// A header HTTP cannot send would fail every export, and lose
			// every span, long after the start said all was well.
			if !validHeaderName(k) {
				// Not quoted: a mistyped pair ("x-api-key: tok=…") may hold a secret.
				return nil, fmt.Errorf("%s: a name is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
			}
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("%s: the value of %q holds a control character, which a header cannot", name, k)
			}
			c.headers[k] = v // the traces' own variable comes second and wins
		}
	}
	if auth := basicAuth(c.endpoint); auth != "" {
		given := false // an Authorization of the headers variables wins
		for k := range c.headers {
			given = given || strings.EqualFold(k, "Authorization")
		}
		if !given {
			c.headers["Authorization"] = auth
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"} {
		if v := env(name); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("%s=%s: want a number of milliseconds above 0", name, v)
			}
			c.timeout = time.Duration(ms) * time.Millisecond
			break
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"} {
		if v := strings.ToLower(env(name)); v != "" {
			if v != "gzip" && v != "none" {
				return nil, fmt.Errorf("%s=%s: want gzip or none", name, v)
			}
			c.gzip = v == "gzip"
			break
		}
	}
	name, arg := strings.ToLower(env("OTEL_TRACES_SAMPLER")), env("OTEL_TRACES_SAMPLER_ARG")
	if c.sampler, err = sampler(name, arg); err != nil {
		return nil, err
	}
	c.samplerName = cmp.Or(name, "parentbased_always_on")
	if strings.HasSuffix(c.samplerName, "traceidratio") {
		c.samplerName += " " + cmp.Or(arg, "1")
	}
	if c.attrs, err = resourceAttrs(env("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return nil, err
	}
	for _, a := range c.attrs {
		if a.Key == "service.name" {
			c.service = a.Value.AsString()
		}
	}
	if s := env("OTEL_SERVICE_NAME"); s != "" {
		c.service = s
	}
	c.propagators = []string{"tracecontext"}
	if p := env("OTEL_PROPAGATORS"); p != "" {
		c.propagators = nil
		for _, name := range strings.Split(p, ",") {
			switch name = strings.TrimSpace(strings.ToLower(name)); name {
			case "tracecontext", "baggage", "none":
				c.propagators = append(c.propagators, name)
			default:
				return nil, fmt.Errorf("OTEL_PROPAGATORS: %q is not one Relay has (tracecontext, baggage, none)", name)
			}
		}
	}
	return c, nil
}

// endpointURL checks an endpoint variable's value: an http or https URL
// without query or fragment, which the OTLP exporter would drop without a
// word (a token there would never reach the collector, and every span be
// refused).
func endpointURL(name, v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: want an http:// or https:// URL, got %q", name, redactURL(v))
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("%s: %q: a query or fragment in the URL is not sent; give credentials as headers (OTEL_EXPORTER_OTLP_HEADERS)", name, redactURL(v))
	}
	return v, nil
}

// basicAuth is the Authorization header of the user and password of
// endpoint, "" when it has none. The OTLP exporter drops a URL's user info,
// so it is sent this way, as a client of such a URL would.
func basicAuth(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+p))
}

// redactURL is u without user info, query or fragment, fit for a log line
// or an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: key=value pairs separated
// by commas, values percent-encoded.
func parseHeaders(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The pair may hold a secret: name its place, not its text.
			return nil, fmt.Errorf("a pair is not key=value")
		}
		// A value that is not percent-encoded is an error, not kept as
		// written: the OTLP exporter reads the process's variable too, and
		// logs such a value, secret and all, on its own stderr.
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("the value of %q is not percent-encoded (a %% starts %%XX)", k)
		}
		out[k] = strings.TrimSpace(dec)
	}
	return out, nil
}

// validHeaderName reports whether k is an HTTP header name: a token of
// RFC 9110.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v can be sent as a header's value: no
// control character but tab.
func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// resourceAttrs reads OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by
// commas, values percent-encoded.
func resourceAttrs(v string) ([]attribute.KeyValue, error) {
	h, err := parseHeaders(v)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]attribute.KeyValue, 0, len(keys))
	for _, k := range keys {
		out = append(out, attribute.String(k, h[k]))
	}
	return out, nil
}

// sampler builds the sampler OTEL_TRACES_SAMPLER names, parentbased_always_on
// by default.
func sampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%s: want a ratio from 0 to 1", arg)
		}
		return r, nil
	}
	switch strings.ToLower(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		r, err := ratio()
		return sdktrace.TraceIDRatioBased(r), err
	case "parentbased_traceidratio":
		r, err := ratio()
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), err
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%s: want always_on, always_off, traceidratio or their parentbased_ forms", name)
}

// Secrets are the values of the OTEL_* variables of getenv that logs and
// errors must never show: the OTLP exporter's header values (an API key of
// the tracing backend) and the user info of its endpoints.
func Secrets(getenv func(string) (string, bool)) []string {
	var out []string
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		v, _ := getenv(name)
		h, err := parseHeaders(v)
		if err != nil {
			// Refused at start, yet masked all the same: every value as written.
			h = map[string]string{}
			for i, kv := range strings.Split(v, ",") {
				if _, val, ok := strings.Cut(kv, "="); ok {
					h[strconv.Itoa(i)] = strings.TrimSpace(val)
				}
			}
		}
		for _, val := range h {
			if val != "" {
				out = append(out, val)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		v, _ := getenv(name)
		if u, err := url.Parse(strings.TrimSpace(v)); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p, basicAuth(strings.TrimSpace(v)))
			}
		}
	}
	return out
}

// startTracing builds the exporter and the tracer provider of c.
func (t *Telemetry) startTracing(ctx context.Context, c *tracingConfig, version string) error {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(c.endpoint), otlptracehttp.WithHeaders(c.headers)}
	if c.timeout > 0 {
		opts = append(opts, otlptracehttp.WithTimeout(c.timeout))
	}
	if c.gzip {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	} else {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return fmt.Errorf("telemetry: OTLP exporter for %s: %w", redactURL(c.endpoint), err)
	}
	attrs := append(slices.Clone(c.attrs), attribute.String("service.name", c.service))
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil {
		return fmt.Errorf("telemetry: resource: %w", err)
	}
	t.provider = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(&loggedExporter{SpanExporter: exp, log: t.log, every: time.Minute}),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(c.sampler),
	)
	t.tracer = t.provider.Tracer(scope)
	var props []propagation.TextMapPropagator
	for _, p := range c.propagators {
		switch p {
		case "tracecontext":
			props = append(props, propagation.TraceContext{})
		case "baggage":
			props = append(props, propagation.Baggage{})
		}
	}
	t.prop = propagation.NewCompositeTextMapPropagator(props...)
	t.tracing = fmt.Sprintf("otlp http/protobuf to %s, sampler %s", redactURL(c.endpoint), c.samplerName)
	return nil
}

// loggedExporter logs the exporter's failures itself, at most once every
// every (with how many there were), instead of passing them to
// OpenTelemetry's process-wide error handler: a collector that is down must
// not flood the log.
type loggedExporter struct {
	sdktrace.SpanExporter
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (e *loggedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropped += len(spans)
	if now := time.Now(); now.Sub(e.last) >= e.every {
		e.log.Warn("telemetry: spans not exported", slog.Int("spans", e.dropped), slog.Any("err", err))
		e.last, e.dropped = now, 0
	}
	return nil
}
