package telemetry_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
	"github.com/relay-ai/relay/internal/tool"
)

// instantModel answers at once with a few events, so that a benchmark
// measures the decorator and not the model.
type instantModel struct{}

func (instantModel) Stream(_ context.Context, _ *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	if emit != nil {
		emit(llm.Event{Kind: llm.EventText, Text: "Hello"})
		emit(llm.Event{Kind: llm.EventText, Text: " there"})
	}
	return &llm.Turn{Text: "Hello there", FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
}

// benchSetups are the ways a decorator is measured: the bare call, metrics
// only (tracing off), and metrics with every span traced and exported.
func benchSetups(b *testing.B) []struct {
	name string
	tel  *telemetry.Telemetry
	bare bool
} {
	rc := telemetrytest.NewReceiver(b)
	return []struct {
		name string
		tel  *telemetry.Telemetry
		bare bool
	}{
		{"bare", nil, true},
		{"tracing_off", newTelemetry(b, telemetry.Options{}), false},
		{"tracing_on", telemetrytest.New(b, rc, nil), false},
	}
}

// BenchmarkDecorators measures what the decorators add to a model request,
// a tool call and an HTTP request: go test ./internal/telemetry -run '^$'
// -bench Decorators -benchmem.
func BenchmarkDecorators(b *testing.B) {
	for _, s := range benchSetups(b) {
		b.Run("model/"+s.name, func(b *testing.B) {
			var m llm.Model = instantModel{}
			if !s.bare {
				m = s.tel.Model(m, "openai")
			}
			req := &llm.Request{Model: "gpt-4o"}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Stream(ctx, req, func(llm.Event) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("tool/"+s.name, func(b *testing.B) {
			var tl tool.Tool = fakeTool{name: "web_search", result: tool.Text("ok")}
			if !s.bare {
				tl = s.tel.Tool(tl, telemetry.Builtin)
			}
			ctx, args := context.Background(), json.RawMessage(`{}`)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tl.Call(ctx, "user_1", args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("http/"+s.name, func(b *testing.B) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /api/runs/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
			var h http.Handler = mux
			if !s.bare {
				h = s.tel.Middleware(mux)
			}
			req := httptest.NewRequest(http.MethodGet, "/api/runs/run_1", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(discardWriter{}, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
