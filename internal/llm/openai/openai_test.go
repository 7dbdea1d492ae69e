package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/openai"
)

const testKey = "sk-test-0123456789abcdef"

// hello is a request with one user message.
func hello() *llm.Request {
	return &llm.Request{Model: "gpt-4o", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "hello"},
	}}
}

// logBuffer is a JSON slog handler's output, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(l.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// serve starts a fake server and returns a client for it with opts.
func serve(t *testing.T, opts openai.Options, h http.HandlerFunc) *openai.Client {
	t.Helper()
	s := llmtest.Server(t, h)
	opts.BaseURL = s.URL + "/v1"
	return openai.New(opts)
}

// answer streams "Hi!" with usage.
func answer(w http.ResponseWriter) {
	sse := llmtest.NewSSE(w)
	sse.Text("Hi!")
	sse.Finish(llm.FinishStop)
	sse.Usage(llm.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4})
	sse.Done()
}

func providerError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func TestStreamedText(t *testing.T) {
	c := serve(t, openai.Options{APIKey: testKey}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		sse := llmtest.NewSSE(w)
		sse.Data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
		sse.Text("Hello")
		sse.Text(", <world> & ")
		w.Write([]byte(": keep-alive comment\n\n"))
		sse.Text("friends.")
		sse.Finish(llm.FinishStop)
		sse.Usage(llm.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14})
		sse.Done()
	})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Turn{
		Text:         "Hello, <world> & friends.",
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14},
	}
	if diff := cmp.Diff(want, turn, ignoreSent); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
	wantEvents := []llm.Event{
		{Kind: llm.EventText, Text: "Hello"},
		{Kind: llm.EventText, Text: ", <world> & "},
		{Kind: llm.EventText, Text: "friends."},
		{Kind: llm.EventUsage, Usage: want.Usage},
	}
	if diff := cmp.Diff(wantEvents, rec.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

var ignoreSent = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Sent" }, cmp.Ignore())

func TestStreamedToolCalls(t *testing.T) {
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		sse := llmtest.NewSSE(w)
		sse.Text("Checking both.")
		sse.ToolCall(0, "call_a", "get_weather", "")
		sse.ToolCall(0, "", "", `{"city":`)
		sse.ToolCall(1, "call_b", "get_time", `{"tz"`)
		sse.ToolCall(0, "", "", `"Paris"}`)
		sse.ToolCall(1, "", "", `:"CET"}`)
		sse.Finish(llm.FinishToolCalls)
		sse.Usage(llm.Usage{PromptTokens: 5, CompletionTokens: 9, TotalTokens: 14})
		sse.Done()
	})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_a", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		{ID: "call_b", Type: "function", Function: llm.FunctionCall{Name: "get_time", Arguments: `{"tz":"CET"}`}},
	}
	if diff := cmp.Diff(wantCalls, turn.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if turn.Text != "Checking both." || turn.FinishReason != llm.FinishToolCalls || turn.Usage.TotalTokens != 14 {
		t.Errorf("turn = %+v", turn)
	}
	wantDeltas := []llm.ToolCallDelta{
		{Index: 0, ID: "call_a", Name: "get_weather"},
		{Index: 0, ArgumentsDelta: `{"city":`},
		{Index: 1, ID: "call_b", Name: "get_time", ArgumentsDelta: `{"tz"`},
		{Index: 0, ArgumentsDelta: `"Paris"}`},
		{Index: 1, ArgumentsDelta: `:"CET"}`},
	}
	var gotDeltas []llm.ToolCallDelta
	for _, ev := range rec.Kinds(llm.EventToolCallDelta) {
		gotDeltas = append(gotDeltas, ev.ToolCall)
	}
	if diff := cmp.Diff(wantDeltas, gotDeltas); diff != "" {
		t.Errorf("tool call deltas (-want +got):\n%s", diff)
	}
}

