package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
)

// headerLog keeps the traceparent header of each tools/call POST a server
// received.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			if strings.Contains(string(body), `"tools/call"`) {
				l.mu.Lock()
				l.seen = append(l.seen, r.Header.Get("traceparent"))
				l.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// An MCP tool call made within a trace carries it to the server: the server
// gets a traceparent of the caller's trace, naming the call's MCP request
// span, which is a child of the tool call's span. The call and the
// connection are measured too.
func TestTraceReachesTheServer(t *testing.T) {
	for _, transport := range []string{mcp.TransportStreamableHTTP, mcp.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			srv := mcptest.NewServer(mcptest.Options{})
			var log headerLog
			hs := httptest.NewServer(log.wrap(mcptest.Handler(func() *sdk.Server { return srv })))
			defer func() {
				for ss := range srv.Sessions() {
					_ = ss.Close()
				}
				hs.CloseClientConnections()
				hs.Close()
			}()
			url, _ := mcptest.Endpoint(hs.URL, transport)
			rc := telemetrytest.NewReceiver(t)
			tel := telemetrytest.New(t, rc, nil)
			m := newManager(t, mcp.Options{Telemetry: tel}, server("traced", transport, url))

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ctx, end := tel.StartAgent(ctx, "support")
			caller := trace.SpanContextFromContext(ctx)
			res, err := m.Call(ctx, nil, "echo__mcp__traced", json.RawMessage(`{"message":"hi"}`))
			end(err)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text(res), "hi") {
				t.Errorf("echo answered %q", text(res))
			}

			scrape := httptest.NewRecorder()
			tel.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			for _, line := range []string{
				`relay_tool_calls_total{outcome="ok",server="traced",tool="echo"} 1`,
				`relay_mcp_connections{server="traced",state="connected"} 1`,
				`relay_mcp_connections{server="traced",state="error"} 0`,
			} {
				if !strings.Contains(scrape.Body.String(), line+"\n") {
					t.Errorf("the scrape has no %s", line)
				}
			}

			m.Close()
			telemetrytest.Flush(t, tel)
			seen := log.all()
			if len(seen) != 1 {
				t.Fatalf("the server got %d tools/call requests with traceparent %q, want 1", len(seen), seen)
			}
			parts := strings.Split(seen[0], "-")
			if len(parts) != 4 || parts[1] != caller.TraceID().String() {
				t.Fatalf("the server got traceparent %q, want one of the caller's trace %s", seen[0], caller.TraceID())
			}
			call, ok := rc.Find("execute_tool echo")
			if !ok {
				t.Fatalf("no tool span among %+v", rc.Spans())
			}
			req, ok := rc.Find("tools/call echo")
			if !ok {
				t.Fatalf("no MCP request span among %+v", rc.Spans())
			}
			if call.ParentID != caller.SpanID().String() || req.ParentID != call.SpanID || parts[2] != req.SpanID {
				t.Errorf("caller %s → tool %s (parent %s) → request %s (parent %s); the server's parent is %s",
					caller.SpanID(), call.SpanID, call.ParentID, req.SpanID, req.ParentID, parts[2])
			}
			if call.Attrs["relay.tool.server"] != "traced" || req.Attrs["mcp.method.name"] != "tools/call" || req.Attrs["relay.mcp.server"] != "traced" {
				t.Errorf("attributes: tool %v, request %v", call.Attrs, req.Attrs)
			}
		})
	}
}

// A call of a tool the server does not have is counted under the tool
// "other": the names a caller makes up never take the places the tool label
// keeps for the servers' real tools (docs/observability.md "Labels").
func TestMadeUpToolNamesAreNotLabels(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Options{})
	hs := httptest.NewServer(mcptest.Handler(func() *sdk.Server { return srv }))
	defer func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	}()
	url, _ := mcptest.Endpoint(hs.URL, mcp.TransportStreamableHTTP)
	tel := telemetrytest.New(t, telemetrytest.NewReceiver(t), nil)
	m := newManager(t, mcp.Options{Telemetry: tel}, server("srv", mcp.TransportStreamableHTTP, url))
	defer m.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range []string{"made_up_1__mcp__srv", "made_up_2__mcp__srv"} {
		if _, err := m.Call(ctx, nil, key, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "has no tool") {
			t.Fatalf("calling %s: err = %v, want one saying the server has no such tool", key, err)
		}
	}
	if _, err := m.Call(ctx, nil, "echo__mcp__srv", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}

	scrape := httptest.NewRecorder()
	tel.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := scrape.Body.String()
	for _, line := range []string{
		`relay_tool_calls_total{outcome="error",server="srv",tool="other"} 2`,
		`relay_tool_calls_total{outcome="ok",server="srv",tool="echo"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("the scrape has no %s", line)
		}
	}
	if strings.Contains(body, "made_up") {
		t.Errorf("a made-up tool name is a label value:\n%s", body)
	}
}
