package telemetry_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	_ "modernc.org/sqlite"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
	"github.com/relay-ai/relay/internal/tool"
)

// newTelemetry returns a Telemetry without tracing.
func newTelemetry(t testing.TB, o telemetry.Options) *telemetry.Telemetry {
	t.Helper()
	if o.Getenv == nil {
		o.Getenv = telemetrytest.Env(nil)
	}
	tel, err := telemetry.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

// value returns the value of the series of family name with labels: a
// counter's or gauge's value, a histogram's count. ok is false when there
// is no such series.
func value(t testing.TB, tel *telemetry.Telemetry, name string, labels map[string]string) (v float64, ok bool) {
	t.Helper()
	fams, err := tel.Gatherer().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, want := range labels {
				if have[k] != want {
					continue series
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func want(t testing.TB, tel *telemetry.Telemetry, name string, labels map[string]string, v float64) {
	t.Helper()
	got, ok := value(t, tel, name, labels)
	if !ok {
		t.Errorf("%s%v: no such series", name, labels)
		return
	}
	if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// fakeTool answers with result and err.
type fakeTool struct {
	name   string
	result tool.Result
	err    error
}

func (f fakeTool) Name() string { return f.name }
func (f fakeTool) Call(context.Context, string, json.RawMessage) (tool.Result, error) {
	return f.result, f.err
}

func TestModelSeries(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{})
	m := tel.Model(llmtest.New(
		llmtest.Turn{Text: []string{"Hel", "lo"}, Usage: llm.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15}},
		llmtest.Turn{Err: &llm.Error{Kind: llm.ErrRateLimited, Status: 429, Message: "slow down"}},
	), "openai")
	var events int
	turn, err := m.Stream(context.Background(), &llm.Request{Model: "gpt-4o"}, func(llm.Event) { events++ })
	if err != nil || turn.Text != "Hello" {
		t.Fatalf("Stream = %+v, %v", turn, err)
	}
	if events != 3 { // two pieces of text and the usage
		t.Errorf("the caller got %d events, want 3", events)
	}
	if _, err := m.Stream(context.Background(), &llm.Request{Model: "gpt-4o"}, nil); err == nil {
		t.Fatal("the second turn did not fail")
	}
	labels := map[string]string{"provider": "openai", "model": "gpt-4o"}
	want(t, tel, "relay_model_requests_total", map[string]string{"provider": "openai", "model": "gpt-4o", "outcome": "ok"}, 1)
	want(t, tel, "relay_model_requests_total", map[string]string{"provider": "openai", "model": "gpt-4o", "outcome": "rate_limited"}, 1)
	want(t, tel, "relay_model_request_duration_seconds", labels, 2)
	want(t, tel, "relay_model_time_to_first_token_seconds", labels, 1) // the failed turn sent nothing
	want(t, tel, "relay_model_tokens_total", map[string]string{"provider": "openai", "model": "gpt-4o", "type": "prompt"}, 12)
	want(t, tel, "relay_model_tokens_total", map[string]string{"provider": "openai", "model": "gpt-4o", "type": "completion"}, 3)
}

// bodierModel is a model that is also an llm.Bodier.
type bodierModel struct{ *llmtest.Model }

func (bodierModel) Body(*llm.Request) ([]byte, error) { return []byte("{}"), nil }

func TestModelKeepsWhatTheModelIs(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{})
	if _, ok := tel.Model(llmtest.New(), "openai").(llm.Bodier); ok {
		t.Error("a model that is no Bodier became one")
	}
	m := tel.Model(bodierModel{llmtest.New()}, "openai")
	b, ok := m.(llm.Bodier)
	if !ok {
		t.Fatal("a Bodier lost its Body")
	}
	if body, _ := b.Body(&llm.Request{}); string(body) != "{}" {
		t.Errorf("Body = %s", body)
	}
	if _, ok := m.(llm.ParamChecker); ok {
		t.Error("a model that is no ParamChecker became one")
	}
}

func TestToolSeries(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{})
	ok := tel.Tool(fakeTool{name: "web_search", result: tool.Text("found")}, telemetry.Builtin)
	bad := tel.Tool(fakeTool{name: "web_search", result: tool.Errorf("no query")}, telemetry.Builtin)
	broken := tel.Tool(fakeTool{name: "web_search", err: errors.New("down")}, telemetry.Builtin)
	if ok.Name() != "web_search" {
		t.Errorf("Name = %q", ok.Name())
	}
	for _, tl := range []tool.Tool{ok, ok, bad, broken} {
		_, _ = tl.Call(context.Background(), "user_1", json.RawMessage(`{}`))
	}
	for outcome, n := range map[string]float64{"ok": 2, "tool_error": 1, "error": 1} {
		want(t, tel, "relay_tool_calls_total", map[string]string{"server": "builtin", "tool": "web_search", "outcome": outcome}, n)
	}
	want(t, tel, "relay_tool_call_duration_seconds", map[string]string{"server": "builtin", "tool": "web_search"}, 4)

	// An MCP call measured without a tool.Tool.
	_, call := tel.StartTool(context.Background(), "files", "read")
	call.End(false, nil)
	want(t, tel, "relay_tool_calls_total", map[string]string{"server": "files", "tool": "read", "outcome": "ok"}, 1)
}

// copyRequest is middleware that passes on a copy of each request, as
// authentication middleware does when it adds the user to the context.
func copyRequest(h http.Handler) http.Handler {
	type key struct{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, "x")))
	})
}

