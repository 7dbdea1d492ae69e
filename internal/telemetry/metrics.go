package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Histogram buckets, in seconds, for what each histogram measures.
var (
	// httpBuckets reach minutes: a stream (chat, run events) is one request.
	httpBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	runBuckets   = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
	modelBuckets = []float64{0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
	ttftBuckets  = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	toolBuckets  = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	lagBuckets   = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900}
)

// metrics are the families Relay updates as things happen, with the caps of
// their labels that users or the configuration name.
type metrics struct {
	httpRequests   *prometheus.CounterVec   // route, method, code
	httpDuration   *prometheus.HistogramVec // route, method
	httpInFlight   prometheus.Gauge
	runs           *prometheus.CounterVec   // agent, outcome
	runDuration    *prometheus.HistogramVec // agent, outcome
	runsInProgress prometheus.Gauge
	modelRequests  *prometheus.CounterVec   // provider, model, outcome
	modelDuration  *prometheus.HistogramVec // provider, model
	modelTTFT      *prometheus.HistogramVec // provider, model
	modelTokens    *prometheus.CounterVec   // provider, model, type
	toolCalls      *prometheus.CounterVec   // server, tool, outcome
	toolDuration   *prometheus.HistogramVec // server, tool
	schedulerLag   prometheus.Histogram

	// The caps: one per label of a group of families, so that the families
	// of a group agree on which values they keep.
	runAgent, runOutcome     *labelCap
	modelProvider, modelName *labelCap
	toolServer, toolName     *labelCap
}

func newMetrics(max int) *metrics {
	return &metrics{
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relay_http_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer (a stream's end for streams), by route pattern and method.",
			Buckets: httpBuckets,
		}, []string{"route", "method"}),
		httpInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "relay_http_requests_in_flight",
			Help: "HTTP requests being answered, streams included.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_runs_total",
			Help: "Runs finished, by the agent that answered the message and how the run ended.",
		}, []string{"agent", "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relay_run_duration_seconds",
			Help:    "Time from a run's start to its end, by agent and how it ended.",
			Buckets: runBuckets,
		}, []string{"agent", "outcome"}),
		runsInProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "relay_runs_in_progress",
			Help: "Runs this process is executing.",
		}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_model_requests_total",
			Help: "Model requests (one streamed turn, retries included), by provider, model and outcome.",
		}, []string{"provider", "model", "outcome"}),
		modelDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relay_model_request_duration_seconds",
			Help:    "Time from sending a model request to the end of its answer, retries included, by provider and model.",
			Buckets: modelBuckets,
		}, []string{"provider", "model"}),
		modelTTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relay_model_time_to_first_token_seconds",
			Help:    "Time from sending a model request to the first piece of its answer (text, tool call or image), by provider and model.",
			Buckets: ttftBuckets,
		}, []string{"provider", "model"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_model_tokens_total",
			Help: "Tokens the providers reported, by provider, model and type (prompt or completion).",
		}, []string{"provider", "model", "type"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_tool_calls_total",
			Help: "Tool calls, by MCP server (builtin for Relay's own tools), tool and outcome.",
		}, []string{"server", "tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relay_tool_call_duration_seconds",
			Help:    "Time a tool call took, by MCP server (builtin for Relay's own tools) and tool.",
			Buckets: toolBuckets,
		}, []string{"server", "tool"}),
		schedulerLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "relay_scheduler_lag_seconds",
			Help:    "Time from a scheduled firing's due time to the start of its run.",
			Buckets: lagBuckets,
		}),
		runAgent:      newLabelCap(max),
		runOutcome:    newLabelCap(16),
		modelProvider: newLabelCap(max),
		modelName:     newLabelCap(max),
		toolServer:    newLabelCap(max),
		toolName:      newLabelCap(max),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.httpRequests, m.httpDuration, m.httpInFlight,
		m.runs, m.runDuration, m.runsInProgress,
		m.modelRequests, m.modelDuration, m.modelTTFT, m.modelTokens,
		m.toolCalls, m.toolDuration,
		m.schedulerLag,
	}
}

// labelCap keeps the values of one label to the first max distinct ones;
// the others become Other, so that users and configurations cannot make a
// metric's series grow without bound.
type labelCap struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
}

func newLabelCap(max int) *labelCap {
	return &labelCap{max: max, seen: map[string]struct{}{}}
}

