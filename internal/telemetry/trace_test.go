package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
	"github.com/relay-ai/relay/internal/tool"
)

// A request through the middleware whose handler calls a decorated model
// and a decorated tool is one trace: the caller's, continued by the server
// span, with the model's and the tool's spans under it.
func TestTraceOfARequest(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	tel := telemetrytest.New(t, rc, map[string]string{
		"OTEL_SERVICE_NAME":          "relay-test",
		"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k%3Dsecret,x-tenant=acme",
	})
	model := tel.Model(llmtest.New(llmtest.Turn{
		Text: []string{"It is sunny."}, Usage: llm.Usage{PromptTokens: 42, CompletionTokens: 7, TotalTokens: 49},
	}), "openai")
	weather := tel.Tool(fakeTool{name: "get_weather", result: tool.Text("sunny")}, "forecasts")
	broken := tel.Tool(fakeTool{name: "get_alerts", err: errors.New("down")}, "forecasts")

	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/agents/{id}/chat", func(w http.ResponseWriter, r *http.Request) {
		if _, err := model.Stream(r.Context(), &llm.Request{Model: "gpt-4o-mini"}, nil); err != nil {
			t.Error(err)
		}
		_, _ = weather.Call(r.Context(), "user_1", json.RawMessage(`{"city":"Oslo"}`))
		_, _ = broken.Call(r.Context(), "user_1", json.RawMessage(`{}`))
		w.WriteHeader(http.StatusAccepted)
	})
	srv := httptest.NewServer(tel.Middleware(copyRequest(telemetry.Routed(mux))))
	defer srv.Close()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/agents/agent_x/chat", strings.NewReader("{}"))
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	telemetrytest.Flush(t, tel)

	find := func(name string) telemetrytest.Span {
		t.Helper()
		s, ok := rc.Find(name)
		if !ok {
			var names []string
			for _, s := range rc.Spans() {
				names = append(names, s.Name)
			}
			t.Fatalf("no span %q among %q", name, names)
		}
		return s
	}
	server := find("POST /api/agents/{id}/chat")
	chat := find("chat gpt-4o-mini")
	call := find("execute_tool get_weather")
	failed := find("execute_tool get_alerts")

	for _, s := range []telemetrytest.Span{server, chat, call, failed} {
		if s.TraceID != traceID {
			t.Errorf("%s: trace %s, want the caller's %s", s.Name, s.TraceID, traceID)
		}
		if s.Service != "relay-test" {
			t.Errorf("%s: service.name %q", s.Name, s.Service)
		}
	}
	if server.ParentID != parentID {
		t.Errorf("server span's parent %s, want the caller's %s", server.ParentID, parentID)
	}
	for _, s := range []telemetrytest.Span{chat, call, failed} {
		if s.ParentID != server.SpanID {
			t.Errorf("%s: parent %s, want the server span %s", s.Name, s.ParentID, server.SpanID)
		}
	}
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || chat.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds: server %v, chat %v", server.Kind, chat.Kind)
	}
	wantAttrs := func(s telemetrytest.Span, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if s.Attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q", s.Name, k, s.Attrs[k], v)
			}
		}
	}
	wantAttrs(server, map[string]string{"http.route": "/api/agents/{id}/chat", "http.request.method": "POST", "http.response.status_code": "202"})
	wantAttrs(chat, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": "42", "gen_ai.usage.output_tokens": "7",
		"gen_ai.response.finish_reasons": "stop",
	})
	wantAttrs(call, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "relay.tool.server": "forecasts"})
	wantAttrs(failed, map[string]string{"error.type": "error"})
	if !failed.Error || call.Error || chat.Error || server.Error {
		t.Errorf("error statuses: failed tool %v, tool %v, chat %v, server %v", failed.Error, call.Error, chat.Error, server.Error)
	}
	for _, s := range rc.Spans() {
		for k, v := range s.Attrs {
			if strings.Contains(v, "Oslo") || strings.Contains(v, "sunny") {
				t.Errorf("%s: attribute %s holds what the user or the tool wrote: %q", s.Name, k, v)
			}
		}
	}
	hs := rc.Headers()
	if len(hs) == 0 || hs[0].Get("X-Api-Key") != "k=secret" || hs[0].Get("X-Tenant") != "acme" {
		t.Errorf("export headers: %v", hs)
	}
}

// The W3C trace context of the span in a request's context goes out with
// the requests of Transport.
func TestTransportSendsTraceparent(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	tel := telemetrytest.New(t, rc, nil)
	var got []string
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer peer.Close()
	client := &http.Client{Transport: tel.Transport(http.DefaultTransport)}

	ctx, end := tel.StartMCPRequest(context.Background(), "files", "tools/call", "read", "")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, peer.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	end(nil)
	if req.Header.Get("traceparent") != "" {
		t.Error("the caller's request was changed")
	}
	resp, err = client.Get(peer.URL) // no span: nothing to send
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	telemetrytest.Flush(t, tel)
	span, ok := rc.Find("tools/call read")
	if !ok {
		t.Fatalf("no MCP span among %+v", rc.Spans())
	}
	if want := "00-" + span.TraceID + "-" + span.SpanID + "-01"; len(got) != 2 || got[0] != want || got[1] != "" {
		t.Errorf("traceparent headers %q, want %q then none", got, want)
	}
	if span.Kind != tracepb.Span_SPAN_KIND_CLIENT || span.Attrs["mcp.method.name"] != "tools/call" || span.Attrs["gen_ai.tool.name"] != "read" {
		t.Errorf("MCP span: %+v", span)
	}
}