func TestParallelToolCallsSharingAnIndex(t *testing.T) {
	// Ollama and LiteLLM's ollama_chat give every call of a parallel batch
	// index 0, each with its own id; a piece without an id continues the
	// latest call of its index.
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		sse := llmtest.NewSSE(w)
		sse.Data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"add","arguments":"{\"a\":3,\"b\":12}"}}]},"finish_reason":null}]}`)
		sse.Data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_b","index":0,"type":"function","function":{"name":"multiply","arguments":"{\"a\":11,"}}]},"finish_reason":null}]}`)
		sse.Data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"b\":49}"}}]},"finish_reason":null}]}`)
		sse.Data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}`)
		sse.Done()
	})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_a", Type: "function", Function: llm.FunctionCall{Name: "add", Arguments: `{"a":3,"b":12}`}},
		{ID: "call_b", Type: "function", Function: llm.FunctionCall{Name: "multiply", Arguments: `{"a":11,"b":49}`}},
	}
	if diff := cmp.Diff(want, turn.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	wantDeltas := []llm.ToolCallDelta{
		{Index: 0, ID: "call_a", Name: "add", ArgumentsDelta: `{"a":3,"b":12}`},
		{Index: 1, ID: "call_b", Name: "multiply", ArgumentsDelta: `{"a":11,`},
		{Index: 1, ArgumentsDelta: `"b":49}`},
	}
	var gotDeltas []llm.ToolCallDelta
	for _, ev := range rec.Kinds(llm.EventToolCallDelta) {
		gotDeltas = append(gotDeltas, ev.ToolCall)
	}
	if diff := cmp.Diff(wantDeltas, gotDeltas); diff != "" {
		t.Errorf("tool call deltas (-want +got):\n%s", diff)
	}
}

func TestToolCallsWithoutIndex(t *testing.T) {
	// Some servers send each call whole, without an index, and a call without
	// arguments.
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		sse := llmtest.NewSSE(w)
		sse.Data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"now","arguments":""}}]}}]}`)
		sse.Data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"sum","arguments":"{\"a\":1}"}}]}}]}`)
		sse.Finish(llm.FinishStop)
		sse.Done()
	})
	turn, err := c.Stream(t.Context(), hello(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "a", Type: "function", Function: llm.FunctionCall{Name: "now", Arguments: "{}"}},
		{ID: "b", Type: "function", Function: llm.FunctionCall{Name: "sum", Arguments: `{"a":1}`}},
	}
	if diff := cmp.Diff(want, turn.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if turn.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish reason %q, want %q", turn.FinishReason, llm.FinishToolCalls)
	}
}

func TestWithheldAnswers(t *testing.T) {
	// An answer the provider filtered, or that the model refused, with
	// nothing in it is an error the user can read, not an empty answer, and is
	// not retried; a filtered answer with text keeps it.
	azureFilter := `"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"custom_blocklists":[],"violence":{"filtered":true,"severity":"medium"},"self_harm":{"filtered":true,"severity":"high"}}`
	tests := []struct {
		name     string
		chunks   []string
		json     string // a non-streamed answer, in place of chunks
		wantErr  string // empty: the turn succeeds
		wantText string
	}{
		{
			name:    "OpenAI content filter",
			chunks:  []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`},
			wantErr: "model provider: the provider filtered the answer (content_filter)",
		},
		{
			name: "Azure content filter names the categories",
			chunks: []string{
				`{"choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`,
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"content_filter_results":{}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter",` + azureFilter + `}]}`,
			},
			wantErr: "model provider: the provider filtered the answer (content_filter: self_harm, violence)",
		},
		{
			name:    "Azure content filter, not streamed",
			json:    `{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter",` + azureFilter + `}]}`,
			wantErr: "model provider: the provider filtered the answer (content_filter: self_harm, violence)",
		},
		{
			name:    "refusal",
			chunks:  []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":"I'm sorry, "},"finish_reason":null}]}`, `{"choices":[{"index":0,"delta":{"refusal":"I cannot help with that."},"finish_reason":null}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`},
			wantErr: "model provider: the model refused to answer: I'm sorry, I cannot help with that.",
		},
		{
			name:     "filtered after some text",
			chunks:   []string{`{"choices":[{"index":0,"delta":{"content":"The first part"},"finish_reason":null}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter",` + azureFilter + `}]}`},
			wantText: "The first part",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tries atomic.Int32
			c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
				tries.Add(1)
				if tt.json != "" {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, tt.json)
					return
				}
				sse := llmtest.NewSSE(w)
				for _, c := range tt.chunks {
					sse.Data(json.RawMessage(c))
				}
				sse.Usage(llm.Usage{PromptTokens: 9, TotalTokens: 9})
				sse.Done()
			})
			turn, err := c.Stream(t.Context(), hello(), nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if turn.Text != tt.wantText || turn.FinishReason != llm.FinishFiltered {
					t.Errorf("turn = %+v, want the text %q to stand", turn, tt.wantText)
				}
				return
			}
			le, ok := errors.AsType[*llm.Error](err)
			if !ok || le.Kind != llm.ErrFiltered || le.Retryable() || err.Error() != tt.wantErr {
				t.Fatalf("error = %v, want %q of kind %s", err, tt.wantErr, llm.ErrFiltered)
			}
			if tries.Load() != 1 {
				t.Errorf("%d tries, want 1", tries.Load())
			}
			if turn == nil || turn.Text != "" || len(turn.ToolCalls) != 0 || turn.Sent == nil {
				t.Errorf("turn = %+v, want the empty turn with its body", turn)
			}
		})
	}
}

