package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const metricsToken = "scrape-token-0123456789"

type telBundle struct {
	srv *httptest.Server
	tel *telemetry.Telemetry
	rc  *telemetrytest.Receiver
	key string
	log *syncBuffer
}

func setupTelemetry(t *testing.T, token string) *telBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &telBundle{rc: telemetrytest.NewReceiver(t), log: &syncBuffer{}}
	b.tel = telemetrytest.New(t, b.rc, nil)
	as := auth.NewService(st, nil)
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(b.log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	b.srv = httptest.NewServer(httpapi.New(httpapi.Options{
		Auth: as, Agents: agent.NewService(st, agent.Rules{Providers: []string{"openAI"}}),
		Ready:     func(ctx context.Context) error { return st.Ping(ctx) },
		Logger:    logger,
		Telemetry: b.tel, MetricsToken: token,
	}))
	t.Cleanup(b.srv.Close)
	u, err := as.CreateUser(ctx, auth.NewUser{Email: "ann@example.com", Role: auth.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	if _, b.key, err = as.CreateKey(ctx, u.ID, "test"); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *telBundle) get(t *testing.T, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// Requests are counted by the route that matched, never the path; /metrics
// answers only with the token.
func TestMetricsOfRequests(t *testing.T) {
	b := setupTelemetry(t, metricsToken)
	for _, id := range []string{"agent_a", "agent_b"} {
		if resp, _ := b.get(t, "/api/agents/"+id, map[string]string{"Authorization": "Bearer " + b.key}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET /api/agents/%s: %s", id, resp.Status)
		}
	}
	b.get(t, "/healthz", nil)
	b.get(t, "/api/agents/agent_a", nil) // no key: refused before the handler

	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong-token-0123456789"}} {
		resp, body := b.get(t, "/metrics", h)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "relay_") {
			t.Errorf("GET /metrics with %v: %s %.100s", h, resp.Status, body)
		}
	}
	resp, body := b.get(t, "/metrics", map[string]string{"Authorization": "Bearer " + metricsToken})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics with the token: %s", resp.Status)
	}
	for _, line := range []string{
		`relay_http_requests_total{code="404",method="GET",route="/api/agents/{id}"} 2`,
		`relay_http_requests_total{code="401",method="GET",route="/api/agents/{id}"} 1`,
		`relay_http_requests_total{code="200",method="GET",route="/healthz"} 1`,
		`relay_http_requests_total{code="401",method="GET",route="/metrics"} 2`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("the scrape has no %s", line)
		}
	}
	if strings.Contains(body, "agent_a") {
		t.Error("a raw path reached the metrics")
	}

	telemetrytest.Flush(t, b.tel)
	span, ok := b.rc.Find("GET /api/agents/{id}")
	if !ok || span.Attrs["http.route"] != "/api/agents/{id}" {
		t.Errorf("server span %+v (found %v)", span, ok)
	}
}

func TestNoMetricsWithoutToken(t *testing.T) {
	b := setupTelemetry(t, "")
	if _, body := b.get(t, "/metrics", map[string]string{"Authorization": "Bearer anything"}); strings.Contains(body, "relay_build_info") {
		t.Error("/metrics answered without metrics.token")
	}
}

// Each request has an id, the client's when it is a plain token, sent back
// and on the request's log lines with its trace.
func TestRequestIDs(t *testing.T) {
	b := setupTelemetry(t, "")
	resp, _ := b.get(t, "/api/agents", map[string]string{"Authorization": "Bearer " + b.key})
	made := resp.Header.Get("X-Request-Id")
	if !strings.HasPrefix(made, "req_") {
		t.Errorf("X-Request-Id %q, want a new req_ id", made)
	}
	if resp, _ := b.get(t, "/healthz", map[string]string{"X-Request-Id": "proxy-42.a:b"}); resp.Header.Get("X-Request-Id") != "proxy-42.a:b" {
		t.Errorf("the client's id came back as %q", resp.Header.Get("X-Request-Id"))
	}
	for _, bad := range []string{"has space", "semi;colon", "\u00e9t\u00e9", strings.Repeat("x", 65)} {
		if resp, _ := b.get(t, "/healthz", map[string]string{"X-Request-Id": bad}); !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_") {
			t.Errorf("the client's id %q came back as %q", bad, resp.Header.Get("X-Request-Id"))
		}
	}
	var line map[string]any
	for _, l := range strings.Split(b.log.String(), "\n") {
		if strings.Contains(l, `"msg":"http request"`) && strings.Contains(l, made) {
			_ = json.Unmarshal([]byte(l), &line)
		}
	}
	if line == nil {
		t.Fatalf("no access log line with request_id %s in:\n%s", made, b.log.String())
	}
	if line["request_id"] != made || line["trace_id"] == nil || line["trace_id"] == "" {
		t.Errorf("access log line %v", line)
	}
}
