package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
)

// traceparents keeps the traceparent header of each tools/call an MCP
// server received.
type traceparents struct {
	mu   sync.Mutex
	seen []string
}

func (l *traceparents) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				l.mu.Lock()
				l.seen = append(l.seen, r.Header.Get("traceparent"))
				l.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (l *traceparents) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// metricValue sums the samples of a series whose name and labels match.
func metricValue(body, name string, labels ...string) float64 {
	var sum float64
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// One relay serve, a chat whose agent calls a tool of an HTTP MCP server,
// and a schedule that fires: GET /metrics (with metrics.token) shows the
// run, model, tool and scheduler series moved and passes promtool's check;
// the OTLP receiver gets one trace holding the HTTP request, the run, the
// agent's turn, its model requests and the tool call, each under the one
// before; and the MCP server received that trace's traceparent.
func TestTelemetryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a schedule's minute; skipped with -short")
	}
	bin := mcptest.Peer(t, "PEER_AIMOCK")
	fdir := t.TempDir()
	fixtures := `{"fixtures":[
 {"match":{"userMessage":"echo please","hasToolResult":false},"response":{"toolCalls":[{"name":"echo__mcp__go","arguments":"{\"message\":\"hi\"}"}]}},
 {"match":{"userMessage":"echo please","hasToolResult":true},"response":{"content":"It said hi."}},
 {"match":{"userMessage":"tick"},"response":{"content":"tock"}}]}`
	if err := os.WriteFile(filepath.Join(fdir, "f.json"), []byte(fixtures), 0o600); err != nil {
		t.Fatal(err)
	}
	port := mcptest.FreePort(t)
	mcptest.StartProcess(t, port, nil, bin, "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--fixtures", fdir)

	var got traceparents
	srv := mcptest.NewServer(mcptest.Options{})
	hs := httptest.NewServer(got.wrap(mcptest.Handler(func() *sdk.Server { return srv })))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	mcpURL, err := mcptest.Endpoint(hs.URL, "streamable-http")
	if err != nil {
		t.Fatal(err)
	}
	rc := telemetrytest.NewReceiver(t)

	const metricsToken = "metrics-token-0123456789"
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
metrics:
  token: %s
endpoints:
  custom:
    - name: mock
      baseURL: http://127.0.0.1:%d/v1
mcpServers:
  go:
    type: streamable-http
    url: %s
agents:
  - id: a
    provider: mock
    model: gpt-4o
    tools: [echo__mcp__go]
`, filepath.Join(dir, "data"), metricsToken, port, mcpURL))
	s := startServer(t, cfgPath, map[string]string{
		"RELAY_BOOTSTRAP_API_KEY":     testKey,
		"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL,
		"OTEL_TRACES_SAMPLER":         "always_on",
	})

	// A schedule fires at the next minute: the scheduler's lag is measured.
	if code := s.call(t, testKey, "POST", "/api/schedules", `{"agent_id":"a","name":"tick","prompt":"tick","cron":"* * * * *"}`, nil); code != 201 {
		t.Fatalf("create schedule: %d", code)
	}

	resp := s.post(t, "/api/chat", `{"agent_id":"a","text":"echo please"}`, nil)
	evs := readSSE(t, resp, nil)
	resp.Body.Close()
	if last := evs[len(evs)-1]; last.Type != "run.finished" || last.Data["status"] != "succeeded" {
		t.Fatalf("the chat ended with %+v", last)
	}

	scrape := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := scrape("wrong-token-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: %d, want 401", code)
	}
	var body string
	poll.Until(t, 90*time.Second, "the schedule's firing measured", func() bool {
		_, body = scrape(metricsToken)
		return metricValue(body, "relay_scheduler_lag_seconds_count") >= 1
	})
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"relay_runs_total", []string{`agent="a"`, `outcome="succeeded"`}, 1},
		{"relay_model_requests_total", []string{`provider="mock"`, `model="gpt-4o"`, `outcome="ok"`}, 2},
		{"relay_model_time_to_first_token_seconds_count", []string{`provider="mock"`}, 2},
		{"relay_tool_calls_total", []string{`server="go"`, `tool="echo"`, `outcome="ok"`}, 1},
		{"relay_http_requests_total", []string{`route="/api/chat"`, `method="POST"`, `code="200"`}, 1},
		{"relay_mcp_connections", []string{`server="go"`}, 1},
	} {
		if v := metricValue(body, c.name, c.labels...); v < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, v, c.min)
		}
	}
	if regexp.MustCompile(`(user|conversation|run)_id="`).MatchString(body) {
		t.Errorf("a metric is labelled with an id")
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		t.Log("promtool is not installed (Debian's prometheus package has it; .ci/run installs it): the format check is skipped")
	} else {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	// Stopping the server exports the spans still waiting.
	if code := s.stop(t); code != 0 {
		t.Fatalf("relay serve exited with %d", code)
	}
	spans := rc.Spans()
	byID := map[string]telemetrytest.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	tool, ok := rc.Find("execute_tool echo")
	if !ok {
		names := map[string]int{}
		for _, sp := range spans {
			names[sp.Name]++
		}
		t.Fatalf("no tool span among %d spans: %v", len(spans), names)
	}
	// ancestors are the names of a span's parents, nearest first.
	ancestors := func(sp telemetrytest.Span) []string {
		var out []string
		for sp.ParentID != "" {
			p, ok := byID[sp.ParentID]
			if !ok {
				out = append(out, "<missing "+sp.ParentID+">")
				break
			}
			out = append(out, p.Name)
			sp = p
		}
		return out
	}
	want := []string{"invoke_agent a", "run a", "POST /api/chat"}
	if got := ancestors(tool); !hasInOrder(got, want) {
		t.Errorf("the tool span's ancestors are %v; want %v among them, in that order", got, want)
	}
	models := 0
	for _, sp := range spans {
		if sp.Name == "chat gpt-4o" && sp.TraceID == tool.TraceID {
			models++
			if got := ancestors(sp); !hasInOrder(got, want) {
				t.Errorf("a model span's ancestors are %v; want %v", got, want)
			}
		}
	}
	if models != 2 {
		t.Errorf("%d model spans in the chat's trace, want 2", models)
	}
	seen := got.all()
	if len(seen) != 1 || !strings.Contains(seen[0], "-"+tool.TraceID+"-") {
		t.Errorf("the MCP server got traceparent %q; want one of the chat's trace %s", seen, tool.TraceID)
	}
}

// hasInOrder reports whether want's items are in got in the same order.
func hasInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