// Runs, agents and database writes nest as the run's code calls them.
func TestRunSpans(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	tel := telemetrytest.New(t, rc, nil)
	ctx, run := tel.StartRun(context.Background(), "support", "run_1", "conv_1")
	actx, end := tel.StartAgent(ctx, "support")
	_, endDB := tel.StartDB(actx, "sqlite", "WriteBatch")
	endDB(nil)
	end(context.Canceled)
	run.End("cancelled")
	telemetrytest.Flush(t, tel)
	r, _ := rc.Find("run support")
	a, _ := rc.Find("invoke_agent support")
	d, _ := rc.Find("WriteBatch")
	if r.SpanID == "" || a.ParentID != r.SpanID || d.ParentID != a.SpanID {
		t.Fatalf("spans do not nest: %+v", rc.Spans())
	}
	if r.Attrs["relay.run.id"] != "run_1" || r.Attrs["gen_ai.conversation.id"] != "conv_1" || r.Attrs["error.type"] != "cancelled" {
		t.Errorf("run span: %+v", r.Attrs)
	}
	if a.Attrs["error.type"] != "cancelled" || d.Attrs["db.system.name"] != "sqlite" || d.Attrs["db.operation.name"] != "WriteBatch" {
		t.Errorf("agent %+v, db %+v", a.Attrs, d.Attrs)
	}
}

// Without OTEL_* variables, or with tracing turned off by them, nothing is
// traced; variables that cannot be honoured are errors naming them.
func TestTracingFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector/v1/traces"}, true, ""},
		{"exporter otlp alone", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, false, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"traces endpoint with a query", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector/v1/traces?token=secretvalue"}, false, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"bad sampler", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, false, "OTEL_TRACES_SAMPLER"},
		{"bad ratio", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, false, "OTEL_TRACES_SAMPLER_ARG"},
		{"bad timeout", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, false, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"bad headers", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "secretvalue"}, false, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header not percent-encoded", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=secretvalue%zz"}, false, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header name with a space", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key: secretvalue=1"}, false, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header value with a newline", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api-key=secretvalue%0Ax-evil=1"}, false, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		{"traces header not percent-encoded", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api-key=100%secretvalue"}, false, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: telemetrytest.Env(tc.env)})
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				if strings.Contains(err.Error(), "secretvalue") {
					t.Errorf("the error shows a header's text: %v", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			if on := tel.Tracing() != ""; on != tc.on {
				t.Errorf("tracing on = %v (%q), want %v", on, tel.Tracing(), tc.on)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	got := telemetry.Secrets(telemetrytest.Env(map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":         "Authorization=Bearer%20tok-123456,x-team=blue",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://user:pa55word@collector/v1/traces",
	}))
	slices.Sort(got)
	if want := []string{"Basic dXNlcjpwYTU1d29yZA==", "Bearer tok-123456", "blue", "pa55word"}; !slices.Equal(got, want) {
		t.Errorf("Secrets = %q, want %q", got, want)
	}
}

// A header variable that is refused at start (not percent-encoded) is masked
// all the same.
func TestSecretsOfRefusedHeaders(t *testing.T) {
	got := telemetry.Secrets(telemetrytest.Env(map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=tok-123%zz,x-team=blue",
	}))
	slices.Sort(got)
	if want := []string{"blue", "tok-123%zz"}; !slices.Equal(got, want) {
		t.Errorf("Secrets = %q, want %q", got, want)
	}
}

// The user and password of an endpoint's URL, which the OTLP exporter
// drops, reach the collector as basic authentication; an Authorization of
// the headers variables wins over them.
func TestEndpointUserInfo(t *testing.T) {
	for _, tc := range []struct {
		name, headers, want string
	}{
		{"user info alone", "", "Basic cmVsYXk6cGE1NXdvcmQ="},
		{"an Authorization header wins", "authorization=Bearer%20tok", "Bearer tok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := telemetrytest.NewReceiver(t)
			endpoint := strings.Replace(rc.URL, "://", "://relay:pa55word@", 1)
			tel := telemetrytest.New(t, rc, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
				"OTEL_EXPORTER_OTLP_HEADERS":  tc.headers,
			})
			_, end := tel.StartAgent(context.Background(), "support")
			end(nil)
			telemetrytest.Flush(t, tel)
			hs := rc.Headers()
			if len(hs) == 0 {
				t.Fatal("nothing exported")
			}
			if got := hs[0].Get("Authorization"); got != tc.want {
				t.Errorf("Authorization %q, want %q", got, tc.want)
			}
		})
	}
}

// The start-up description of the export names the endpoint without its
// credentials, and the sampler.
func TestTracingDescription(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: telemetrytest.Env(map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://relay:pa55word@collector.example:4318/v1/traces",
		"OTEL_TRACES_SAMPLER":                "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":            "0.25",
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	want := "otlp http/protobuf to https://collector.example:4318/v1/traces, sampler parentbased_traceidratio 0.25"
	if got := tel.Tracing(); got != want {
		t.Errorf("Tracing() = %q, want %q", got, want)
	}
}

// Health checks and scrapes are counted, not traced: a span every few
// seconds would bury the requests users make.
func TestProbesNotTraced(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	tel := telemetrytest.New(t, rc, map[string]string{"OTEL_SERVICE_NAME": "relay-test"})
	mux := http.NewServeMux()
	for _, p := range []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /api/agents"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {})
	}
	srv := httptest.NewServer(tel.Middleware(telemetry.Routed(mux)))
	defer srv.Close()
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/api/agents"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	telemetrytest.Flush(t, tel)
	var names []string
	for _, s := range rc.Spans() {
		names = append(names, s.Name)
	}
	if len(names) != 1 || names[0] != "GET /api/agents" {
		t.Errorf("spans %q, want the one of GET /api/agents alone", names)
	}
}