func TestNonStreamedAnswer(t *testing.T) {
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",
			"content":"Sure.","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":1}"}}]},
			"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`)
	})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Turn{
		Text: "Sure.",
		ToolCalls: []llm.ToolCall{
			{ID: "c1", Type: "function", Function: llm.FunctionCall{Name: "f", Arguments: `{"q":1}`}},
		},
		FinishReason: llm.FinishToolCalls,
		Usage:        llm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9},
	}
	if diff := cmp.Diff(want, turn, ignoreSent); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
	wantEvents := []llm.Event{
		{Kind: llm.EventText, Text: "Sure."},
		{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{ID: "c1", Name: "f", ArgumentsDelta: `{"q":1}`}},
		{Kind: llm.EventUsage, Usage: want.Usage},
	}
	if diff := cmp.Diff(wantEvents, rec.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// wire is what the fake server saw of a request.
type wire struct {
	path   string
	query  string
	header http.Header
	body   []byte
}

func TestOnTheWire(t *testing.T) {
	msgs := `"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello"}]`
	tests := []struct {
		name       string
		opts       openai.Options
		params     map[string]any
		wantBody   string
		wantPath   string
		wantQuery  string
		wantHeader map[string]string // "" means absent
	}{
		{
			name:     "defaults",
			opts:     openai.Options{APIKey: testKey},
			params:   map[string]any{"temperature": 0.2},
			wantBody: `{"model":"gpt-4o",` + msgs + `,"temperature":0.2,"stream":true,"stream_options":{"include_usage":true}}`,
			wantPath: "/v1/chat/completions",
			wantHeader: map[string]string{
				"Authorization": "Bearer " + testKey, "Content-Type": "application/json", "Api-Key": "",
			},
		},
		{
			name: "addParams win, dropParams go last, headers are sent",
			opts: openai.Options{
				AddParams:  map[string]any{"temperature": 0.7, "top_k": 40, "stop": []string{"<end>"}, "stream": true},
				DropParams: []string{"max_tokens", "stream_options", "absent"},
				Headers:    map[string]string{"HTTP-Referer": "https://relay.example", "X-Title": "Relay & co"},
			},
			params: map[string]any{"temperature": 0.2, "max_tokens": 100, "frequency_penalty": 0.5},
			wantBody: `{"model":"gpt-4o",` + msgs + `,"frequency_penalty":0.5,"temperature":0.7,"stream":true,` +
				`"stop":["<end>"],"top_k":40}`,
			wantPath: "/v1/chat/completions",
			wantHeader: map[string]string{
				"Authorization": "", "Http-Referer": "https://relay.example", "X-Title": "Relay & co",
			},
		},
		{
			name:     "a stream parameter of the agent is replaced in place",
			opts:     openai.Options{APIKey: testKey, Headers: map[string]string{"Authorization": "Bearer other"}},
			params:   map[string]any{"stream": false, "top_p": 1},
			wantBody: `{"model":"gpt-4o",` + msgs + `,"stream":true,"top_p":1,"stream_options":{"include_usage":true}}`,
			wantPath: "/v1/chat/completions",
			wantHeader: map[string]string{
				"Authorization": "Bearer other",
			},
		},
		{
			name:      "azure",
			opts:      openai.Options{APIKey: testKey, Azure: &openai.Azure{Deployment: "prod-4o"}},
			wantBody:  `{"model":"gpt-4o",` + msgs + `,"stream":true,"stream_options":{"include_usage":true}}`,
			wantPath:  "/openai/deployments/prod-4o/chat/completions",
			wantQuery: "api-version=" + openai.DefaultAzureAPIVersion,
			wantHeader: map[string]string{
				"Api-Key": testKey, "Authorization": "",
			},
		},
		{
			name:      "azure with the model as deployment",
			opts:      openai.Options{APIKey: testKey, Azure: &openai.Azure{APIVersion: "2025-01-01-preview"}},
			wantBody:  `{"model":"gpt-4o",` + msgs + `,"stream":true,"stream_options":{"include_usage":true}}`,
			wantPath:  "/openai/deployments/gpt-4o/chat/completions",
			wantQuery: "api-version=2025-01-01-preview",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got wire
			s := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = wire{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: b}
				answer(w)
			})
			tt.opts.BaseURL = s.URL + "/v1"
			if tt.opts.Azure != nil {
				tt.opts.BaseURL = s.URL + "/"
			}
			req := hello()
			req.Params = tt.params
			turn, err := openai.New(tt.opts).Stream(t.Context(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantBody, string(got.body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if !bytes.Equal(turn.Sent, got.body) {
				t.Errorf("Turn.Sent is not what was sent:\n%s", turn.Sent)
			}
			if got.path != tt.wantPath || got.query != tt.wantQuery {
				t.Errorf("URL %s?%s, want %s?%s", got.path, got.query, tt.wantPath, tt.wantQuery)
			}
			for k, want := range tt.wantHeader {
				if v := got.header.Get(k); v != want {
					t.Errorf("header %s = %q, want %q", k, v, want)
				}
			}
		})
	}
}

func TestToolImagesFollowInAUserMessage(t *testing.T) {
	var body []byte
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		answer(w)
	})
	calls := []llm.ToolCall{
		{ID: "a", Function: llm.FunctionCall{Name: "shot", Arguments: "{}"}},
		{ID: "b", Function: llm.FunctionCall{Name: "plot", Arguments: "{}"}},
	}
	req := &llm.Request{Model: "m", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "show me"},
		{Role: llm.RoleAssistant, ToolCalls: calls},
		{Role: llm.RoleTool, ToolCallID: "a", Parts: []llm.Part{
			{Type: llm.PartText, Text: "Here it is."},
			{Type: llm.PartImage, MIMEType: "image/png", Data: "iVBORw0KGgo="},
			{Type: llm.PartText, Text: "[image: image/png]"},
		}},
		{Role: llm.RoleTool, ToolCallID: "b", Parts: []llm.Part{
			{Type: llm.PartImage, MIMEType: "image/jpeg", Data: "/9j/4AAQ"},
		}},
	}}
	before := fmt.Sprint(req.Messages)
	if _, err := c.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"show me"},` +
		`{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"a","type":"function","function":{"name":"shot","arguments":"{}"}},` +
		`{"id":"b","type":"function","function":{"name":"plot","arguments":"{}"}}]},` +
		`{"role":"tool","content":"Here it is.\n\n[image: image/png]","tool_call_id":"a"},` +
		`{"role":"tool","content":"","tool_call_id":"b"},` +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},` +
		`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}}]}],` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if after := fmt.Sprint(req.Messages); after != before {
		t.Errorf("the request was changed:\n%s\n%s", before, after)
	}
}

