package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testKey = "sk-ant-test-0123456789abcdef"

// bundle is what a test works with: the client, the fake Anthropic, the
// waits the client slept and what it logged.
type bundle struct {
	client *Client
	fake   *llmtest.Provider
	waits  []time.Duration
	log    *bytes.Buffer
}

// setup starts a fake Anthropic whose n-th try is answered by handlers[n]
// (the last one answers any further try) and a client for it.
func setup(t *testing.T, opts Options, handlers ...http.HandlerFunc) *bundle {
	t.Helper()
	f := llmtest.NewProvider(t, func(r *http.Request) bool { return r.URL.Path == "/v1/messages" }, handlers...)
	b := &bundle{fake: f, log: &bytes.Buffer{}}
	if opts.BaseURL == "" {
		opts.BaseURL = f.URL
	}
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	opts.Logger = slog.New(slog.NewTextHandler(b.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b.client = New(opts)
	b.client.ep.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
		b.waits = append(b.waits, d)
		return ctx.Err()
	}
	return b
}

// event is one server-sent event as Anthropic writes it.
func event(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

// stream answers with the events, flushing after each.
func stream(events ...string) http.HandlerFunc {
	return llmtest.Stream("text/event-stream; charset=utf-8", events...)
}

// refuse answers with Anthropic's error body.
func refuse(status int, typ, message string, header ...string) http.HandlerFunc {
	body := fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011"}`, typ, message)
	return llmtest.Refuse(status, "application/json", body, header...)
}

const (
	messageStart = `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":1}}}`
	textStart    = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	blockStop0   = `{"type":"content_block_stop","index":0}`
	messageStop  = `{"type":"message_stop"}`
)

func textDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}`, i, s)
}

func messageDelta(stop string, out int) string {
	return fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, out)
}

// hello is a whole streamed answer: "Hello!".
var hello = stream(
	event("message_start", messageStart),
	event("content_block_start", textStart),
	event("ping", `{"type": "ping"}`),
	event("content_block_delta", textDelta(0, "Hel")),
	event("content_block_delta", textDelta(0, "lo!")),
	event("content_block_stop", blockStop0),
	event("message_delta", messageDelta("end_turn", 12)),
	event("message_stop", messageStop),
)

func simple() *llm.Request {
	return &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "Say hello. My secret prompt."},
	}}
}

// conversation is a whole agent conversation: system prompt, a question, an
// answer with two tool calls, their results (one an image, one a failure)
// and a follow-up.
func conversation() *llm.Request {
	return &llm.Request{
		Model: "claude-sonnet-4-5",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are Relay's test agent. Use <tools> & be brief."},
			{Role: llm.RoleUser, Content: "What is 2+3, and what does example.com look like?"},
			{Role: llm.RoleAssistant, Content: "Let me check both.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_01", Type: "function", Function: llm.FunctionCall{Name: "get-sum__mcp__everything", Arguments: `{"a": 2, "b": 3}`}},
				{ID: "toolu_02", Type: "function", Function: llm.FunctionCall{Name: "screenshot__mcp__browser", Arguments: `{"url":"https://example.com/?q=1&r=2"}`}},
			}},
			{Role: llm.RoleTool, ToolCallID: "toolu_01", IsError: true, Content: `"get-sum__mcp__everything" tool call failed: timed out`},
			{Role: llm.RoleTool, ToolCallID: "toolu_02", Content: "Page loaded.\n\n[image: image/png]", Parts: []llm.Part{
				{Type: llm.PartText, Text: "Page loaded."},
				{Type: llm.PartImage, MIMEType: "image/png", Data: "iVBORw0KGgo="},
			}},
			{Role: llm.RoleUser, Content: "Thanks. Summarize."},
		},
		Tools: []llm.FunctionTool{
			{Function: llm.Function{Name: "get-sum__mcp__everything", Description: "Returns the sum of two numbers",
				Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`)}},
			{Function: llm.Function{Name: "screenshot__mcp__browser", Description: "Takes a screenshot of a page",
				Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}`)}},
		},
		ToolChoice: llm.ToolChoiceAuto,
		Params:     map[string]any{"temperature": 0.2, "max_tokens": 1000, "stop": []any{"END"}, "top_p": 0.9, "frequency_penalty": 0.5},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	llmtest.Golden(t, name, got, *update)
}

func TestRequest(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		req    *llm.Request
		golden string
	}{
		{name: "whole conversation", req: conversation(), golden: "conversation.json"},
		{
			name: "add and drop params",
			opts: Options{
				AddParams:  map[string]any{"metadata": map[string]any{"user_id": "u1"}, "temperature": 1, "stream": false},
				DropParams: []string{"top_p", "model"},
			},
			req: &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "hi"},
				{Role: llm.RoleUser, Content: "again"},
				{Role: llm.RoleAssistant, Content: ""},
			}, Params: map[string]any{"temperature": 0.5, "top_p": 0.5, "top_k": 40, "maxOutputTokens": 77, "stop": "STOP"}},
			golden: "params.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Headers = map[string]string{"anthropic-beta": "tools-2024"}
			b := setup(t, tt.opts, hello)
			turn, err := b.client.Stream(t.Context(), tt.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, turn.Sent)
			if got := b.fake.Body(0); !bytes.Equal(got, turn.Sent) {
				t.Errorf("the server got other bytes than Turn.Sent:\n%s", got)
			}
			h := b.fake.Request(0).Header
			for k, want := range map[string]string{
				"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
				"Accept": "text/event-stream", "Anthropic-Beta": "tools-2024",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestStreamText(t *testing.T) {
	b := setup(t, Options{}, hello)
	var c llmtest.Recorder
	turn, err := b.client.Stream(t.Context(), simple(), c.Emit)
	if err != nil {
		t.Fatal(err)
	}
	usage := llm.Usage{PromptTokens: 35, CompletionTokens: 12, TotalTokens: 47}
	wantEvents := []llm.Event{
		{Kind: llm.EventText, Text: "Hel"},
		{Kind: llm.EventText, Text: "lo!"},
		{Kind: llm.EventUsage, Usage: usage},
	}
	if diff := cmp.Diff(wantEvents, c.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := &llm.Turn{Text: "Hello!", FinishReason: llm.FinishStop, Usage: usage, Sent: turn.Sent}
	if diff := cmp.Diff(want, turn); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
}

func TestStreamToolUse(t *testing.T) {
	b := setup(t, Options{}, stream(
		event("message_start", messageStart),
		event("content_block_start", textStart),
		event("content_block_delta", textDelta(0, "Checking.")),
		event("content_block_stop", blockStop0),
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{}}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\", \"unit\""}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":": \"celsius\"}"}}`),
		event("content_block_stop", `{"type":"content_block_stop","index":1}`),
		event("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01B","name":"get_time","input":{}}}`),
		event("content_block_stop", `{"type":"content_block_stop","index":2}`),
		event("message_delta", messageDelta("tool_use", 89)),
		event("message_stop", messageStop),
	))
	var c llmtest.Recorder
	turn, err := b.client.Stream(t.Context(), simple(), c.Emit)
	if err != nil {
		t.Fatal(err)
	}
	call := func(d llm.ToolCallDelta) llm.Event { return llm.Event{Kind: llm.EventToolCallDelta, ToolCall: d} }
	usage := llm.Usage{PromptTokens: 35, CompletionTokens: 89, TotalTokens: 124}
	wantEvents := []llm.Event{
		{Kind: llm.EventText, Text: "Checking."},
		call(llm.ToolCallDelta{Index: 0, ID: "toolu_01A", Name: "get_weather"}),
		call(llm.ToolCallDelta{Index: 0, ArgumentsDelta: `{"location": "San Fra`}),
		call(llm.ToolCallDelta{Index: 0, ArgumentsDelta: `ncisco, CA", "unit"`}),
		call(llm.ToolCallDelta{Index: 0, ArgumentsDelta: `: "celsius"}`}),
		call(llm.ToolCallDelta{Index: 1, ID: "toolu_01B", Name: "get_time"}),
		call(llm.ToolCallDelta{Index: 1, ArgumentsDelta: `{}`}),
		{Kind: llm.EventUsage, Usage: usage},
	}
	if diff := cmp.Diff(wantEvents, c.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := &llm.Turn{
		Text: "Checking.",
		ToolCalls: []llm.ToolCall{
			{ID: "toolu_01A", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"location": "San Francisco, CA", "unit": "celsius"}`}},
			{ID: "toolu_01B", Type: "function", Function: llm.FunctionCall{Name: "get_time", Arguments: `{}`}},
		},
		FinishReason: llm.FinishToolCalls, Usage: usage, Sent: turn.Sent,
	}
	if diff := cmp.Diff(want, turn); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
}

// Texts of only white space are not sent: Anthropic refuses a text block
// without other text than that ("text content blocks must contain
// non-whitespace text"), so the line breaks a model wrote before its tool
// call, or an answer of nothing but them, would fail every later turn of the
// conversation.
func TestWhitespaceTextsLeftOut(t *testing.T) {
	b := setup(t, Options{}, hello)
	req := simple()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: "\n\n", ToolCalls: []llm.ToolCall{
			{ID: "toolu_1", Type: "function", Function: llm.FunctionCall{Name: "get_time", Arguments: `{}`}},
		}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: " "},
		llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartText, Text: " \n "}}},
		llm.Message{Role: llm.RoleUser, Content: "And now?"})
	turn, err := b.client.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(turn.Sent, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Messages {
		got = append(got, string(m))
	}
	want := []string{
		`{"role":"user","content":[{"type":"text","text":"Say hello. My secret prompt."}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"},{"type":"text","text":"And now?"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": llm.FinishStop, "stop_sequence": llm.FinishStop, "max_tokens": llm.FinishLength,
		"tool_use": llm.FinishToolCalls, "refusal": llm.FinishFiltered, "pause_turn": llm.FinishStop,
		"model_context_window_exceeded": llm.FinishLength,
	} {
		t.Run(stop, func(t *testing.T) {
			b := setup(t, Options{}, stream(
				event("message_start", messageStart),
				event("content_block_start", textStart),
				event("content_block_delta", textDelta(0, "x")),
				event("content_block_stop", blockStop0),
				event("message_delta", messageDelta(stop, 1)),
				event("message_stop", messageStop),
			))
			turn, err := b.client.Stream(t.Context(), simple(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if turn.FinishReason != want {
				t.Errorf("finish reason = %q, want %q", turn.FinishReason, want)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	b := setup(t, Options{},
		refuse(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", "Retry-After", "3"),
		llmtest.Reset,
		hello,
	)
	var c llmtest.Recorder
	turn, err := b.client.Stream(t.Context(), simple(), c.Emit)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Hello!" || turn.Retries != 2 || b.fake.Tries() != 3 {
		t.Errorf("text %q after %d retries, %d tries; want Hello! after 2 retries", turn.Text, turn.Retries, b.fake.Tries())
	}
	if len(b.waits) != 2 || b.waits[0] != 3*time.Second || b.waits[1] < 500*time.Millisecond || b.waits[1] > time.Second {
		t.Errorf("waits = %v, want [3s (Retry-After), 500ms..1s (second backoff)]", b.waits)
	}
	var retries []*llm.Error
	for _, e := range c.Events {
		if e.Kind == llm.EventRetry {
			retries = append(retries, e.Retry)
		}
	}
	if len(retries) != 2 || retries[0].Kind != llm.ErrRateLimited || retries[0].RetryAfter != 3*time.Second || retries[1].Kind != llm.ErrNetwork {
		t.Errorf("retry events = %+v", retries)
	}
	log := b.log.String()
	if strings.Count(log, "level=WARN msg=\"model request failed, retrying\"") != 2 || !strings.Contains(log, "provider=anthropic") || !strings.Contains(log, "model=claude-sonnet-4-5") {
		t.Errorf("log does not warn twice with provider and model:\n%s", log)
	}
	llmtest.CheckClean(t, "log", log, testKey, "secret prompt")
}

func TestRetriesBounded(t *testing.T) {
	b := setup(t, Options{MaxTries: 2}, refuse(529, "overloaded_error", "Overloaded"))
	turn, err := b.client.Stream(t.Context(), simple(), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.ErrUnavailable || le.Status != 529 {
		t.Fatalf("err = %v, want ErrUnavailable with status 529", err)
	}
	if want := "model provider: Anthropic is unavailable or overloaded: Overloaded (HTTP 529)"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	if b.fake.Tries() != 2 || turn.Retries != 1 {
		t.Errorf("%d tries, %d retries; want 2 tries", b.fake.Tries(), turn.Retries)
	}
}

func TestStreamCut(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{
			name: "connection ends",
			handler: stream(
				event("message_start", messageStart),
				event("content_block_start", textStart),
				event("content_block_delta", textDelta(0, "Partial ans")),
			),
			want: "model provider: the answer from Anthropic broke off: the stream ended before message_stop",
		},
		{
			name: "error event",
			handler: stream(
				event("message_start", messageStart),
				event("content_block_start", textStart),
				event("content_block_delta", textDelta(0, "Partial ans")),
				event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			),
			want: "model provider: the answer from Anthropic broke off: Anthropic is unavailable or overloaded: Overloaded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, Options{}, tt.handler, hello)
			turn, err := b.client.Stream(t.Context(), simple(), nil)
			llmtest.CheckFailure(t, turn, err, llmtest.Failure{Kind: llm.ErrStreamCut, Error: tt.want, Text: "Partial ans"})
			if b.fake.Tries() != 1 {
				t.Errorf("%d tries: a cut after output must not be retried", b.fake.Tries())
			}
		})
	}
	t.Run("before any output, retried", func(t *testing.T) {
		b := setup(t, Options{}, stream(event("message_start", messageStart)), hello)
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		if err != nil || turn.Text != "Hello!" || turn.Retries != 1 {
			t.Fatalf("turn %+v, err %v; want Hello! after one retry", turn, err)
		}
	})
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		kind    llm.ErrorKind
		want    string
	}{
		{
			name: "bad key", handler: refuse(401, "authentication_error", "invalid x-api-key"), kind: llm.ErrAuth,
			want: "model provider: Anthropic refused the API key: invalid x-api-key (HTTP 401)",
		},
		{
			name: "key echoed back is redacted", handler: refuse(403, "permission_error", "key "+testKey+" may not use this model"), kind: llm.ErrAuth,
			want: "model provider: Anthropic refused the API key: key [redacted] may not use this model (HTTP 403)",
		},
		{
			name: "unknown model", handler: refuse(404, "not_found_error", "model: claude-sonnet-4-5"), kind: llm.ErrModelNotFound,
			want: `model provider: Anthropic has no model "claude-sonnet-4-5": model: claude-sonnet-4-5 (HTTP 404)`,
		},
		{
			name: "prompt too long", handler: refuse(400, "invalid_request_error", "prompt is too long: 212043 tokens > 200000 maximum"), kind: llm.ErrContextLength,
			want: `model provider: the conversation is too long for "claude-sonnet-4-5": prompt is too long: 212043 tokens > 200000 maximum (HTTP 400)`,
		},
		{
			name: "request too large", handler: refuse(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."), kind: llm.ErrContextLength,
			want: `model provider: the conversation is too long for "claude-sonnet-4-5": Request exceeds the maximum allowed number of bytes. (HTTP 413)`,
		},
		{
			name: "bad request", handler: refuse(400, "invalid_request_error", "temperature: range: 0..1"), kind: llm.ErrBadRequest,
			want: "model provider: Anthropic rejected the request: temperature: range: 0..1 (HTTP 400)",
		},
		{
			name: "HTML from a proxy", kind: llm.ErrBadRequest,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(400)
				io.WriteString(w, "<html><body>Bad gateway config</body></html>")
			},
			want: "model provider: Anthropic rejected the request: Bad Request (HTTP 400)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, Options{}, tt.handler)
			turn, err := b.client.Stream(t.Context(), simple(), nil)
			llmtest.CheckFailure(t, turn, err, llmtest.Failure{Kind: tt.kind, Error: tt.want, Secrets: []string{testKey}})
			llmtest.CheckClean(t, "log", b.log.String(), testKey)
			if b.fake.Tries() != 1 || turn.Retries != 0 {
				t.Errorf("%d tries: a refusal must not be retried", b.fake.Tries())
			}
		})
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Run("after output", func(t *testing.T) {
		b := setup(t, Options{IdleTimeout: 100 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
			stream(event("message_start", messageStart), event("content_block_start", textStart), event("content_block_delta", textDelta(0, "Hm")))(w, r)
			<-r.Context().Done()
		})
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		llmtest.CheckFailure(t, turn, err, llmtest.Failure{Kind: llm.ErrStreamCut, Contains: "idle timeout (100ms)", Text: "Hm"})
	})
	t.Run("no answer", func(t *testing.T) {
		b := setup(t, Options{IdleTimeout: 100 * time.Millisecond, MaxTries: 1}, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		llmtest.CheckFailure(t, turn, err, llmtest.Failure{Kind: llm.ErrNetwork, Contains: "idle timeout"})
	})
}

func TestCancel(t *testing.T) {
	b := setup(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		stream(event("message_start", messageStart), event("content_block_start", textStart), event("content_block_delta", textDelta(0, "Once upon")))(w, r)
		<-r.Context().Done()
	})
	llmtest.CheckCancel(t, b.client, simple(), b.fake.Tries, "Once upon")
}

func TestConnectTimeout(t *testing.T) {
	// A listener that accepts and never speaks: the TLS handshake hangs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c := New(Options{BaseURL: "https://" + ln.Addr().String(), APIKey: testKey, ConnectTimeout: 100 * time.Millisecond, MaxTries: 1})
	start := time.Now()
	_, err = c.Stream(t.Context(), simple(), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.ErrNetwork {
		t.Fatalf("err = %v, want ErrNetwork", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Error("the key leaked")
	}
}

func TestBaseURL(t *testing.T) {
	for base, want := range map[string]string{
		"":                                "https://api.anthropic.com/v1/messages",
		"https://proxy.example/anthropic": "https://proxy.example/anthropic/v1/messages",
		"https://proxy.example/v1/":       "https://proxy.example/v1/messages",
	} {
		if got := New(Options{BaseURL: base}).url; got != want {
			t.Errorf("BaseURL %q: url = %q, want %q", base, got, want)
		}
	}
}

// A forced function is Anthropic's {"type":"tool","name":…}; seed and
// response_format are refused by CheckParam, and a function's strict true by
// CheckStrict, since the body has no place for them; the parameters it maps
// pass unless the endpoint drops them.
func TestClientChoices(t *testing.T) {
	c := New(Options{APIKey: testKey, DropParams: []string{"top_k"}})
	req := conversation()
	req.ToolFunction = "get_time"
	body, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"tool_choice":{"type":"tool","name":"get_time"}`)) {
		t.Errorf("tool_choice in %s", body)
	}
	for name, want := range map[string]bool{"temperature": true, "max_tokens": true, "max_completion_tokens": true, "stop": true, "top_p": true, "seed": false, "top_k": false} {
		if err := c.CheckParam(name, 1); (err == nil) != want {
			t.Errorf("CheckParam(%s) = %v; want accepted %v", name, err, want)
		}
	}
	if c.CheckParam("response_format", map[string]any{"type": "json_object"}) == nil || c.CheckParam("response_format", map[string]any{"type": "text"}) != nil {
		t.Errorf("response_format: json_object must be refused, text accepted")
	}
	if c.CheckStrict(true) == nil || c.CheckStrict(false) != nil {
		t.Errorf("strict: true must be refused, false accepted")
	}
}

// Calls made through another provider may have ids Anthropic refuses (it takes
// ^[a-zA-Z0-9_-]+$ only): a conversation continued with an Anthropic agent
// sends them with every other character as "_", the call and its result alike.
func TestForeignToolCallIDs(t *testing.T) {
	c := New(Options{APIKey: testKey})
	body, err := c.Body(&llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "What is the weather?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "functions.get_weather:0", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{}`}}}},
		{Role: llm.RoleTool, ToolCallID: "functions.get_weather:0", Content: "Sunny."},
		{Role: llm.RoleUser, Content: "And tomorrow?"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range sent.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				ids = append(ids, "use "+b.ID)
			case "tool_result":
				ids = append(ids, "result "+b.ToolUseID)
			}
		}
	}
	if diff := cmp.Diff([]string{"use functions_get_weather_0", "result functions_get_weather_0"}, ids); diff != "" {
		t.Errorf("tool ids sent (-want +got):\n%s\n%s", diff, body)
	}
}