func TestHTTPRoutes(t *testing.T) {
	newMux := func() *http.ServeMux {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /api/runs/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
		mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
		return mux
	}
	for _, tc := range []struct {
		name  string
		build func(tel *telemetry.Telemetry) http.Handler
	}{
		// The middleware's copy reaches the mux: its Pattern is seen.
		{"mux under the middleware", func(tel *telemetry.Telemetry) http.Handler { return tel.Middleware(newMux()) }},
		// A copy in between hides Pattern; Routed carries it over.
		{"copies in between, Routed", func(tel *telemetry.Telemetry) http.Handler {
			return tel.Middleware(copyRequest(telemetry.Routed(newMux())))
		}},
		// The handler says it itself.
		{"copies in between, SetRoute", func(tel *telemetry.Telemetry) http.Handler {
			mux := newMux()
			return tel.Middleware(copyRequest(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, pattern := mux.Handler(r)
				telemetry.SetRoute(r.Context(), pattern)
				mux.ServeHTTP(w, r)
			})))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t, telemetry.Options{})
			srv := httptest.NewServer(tc.build(tel))
			defer srv.Close()
			for _, id := range []string{"run_a", "run_b", "run_c"} {
				resp, err := http.Get(srv.URL + "/api/runs/" + id)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want(t, tel, "relay_http_requests_total", map[string]string{"route": "/api/runs/{id}", "method": "GET", "code": "404"}, 3)
			want(t, tel, "relay_http_requests_total", map[string]string{"route": "/api/chat", "method": "POST", "code": "200"}, 1)
			want(t, tel, "relay_http_request_duration_seconds", map[string]string{"route": "/api/runs/{id}", "method": "GET"}, 3)
			want(t, tel, "relay_http_requests_in_flight", nil, 0)
			if _, ok := value(t, tel, "relay_http_requests_total", map[string]string{"route": "/api/runs/run_a"}); ok {
				t.Error("a raw path became a route label")
			}
		})
	}
}

func TestHTTPUnmatchedAndOddMethods(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{})
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTooManyRequests) })
	srv := httptest.NewServer(tel.Middleware(refuse))
	defer srv.Close()
	req, _ := http.NewRequest("BREW", srv.URL+"/pot/1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want(t, tel, "relay_http_requests_total", map[string]string{"route": "unmatched", "method": "other", "code": "429"}, 1)
}

func TestLabelCap(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{MaxLabelValues: 2})
	m := tel.Model(llmtest.Func(func(*llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"x"}} }), "custom")
	for _, name := range []string{"a", "b", "c", "d", "a", "\xff"} {
		if _, err := m.Stream(context.Background(), &llm.Request{Model: name}, nil); err != nil {
			t.Fatal(err)
		}
	}
	want(t, tel, "relay_model_requests_total", map[string]string{"model": "a"}, 2)
	want(t, tel, "relay_model_requests_total", map[string]string{"model": "b"}, 1)
	want(t, tel, "relay_model_requests_total", map[string]string{"model": "other"}, 3)
	for _, name := range []string{"c", "d"} {
		if _, ok := value(t, tel, "relay_model_requests_total", map[string]string{"model": name}); ok {
			t.Errorf("model %q past the cap has a series of its own", name)
		}
	}
}