func TestUserImagesStayInTheirMessage(t *testing.T) {
	var body []byte
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		answer(w)
	})
	req := &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		{Type: llm.PartText, Text: "What is this?"},
		{Type: llm.PartImage, MIMEType: "image/webp", Data: "UklGRg=="},
	}}}}
	if _, err := c.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
		`{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGRg=="}}]}],` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestRateLimitedTwiceHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		var bodies [][]byte
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			bodies = append(bodies, b)
			if calls.Add(1) <= 2 {
				w.Header().Set("Retry-After", "1")
				providerError(w, http.StatusTooManyRequests,
					`{"error":{"message":"Rate limit reached for key `+testKey+`","type":"requests","code":"rate_limit_exceeded"}}`)
				return
			}
			answer(w)
		})
		var logs logBuffer
		c := openai.New(openai.Options{
			BaseURL: "http://provider.test/v1", APIKey: testKey, HTTPClient: llmtest.Client(h),
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		})
		var rec llmtest.Recorder
		start := time.Now()
		turn, err := c.Stream(t.Context(), hello(), rec.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != 2*time.Second {
			t.Errorf("took %v, want the 2s that Retry-After asked for", elapsed)
		}
		if turn.Text != "Hi!" || turn.Retries != 2 || calls.Load() != 3 {
			t.Errorf("turn %+v after %d calls, want one answer after 2 retries", turn, calls.Load())
		}
		if !bytes.Equal(bodies[0], bodies[2]) || !bytes.Equal(turn.Sent, bodies[2]) {
			t.Errorf("the retries sent other bodies")
		}
		retries := rec.Kinds(llm.EventRetry)
		if len(retries) != 2 {
			t.Fatalf("%d retry events, want 2", len(retries))
		}
		for _, ev := range retries {
			if ev.Retry.Kind != llm.ErrRateLimited || ev.Retry.Status != 429 || ev.Retry.RetryAfter != time.Second {
				t.Errorf("retry event %+v", ev.Retry)
			}
			if strings.Contains(ev.Retry.Error(), testKey) {
				t.Errorf("retry event shows the key: %v", ev.Retry)
			}
		}
		if rec.Events[0].Kind != llm.EventRetry || rec.Events[1].Kind != llm.EventRetry {
			t.Errorf("retry events come after the answer began: %+v", rec.Events)
		}
		records := logs.records(t)
		if len(records) != 2 {
			t.Fatalf("%d log records, want 2:\n%s", len(records), logs.String())
		}
		for _, r := range records {
			if r["level"] != "WARN" || r["error_kind"] != "rate_limited" || r["status"] != float64(429) {
				t.Errorf("log record %v", r)
			}
		}
		if s := logs.String(); strings.Contains(s, testKey) || strings.Contains(s, "Be brief") {
			t.Errorf("the log shows the key or the prompt:\n%s", s)
		}
	})
}

