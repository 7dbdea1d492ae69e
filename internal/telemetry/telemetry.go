// Package telemetry is what Relay reports about itself, for the people who
// run it: Prometheus metrics (HTTP requests, runs, model requests and their
// tokens, tool calls, MCP connections, the scheduler's lag, the ingestion
// queue, the database pools, the Go runtime and the process) in a registry of
// Relay's own; OpenTelemetry traces, exported over OTLP/HTTP when the
// standard OTEL_* variables ask for them and costing next to nothing when
// they do not; and the trace and request ids of a request on every log line
// it writes.
//
// It owns the names: each metric with its labels, each span with its
// attributes (docs/observability.md lists them). The packages that measure
// something call it through one-line hooks: decorators of llm.Model and
// tool.Tool, an HTTP middleware, spans for runs, agents, MCP requests and
// database transactions, and functions read at scrape time. Every method
// works on a nil *Telemetry and then does nothing, so that a caller without
// telemetry needs no branch.
//
// Labels never hold user, conversation or run ids; a label whose values come
// from users or the configuration (agents, models, tools, MCP servers) keeps
// its first Options.MaxLabelValues distinct values and counts the rest as
// "other".
package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure New; the zero value gives metrics and, unless the
// process's OTEL_* variables ask for traces, no tracing.
type Options struct {
	// Getenv reads the OTEL_* variables (docs/observability.md); nil means
	// the process environment.
	Getenv func(string) (string, bool)
	// Version is Relay's version: relay_build_info's label and the traces'
	// service.version.
	Version string
	// Logger receives telemetry's own troubles, such as spans that could not
	// be exported; nil discards them.
	Logger *slog.Logger
	// MaxLabelValues is how many distinct values a label taken from users or
	// the configuration keeps per metric (0: DefaultMaxLabelValues); later
	// values are counted as Other.
	MaxLabelValues int
}

// DefaultMaxLabelValues is Options.MaxLabelValues's default.
const DefaultMaxLabelValues = 200

// Other is the label value of everything past a label's cap.
const Other = "other"

// Telemetry holds Relay's metrics and its tracer. Build it with New; a nil
// *Telemetry is valid and measures nothing.
type Telemetry struct {
	reg *prometheus.Registry
	m   *metrics
	log *slog.Logger

	// tracer is nil when tracing is off: every span helper checks it first.
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	provider *sdktrace.TracerProvider
	// tracing describes the trace set-up for the start-up log line.
	tracing string

	funcs *scrapeFuncs
}

// New builds the metrics registry and, when the OTEL_* variables of o.Getenv
// configure an exporter, the tracer; call Shutdown at exit to flush spans. An
// error names the variable that is wrong.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxLabelValues <= 0 {
		o.MaxLabelValues = DefaultMaxLabelValues
	}
	t := &Telemetry{reg: prometheus.NewRegistry(), log: o.Logger, funcs: &scrapeFuncs{}}
	t.m = newMetrics(o.MaxLabelValues)
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "relay_build_info",
		Help:        "Always 1; its labels are Relay's version and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": cleanLabel(o.Version), "go_version": runtime.Version()},
	})
	build.Set(1)
	cs := append(t.m.collectors(),
		build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&mcpCollector{funcs: t.funcs, servers: newLabelCap(o.MaxLabelValues)},
		&ingestCollector{funcs: t.funcs, log: o.Logger},
	)
	for _, c := range cs {
		if err := t.reg.Register(c); err != nil {
			return nil, err
		}
	}
	tc, err := tracingFromEnv(o.Getenv)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		if err := t.startTracing(ctx, tc, o.Version); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Tracing returns how spans are exported ("" when tracing is off), for the
// start-up log: the exporter's address without credentials, and the sampler.
func (t *Telemetry) Tracing() string {
	if t == nil {
		return ""
	}
	return t.tracing
}

// Shutdown exports the spans not sent yet and stops the tracer, within ctx.
// Spans started after it are dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return errors.Join(errors.New("telemetry: flushing spans"), err)
	}
	return nil
}

// Handler serves the metrics in Prometheus's text format, for a scrape.
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{
		ErrorLog:      slogErrorLog{t.log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Gatherer is the registry of Relay's metrics, for tests and for collectors
// of its own.
func (t *Telemetry) Gatherer() prometheus.Gatherer {
	if t == nil {
		return prometheus.NewRegistry()
	}
	return t.reg
}

// slogErrorLog passes promhttp's errors (a collector that failed during a
// scrape) to the logger.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) {
	l.log.Warn("metrics scrape", slog.Any("err", v))
}