// value returns v, cleaned (cleanLabel), if it is one of the kept values or
// there is room for it, else Other.
func (c *labelCap) value(v string) string {
	v = cleanLabel(v)
	c.mu.RLock()
	_, ok := c.seen[v]
	full := len(c.seen) >= c.max
	c.mu.RUnlock()
	switch {
	case ok:
		return v
	case full:
		return Other
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; !ok {
		if len(c.seen) >= c.max {
			return Other
		}
		c.seen[v] = struct{}{}
	}
	return v
}

// maxLabelBytes bounds a label value; longer ones are cut.
const maxLabelBytes = 128

// cleanLabel makes v a valid label value: "unknown" for an empty one, valid
// UTF-8, at most maxLabelBytes long.
func cleanLabel(v string) string {
	if v == "" {
		return "unknown"
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if len(v) > maxLabelBytes {
		i := maxLabelBytes
		for i > 0 && !utf8.RuneStart(v[i]) {
			i--
		}
		v = v[:i]
	}
	return v
}

// ObserveSchedulerLag records how late a scheduled firing's run started
// after its due time (relay_scheduler_lag_seconds).
func (t *Telemetry) ObserveSchedulerLag(lag time.Duration) {
	if t == nil {
		return
	}
	t.m.schedulerLag.Observe(max(lag, 0).Seconds())
}

// CollectDB reports the pool statistics of db (open, idle and in-use
// connections, waits) as the go_sql_* metrics with db_name name. Collecting
// another pool under the same name replaces the first.
func (t *Telemetry) CollectDB(name string, db *sql.DB) {
	if t == nil || db == nil {
		return
	}
	c := collectors.NewDBStatsCollector(db, name)
	if err := t.reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			t.reg.Unregister(are.ExistingCollector)
			err = t.reg.Register(c)
		}
		if err != nil {
			t.log.Warn("metrics: database pool statistics", slog.String("db_name", name), slog.Any("err", err))
		}
	}
}

// ConnCount is how many connections to one MCP server are in one state.
type ConnCount struct {
	Server, State string
	Count         int
}

// scrapeFuncs are the functions read at each scrape; nil until set.
type scrapeFuncs struct {
	mcp    atomic.Pointer[func() []ConnCount]
	ingest atomic.Pointer[func(context.Context) (int, error)]
}

// CollectMCP has each scrape report relay_mcp_connections from f, which
// counts the connections to each MCP server by state. A later call replaces
// f.
func (t *Telemetry) CollectMCP(f func() []ConnCount) {
	if t == nil || f == nil {
		return
	}
	t.funcs.mcp.Store(&f)
}

// CollectIngestQueue has each scrape report relay_ingestion_queue_depth from
// f, which counts the files waiting to be ingested. f gets a context that
// ends after ingestQueueTimeout; a failure leaves the metric out of that
// scrape. A later call replaces f.
func (t *Telemetry) CollectIngestQueue(f func(ctx context.Context) (int, error)) {
	if t == nil || f == nil {
		return
	}
	t.funcs.ingest.Store(&f)
}

var (
	mcpDesc = prometheus.NewDesc("relay_mcp_connections",
		"Connections to MCP servers (one per server, or one per user of a user-scoped server), by server and state.",
		[]string{"server", "state"}, nil)
	ingestDesc = prometheus.NewDesc("relay_ingestion_queue_depth",
		"Uploaded files waiting to be ingested, in the whole database: pending, or processing with a lease that ran out.",
		nil, nil)
)

// mcpCollector reports relay_mcp_connections at scrape time.
type mcpCollector struct {
	funcs   *scrapeFuncs
	servers *labelCap
}

func (c *mcpCollector) Describe(ch chan<- *prometheus.Desc) { ch <- mcpDesc }

func (c *mcpCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.funcs.mcp.Load()
	if f == nil {
		return
	}
	// Servers past the cap are summed into Other, state by state.
	sums := map[[2]string]int{}
	var order [][2]string
	for _, cc := range (*f)() {
		k := [2]string{c.servers.value(cc.Server), cleanLabel(cc.State)}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += cc.Count
	}
	for _, k := range order {
		ch <- prometheus.MustNewConstMetric(mcpDesc, prometheus.GaugeValue, float64(sums[k]), k[0], k[1])
	}
}

// ingestQueueTimeout bounds the count of waiting files during a scrape.
const ingestQueueTimeout = 2 * time.Second

// ingestCollector reports relay_ingestion_queue_depth at scrape time.
type ingestCollector struct {
	funcs *scrapeFuncs
	log   *slog.Logger
}

func (c *ingestCollector) Describe(ch chan<- *prometheus.Desc) { ch <- ingestDesc }

func (c *ingestCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.funcs.ingest.Load()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ingestQueueTimeout)
	defer cancel()
	n, err := (*f)(ctx)
	if err != nil {
		c.log.Warn("metrics: counting the files waiting for ingestion", slog.Any("err", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(ingestDesc, prometheus.GaugeValue, float64(n))
}