func TestRetryAfterTooLong(t *testing.T) {
	var calls atomic.Int32
	c := serve(t, openai.Options{MaxRetryWait: 5 * time.Second}, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		providerError(w, http.StatusTooManyRequests, `{"error":{"message":"try later"}}`)
	})
	_, err := c.Stream(t.Context(), hello(), nil)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrRateLimited || e.RetryAfter < 59*time.Minute || calls.Load() != 1 {
		t.Errorf("error %+v after %d calls, want a rate limit asking for an hour, not retried", e, calls.Load())
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	var calls atomic.Int32
	var logs logBuffer
	c := serve(t, openai.Options{BackoffBase: time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil))},
		func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				providerError(w, http.StatusInternalServerError, `{"error":{"message":"The server had an error"}}`)
				return
			}
			answer(w)
		})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Hi!" || turn.Retries != 1 {
		t.Errorf("turn %+v, want one answer after 1 retry", turn)
	}
	retries := rec.Kinds(llm.EventRetry)
	if len(retries) != 1 || retries[0].Retry.Kind != llm.ErrUnavailable || retries[0].Retry.Status != 500 {
		t.Errorf("retry events %+v", retries)
	}
	if n := len(logs.records(t)); n != 1 {
		t.Errorf("%d log records, want 1", n)
	}
}