func TestRunsAndScheduler(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{})
	_, r1 := tel.StartRun(context.Background(), "support", "run_1", "conv_1")
	_, r2 := tel.StartRun(context.Background(), "support", "run_2", "conv_1")
	want(t, tel, "relay_runs_in_progress", nil, 2)
	r1.End("succeeded")
	r2.End("failed")
	want(t, tel, "relay_runs_in_progress", nil, 0)
	want(t, tel, "relay_runs_total", map[string]string{"agent": "support", "outcome": "succeeded"}, 1)
	want(t, tel, "relay_runs_total", map[string]string{"agent": "support", "outcome": "failed"}, 1)
	want(t, tel, "relay_run_duration_seconds", map[string]string{"agent": "support", "outcome": "failed"}, 1)
	fams, _ := tel.Gatherer().Gather()
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(l.GetValue(), "run_") || strings.HasPrefix(l.GetValue(), "conv_") {
					t.Errorf("%s has an id as label %s", f.GetName(), l.GetName())
				}
			}
		}
	}
	tel.ObserveSchedulerLag(1500 * time.Millisecond)
	want(t, tel, "relay_scheduler_lag_seconds", nil, 1)
}

func TestScrapeFunctions(t *testing.T) {
	tel := newTelemetry(t, telemetry.Options{})
	if _, ok := value(t, tel, "relay_ingestion_queue_depth", nil); ok {
		t.Error("the queue depth is reported before a function gives it")
	}
	depth := 7
	tel.CollectIngestQueue(func(ctx context.Context) (int, error) { return depth, nil })
	tel.CollectMCP(func() []telemetry.ConnCount {
		return []telemetry.ConnCount{{Server: "files", State: "connected", Count: 3}, {Server: "files", State: "error", Count: 0}}
	})
	want(t, tel, "relay_ingestion_queue_depth", nil, 7)
	depth = 2
	want(t, tel, "relay_ingestion_queue_depth", nil, 2)
	want(t, tel, "relay_mcp_connections", map[string]string{"server": "files", "state": "connected"}, 3)
	want(t, tel, "relay_mcp_connections", map[string]string{"server": "files", "state": "error"}, 0)
	tel.CollectIngestQueue(func(ctx context.Context) (int, error) { return 0, errors.New("database gone") })
	if _, ok := value(t, tel, "relay_ingestion_queue_depth", nil); ok {
		t.Error("a failed count is reported")
	}
}