func TestServerErrorEveryTime(t *testing.T) {
	var calls atomic.Int32
	c := serve(t, openai.Options{BackoffBase: time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		providerError(w, http.StatusServiceUnavailable, `{"error":{"message":"overloaded"}}`)
	})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrUnavailable || e.Status != 503 || !strings.Contains(e.Message, "overloaded") {
		t.Errorf("error %+v", e)
	}
	if calls.Load() != 3 || len(rec.Kinds(llm.EventRetry)) != 2 || turn == nil || turn.Retries != 2 || len(turn.Sent) == 0 {
		t.Errorf("%d calls, %d retry events, turn %+v; want 3 tries", calls.Load(), len(rec.Kinds(llm.EventRetry)), turn)
	}
}

func TestConnectionResetBeforeAnyByte(t *testing.T) {
	var calls atomic.Int32
	c := serve(t, openai.Options{BackoffBase: time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // close with a reset
			conn.Close()
			return
		}
		answer(w)
	})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Hi!" || turn.Retries != 1 {
		t.Errorf("turn %+v, want one answer after 1 retry", turn)
	}
	retries := rec.Kinds(llm.EventRetry)
	if len(retries) != 1 || retries[0].Retry.Kind != llm.ErrNetwork {
		t.Fatalf("retry events %+v", retries)
	}
	t.Logf("retried after: %v", retries[0].Retry)
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := openai.New(openai.Options{BaseURL: "http://" + addr + "/v1", APIKey: testKey, MaxTries: 2, BackoffBase: time.Millisecond})
	var rec llmtest.Recorder
	turn, err := c.Stream(t.Context(), hello(), rec.Emit)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrNetwork || !strings.Contains(e.Message, "could not reach the provider at "+addr) {
		t.Errorf("error %+v", e)
	}
	if strings.Contains(e.Error(), "Post ") || strings.Contains(e.Error(), testKey) {
		t.Errorf("error shows the request: %v", e)
	}
	if len(rec.Kinds(llm.EventRetry)) != 1 || turn.Retries != 1 {
		t.Errorf("%d retry events, want 1 (MaxTries 2)", len(rec.Kinds(llm.EventRetry)))
	}
	t.Logf("error: %v", e)
}

func TestStreamCut(t *testing.T) {
	tests := []struct {
		name string
		end  func(w http.ResponseWriter)
	}{
		{"connection dropped", func(w http.ResponseWriter) { panic(http.ErrAbortHandler) }},
		{"body ended without an end", func(w http.ResponseWriter) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			c := serve(t, openai.Options{BackoffBase: time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				sse := llmtest.NewSSE(w)
				sse.Text("The answer is ")
				sse.ToolCall(0, "c1", "f", `{"a":`)
				tt.end(w)
			})
			var rec llmtest.Recorder
			turn, err := c.Stream(t.Context(), hello(), rec.Emit)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrStreamCut || !strings.Contains(e.Message, "was cut off") {
				t.Errorf("error %+v, want a stream cut", e)
			}
			t.Logf("error: %v", e)
			if turn == nil || turn.Text != "The answer is " || turn.ToolCalls != nil {
				t.Errorf("partial turn %+v, want the text only", turn)
			}
			if calls.Load() != 1 || len(rec.Kinds(llm.EventRetry)) != 0 {
				t.Errorf("%d calls; a cut stream is not retried", calls.Load())
			}
		})
	}
}

func TestStreamBrokenBeforeAnyEventIsRetried(t *testing.T) {
	var calls atomic.Int32
	c := serve(t, openai.Options{BackoffBase: time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		sse := llmtest.NewSSE(w)
		if calls.Add(1) == 1 {
			sse.Data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
			panic(http.ErrAbortHandler)
		}
		sse.Text("ok")
		sse.Finish(llm.FinishStop)
		sse.Done()
	})
	turn, err := c.Stream(t.Context(), hello(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "ok" || turn.Retries != 1 {
		t.Errorf("turn %+v", turn)
	}
}

func TestErrorInsideTheStream(t *testing.T) {
	t.Run("before any event it is retried", func(t *testing.T) {
		var calls atomic.Int32
		c := serve(t, openai.Options{BackoffBase: time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
			sse := llmtest.NewSSE(w)
			if calls.Add(1) == 1 {
				sse.Data(`{"error":{"code":502,"message":"Provider returned error"}}`)
				return
			}
			sse.Text("ok")
			sse.Finish(llm.FinishStop)
			sse.Done()
		})
		var rec llmtest.Recorder
		turn, err := c.Stream(t.Context(), hello(), rec.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Text != "ok" || turn.Retries != 1 || rec.Kinds(llm.EventRetry)[0].Retry.Status != 502 {
			t.Errorf("turn %+v, events %+v", turn, rec.Events)
		}
	})
	t.Run("after text it ends the turn", func(t *testing.T) {
		c := serve(t, openai.Options{BackoffBase: time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
			sse := llmtest.NewSSE(w)
			sse.Text("partial")
			sse.Data(`{"error":{"message":"the model crashed"}}`)
		})
		turn, err := c.Stream(t.Context(), hello(), nil)
		e := asLLMError(t, err)
		if e.Kind != llm.ErrUnavailable || e.Message != "the provider failed while answering: the model crashed" {
			t.Errorf("error %+v", e)
		}
		if turn.Text != "partial" || turn.Retries != 0 {
			t.Errorf("turn %+v", turn)
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	t.Run("mid-answer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				llmtest.NewSSE(w).Text("Thinking")
				<-r.Context().Done()
			})
			c := openai.New(openai.Options{BaseURL: "http://provider.test/v1", HTTPClient: llmtest.Client(h)})
			start := time.Now()
			turn, err := c.Stream(t.Context(), hello(), nil)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrStreamCut || !strings.Contains(e.Message, "nothing arrived for 1m0s") {
				t.Errorf("error %+v", e)
			}
			if elapsed := time.Since(start); elapsed != openai.DefaultIdleTimeout {
				t.Errorf("gave up after %v, want %v", elapsed, openai.DefaultIdleTimeout)
			}
			if turn.Text != "Thinking" || calls.Load() != 1 {
				t.Errorf("turn %+v after %d calls", turn, calls.Load())
			}
		})
	})
	t.Run("no answer at all", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				<-r.Context().Done()
			})
			c := openai.New(openai.Options{
				BaseURL: "http://provider.test/v1", HTTPClient: llmtest.Client(h), IdleTimeout: 5 * time.Second,
			})
			_, err := c.Stream(t.Context(), hello(), nil)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrNetwork || e.Message != "the provider at provider.test sent no answer for 5s" {
				t.Errorf("error %+v", e)
			}
			if calls.Load() != openai.DefaultMaxTries {
				t.Errorf("%d tries, want %d", calls.Load(), openai.DefaultMaxTries)
			}
		})
	})
	t.Run("a slow caller is not the provider's idleness", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) })
			c := openai.New(openai.Options{
				BaseURL: "http://provider.test/v1", HTTPClient: llmtest.Client(h), IdleTimeout: time.Second,
			})
			turn, err := c.Stream(t.Context(), hello(), func(llm.Event) { time.Sleep(10 * time.Second) })
			if err != nil || turn.Text != "Hi!" {
				t.Errorf("turn %+v, error %v", turn, err)
			}
		})
	})
}