func TestNilTelemetry(t *testing.T) {
	var tel *telemetry.Telemetry
	m := llmtest.New(llmtest.Turn{Text: []string{"x"}})
	if tel.Model(m, "openai") != llm.Model(m) {
		t.Error("a nil Telemetry decorated the model")
	}
	tl := &fakeTool{name: "t"}
	if tel.Tool(tl, "builtin") != tool.Tool(tl) {
		t.Error("a nil Telemetry decorated the tool")
	}
	h := http.NotFoundHandler()
	if fmt.Sprint(tel.Middleware(h)) != fmt.Sprint(h) {
		t.Error("a nil Telemetry wrapped the handler")
	}
	ctx, r := tel.StartRun(context.Background(), "a", "run_1", "conv_1")
	r.End("succeeded")
	_, end := tel.StartAgent(ctx, "a")
	end(nil)
	_, call := tel.StartTool(ctx, "s", "t")
	call.End(false, nil)
	tel.ObserveSchedulerLag(time.Second)
	tel.CollectDB("write", nil)
	if err := tel.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

// TestPromtool checks the scrape, with every family holding a series, with
// Prometheus's own checker.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian's prometheus package has it; .ci/run installs it)")
	}
	tel := newTelemetry(t, telemetry.Options{Version: "v1.2.3"})
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tel.CollectDB("write", db)
	tel.CollectDB("read", db)
	tel.CollectMCP(func() []telemetry.ConnCount {
		return []telemetry.ConnCount{{Server: "files", State: "connected", Count: 1}}
	})
	tel.CollectIngestQueue(func(context.Context) (int, error) { return 3, nil })
	m := tel.Model(llmtest.New(llmtest.Turn{Text: []string{"x"}, Usage: llm.Usage{PromptTokens: 5, CompletionTokens: 1}}), "openai")
	if _, err := m.Stream(context.Background(), &llm.Request{Model: "gpt-4o"}, nil); err != nil {
		t.Fatal(err)
	}
	_, _ = tel.Tool(fakeTool{name: "web_search"}, telemetry.Builtin).Call(context.Background(), "u", nil)
	_, r := tel.StartRun(context.Background(), "support", "run_1", "conv_1")
	r.End("succeeded")
	tel.ObserveSchedulerLag(time.Second)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.Handler())
	srv := httptest.NewServer(tel.Middleware(mux))
	defer srv.Close()
	var body []byte
	for range 2 { // the second scrape holds the first in relay_http_*
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %s", resp.Status)
		}
	}
	for _, name := range []string{
		"relay_build_info", "relay_http_requests_total", "relay_http_request_duration_seconds_bucket",
		"relay_http_requests_in_flight", "relay_runs_total", "relay_run_duration_seconds_bucket",
		"relay_runs_in_progress", "relay_model_requests_total", "relay_model_request_duration_seconds_bucket",
		"relay_model_time_to_first_token_seconds_bucket", "relay_model_tokens_total", "relay_tool_calls_total",
		"relay_tool_call_duration_seconds_bucket", "relay_mcp_connections", "relay_scheduler_lag_seconds_bucket",
		"relay_ingestion_queue_depth", "go_sql_open_connections", "go_goroutines", "process_cpu_seconds_total",
	} {
		if !bytes.Contains(body, []byte("\n"+name)) {
			t.Errorf("the scrape has no %s", name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestMetricsListener(t *testing.T) {
	for _, profiles := range []bool{false, true} {
		tel := newTelemetry(t, telemetry.Options{})
		srv := httptest.NewUnstartedServer(nil)
		ln := srv.Listener
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tel.ServeMetrics(ctx, ln, profiles) }()
		base := "http://" + ln.Addr().String()
		get := func(path string) (int, []byte) {
			t.Helper()
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, body
		}
		if code, body := get("/metrics"); code != http.StatusOK || !bytes.Contains(body, []byte("relay_build_info")) {
			t.Errorf("GET /metrics: %d %.200s", code, body)
		}
		if code, _ := get("/api/agents"); code != http.StatusNotFound {
			t.Errorf("GET /api/agents on the metrics listener: %d", code)
		}
		// The profiles only when asked for: a goroutine dump, and a CPU
		// profile in pprof's format (gzip).
		code, body := get("/debug/pprof/goroutine?debug=1")
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[profiles]; code != want {
			t.Errorf("profiles %v: GET /debug/pprof/goroutine: %d, want %d", profiles, code, want)
		}
		if profiles {
			if !bytes.Contains(body, []byte("goroutine profile:")) {
				t.Errorf("GET /debug/pprof/goroutine: %.200s", body)
			}
			if code, body := get("/debug/pprof/profile?seconds=1"); code != http.StatusOK || !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
				t.Errorf("GET /debug/pprof/profile: %d %.20q", code, body)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMetrics: %v", err)
		}
	}
}

func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil)))
	rc := telemetrytest.NewReceiver(t)
	tel := telemetrytest.New(t, rc, nil)

	log.InfoContext(context.Background(), "no request")
	ctx := telemetry.WithRequestID(context.Background(), "req_1")
	ctx, end := tel.StartAgent(ctx, "support")
	log.With(slog.String("agent", "support")).InfoContext(ctx, "in a span", slog.Int("n", 1))
	end(nil)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	for _, k := range []string{"trace_id", "span_id", "request_id"} {
		if _, ok := first[k]; ok {
			t.Errorf("a line without a request has %s", k)
		}
	}
	if second["request_id"] != "req_1" || second["agent"] != "support" || second["n"] != float64(1) {
		t.Errorf("line in a request: %s", lines[1])
	}
	telemetrytest.Flush(t, tel)
	span, ok := rc.Find("invoke_agent support")
	if !ok {
		t.Fatalf("no agent span among %+v", rc.Spans())
	}
	if second["trace_id"] != span.TraceID || second["span_id"] != span.SpanID {
		t.Errorf("line has trace %v span %v, the span is %s %s", second["trace_id"], second["span_id"], span.TraceID, span.SpanID)
	}
}

// Attributes given to a logger reach its lines as slog's own handler writes
// them, in order and inside the groups opened after them, however many
// loggers are made from one another, though the handler is given them only
// at a logger's first line.
func TestLogHandlerAttrs(t *testing.T) {
	write := func(h func(slog.Handler) slog.Handler) string {
		var buf bytes.Buffer
		base := slog.New(h(slog.NewTextHandler(&buf, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}})))
		runLog := base.With(slog.String("run_id", "run_1"), slog.String("agent", "a"))
		runLog.With(slog.String("tool", "t")).WithGroup("call").With(slog.Int("step", 2)).Warn("failed", slog.Int("n", 1))
		runLog.Warn("twice")
		runLog.Warn("twice")
		base.With().Info("none")
		return buf.String()
	}
	want := write(func(h slog.Handler) slog.Handler { return h })
	if got := write(telemetry.LogHandler); got != want {
		t.Errorf("lines:\n%s\nwant, as slog writes them:\n%s", got, want)
	}
}