func TestCancelMidStream(t *testing.T) {
	c := serve(t, openai.Options{}, func(w http.ResponseWriter, r *http.Request) {
		llmtest.NewSSE(w).Text("Once upon")
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancelCause(t.Context())
	abort := errors.New("user abort")
	start := time.Now()
	turn, err := c.Stream(ctx, hello(), func(ev llm.Event) {
		if ev.Kind == llm.EventText {
			cancel(abort)
		}
	})
	if !errors.Is(err, abort) {
		t.Errorf("error %v, want the cancel cause", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %v to return after the cancel", elapsed)
	}
	if turn == nil || turn.Text != "Once upon" {
		t.Errorf("turn %+v, want the partial text", turn)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "20")
			providerError(w, http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
		})
		c := openai.New(openai.Options{BaseURL: "http://provider.test/v1", HTTPClient: llmtest.Client(h)})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(5*time.Second, cancel)
		start := time.Now()
		_, err := c.Stream(ctx, hello(), nil)
		if !errors.Is(err, context.Canceled) || time.Since(start) != 5*time.Second {
			t.Errorf("error %v after %v, want cancelled after 5s", err, time.Since(start))
		}
	})
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind llm.ErrorKind
		wantMsg  string
	}{
		{
			name:   "bad key",
			status: 401,
			body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.",` +
				`"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			wantKind: llm.ErrAuth,
			wantMsg: "the API key was refused: Incorrect API key provided: [redacted]. " +
				"You can find your API key at https://platform.openai.com/account/api-keys.",
		},
		{
			name:     "forbidden",
			status:   403,
			body:     `{"error":{"message":"Project does not have access to model"}}`,
			wantKind: llm.ErrAuth,
			wantMsg:  "the API key was refused: Project does not have access to model",
		},
		{
			name:   "unknown model",
			status: 404,
			body: `{"error":{"message":"The model ` + "`gpt-4o`" + ` does not exist or you do not have access to it.",` +
				`"type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			wantKind: llm.ErrModelNotFound,
			wantMsg:  `model "gpt-4o" not found: The model ` + "`gpt-4o`" + ` does not exist or you do not have access to it.`,
		},
		{
			name:     "unknown model, Ollama",
			status:   404,
			body:     `{"error":"model \"gpt-4o\" not found, try pulling it first"}`,
			wantKind: llm.ErrModelNotFound,
			wantMsg:  `model "gpt-4o" not found: model "gpt-4o" not found, try pulling it first`,
		},
		{
			name:     "unknown model code on a 400",
			status:   400,
			body:     `{"error":{"message":"no such model","code":"model_not_found"}}`,
			wantKind: llm.ErrModelNotFound,
			wantMsg:  `model "gpt-4o" not found: no such model`,
		},
		{
			name:   "context too long",
			status: 400,
			body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",` +
				`"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			wantKind: llm.ErrContextLength,
			wantMsg: "the conversation is too long for the model's context window: This model's maximum context length is " +
				"128000 tokens. However, your messages resulted in 130000 tokens.",
		},
		{
			name:     "context too long, vLLM",
			status:   400,
			body:     `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}`,
			wantKind: llm.ErrContextLength,
			wantMsg:  "the conversation is too long for the model's context window: This model's maximum context length is 4096 tokens.",
		},
		{
			name:     "bad request",
			status:   400,
			body:     `{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error"}}`,
			wantKind: llm.ErrBadRequest,
			wantMsg:  "the provider rejected the request: Invalid value for 'temperature': must be at most 2.",
		},
		{
			name:     "bad request without a JSON body",
			status:   422,
			body:     `<html>nope</html>`,
			wantKind: llm.ErrBadRequest,
			wantMsg:  "the provider rejected the request",
		},
		{
			name:     "quota used up",
			status:   429,
			body:     `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			wantKind: llm.ErrRateLimited,
			wantMsg:  "the provider account's quota is used up: You exceeded your current quota.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			var logs logBuffer
			c := serve(t, openai.Options{APIKey: testKey, Logger: slog.New(slog.NewJSONHandler(&logs, nil))},
				func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					providerError(w, tt.status, tt.body)
				})
			turn, err := c.Stream(t.Context(), hello(), nil)
			e := asLLMError(t, err)
			want := &llm.Error{Kind: tt.wantKind, Status: tt.status, Message: tt.wantMsg}
			if diff := cmp.Diff(want, e); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(logs.String(), testKey) {
				t.Errorf("the key shows: %v", err)
			}
			if calls.Load() != 1 || turn.Retries != 0 {
				t.Errorf("%d calls; a refusal is not retried", calls.Load())
			}
		})
	}
}

func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	e, ok := errors.AsType[*llm.Error](err)
	if !ok {
		t.Fatalf("error %v (%T), want an *llm.Error", err, err)
	}
	return e
}
