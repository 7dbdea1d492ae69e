package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testKey = "AIzaSyTest0123456789abcdef"

// bundle is what a test works with: the client, the fake Gemini, the waits
// the client slept and what it logged.
type bundle struct {
	client *Client
	fake   *llmtest.Provider
	waits  []time.Duration
	log    *bytes.Buffer
}

// setup starts a fake Gemini whose n-th try is answered by handlers[n] (the
// last one answers any further try) and a client for it, whose generated
// call ids are call_1, call_2, ….
func setup(t *testing.T, opts Options, handlers ...http.HandlerFunc) *bundle {
	t.Helper()
	f := llmtest.NewProvider(t, func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse"
	}, handlers...)
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
	n := 0
	b.client.newID = func() string {
		n++
		return fmt.Sprintf("call_%d", n)
	}
	return b
}

// stream answers with the chunks, each a data event ended by CRLFs as Google
// writes them, flushing after each.
func stream(chunks ...string) http.HandlerFunc {
	events := make([]string, len(chunks))
	for i, c := range chunks {
		events[i] = "data: " + c + "\r\n\r\n"
	}
	return llmtest.Stream("text/event-stream", events...)
}

// refuse answers with Google's error body.
func refuse(status int, body string, header ...string) http.HandlerFunc {
	return llmtest.Refuse(status, "application/json; charset=UTF-8", body, header...)
}

func googleError(code int, status, message string) string {
	return fmt.Sprintf(`{"error":{"code":%d,"message":%q,"status":%q}}`, code, message, status)
}

func textChunk(text, finish string) string {
	f := ""
	if finish != "" {
		f = fmt.Sprintf(`,"finishReason":%q`, finish)
	}
	return fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":%q}],"role":"model"}%s,"index":0}],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`, text, f)
}

const usageChunk = `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":3,"thoughtsTokenCount":9,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash"}`

// hello is a whole streamed answer: "Hello!".
var hello = stream(
	`{"candidates":[{"content":{"parts":[{"text":"thinking about it","thought":true}],"role":"model"},"index":0}]}`,
	textChunk("Hel", ""),
	textChunk("lo!", ""),
	usageChunk,
)

func simple() *llm.Request {
	return &llm.Request{Model: "gemini-2.5-flash", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "Say hello. My secret prompt."},
	}}
}

// conversation is a whole agent conversation: system prompt, a question, an
// answer with two tool calls, their results (one an image, one a failure)
// and a follow-up.
func conversation() *llm.Request {
	return &llm.Request{
		Model: "gemini-2.5-flash",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are Relay's test agent. Use <tools> & be brief."},
			{Role: llm.RoleUser, Content: "What is 2+3, and what does example.com look like?"},
			{Role: llm.RoleAssistant, Content: "Let me check both.", ToolCalls: []llm.ToolCall{
				{ID: "call_a", Type: "function", Function: llm.FunctionCall{Name: "get-sum__mcp__everything", Arguments: `{"a": 2, "b": 3}`}},
				{ID: "call_b", Type: "function", Function: llm.FunctionCall{Name: "screenshot__mcp__browser", Arguments: `{"url":"https://example.com/?q=1&r=2"}`}},
			}},
			{Role: llm.RoleTool, ToolCallID: "call_a", IsError: true, Content: `"get-sum__mcp__everything" tool call failed: timed out`},
			{Role: llm.RoleTool, ToolCallID: "call_b", Content: "Page loaded.\n\n[image: image/png]", Parts: []llm.Part{
				{Type: llm.PartText, Text: "Page loaded.\n\n[image: image/png]"},
				{Type: llm.PartImage, MIMEType: "image/png", Data: "iVBORw0KGgo="},
			}},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: llm.PartText, Text: "Thanks. Compare with this one:"},
				{Type: llm.PartImage, MIMEType: "image/jpeg", Data: "/9j/4AAQ"},
			}},
		},
		Tools: []llm.FunctionTool{
			{Function: llm.Function{Name: "get-sum__mcp__everything", Description: "Returns the sum of two numbers",
				Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`)}},
			{Function: llm.Function{Name: "screenshot__mcp__browser", Description: "Takes a screenshot of a page",
				Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}`)}},
			{Function: llm.Function{Name: "get_time", Description: "Tells the time",
				Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
		},
		ToolChoice: llm.ToolChoiceAuto,
		Params:     map[string]any{"temperature": 0.2, "max_tokens": 1000, "stop": []any{"END"}, "top_p": 0.9, "top_k": 40, "frequency_penalty": 0.5},
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
				AddParams: map[string]any{
					"safetySettings":   []any{map[string]any{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}},
					"generationConfig": map[string]any{"responseModalities": []any{"TEXT", "IMAGE"}, "temperature": 1},
				},
				DropParams: []string{"topK", "contents"},
			},
			req: &llm.Request{Model: "gemini-2.5-flash-image", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "draw a cat"},
				{Role: llm.RoleUser, Content: "in blue"},
			}, Params: map[string]any{"temperature": 0.5, "topK": 3, "maxOutputTokens": 77, "stop": "STOP", "seed": 1}},
			golden: "params.json",
		},
		{
			// What a /v1 client asks for: one function forced, a seed and
			// a JSON schema for the answer.
			name: "forced function, seed and response_format",
			req: &llm.Request{Model: "gemini-2.5-flash", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Weather in Paris?"}},
				Tools:      conversation().Tools[2:],
				ToolChoice: llm.ToolChoiceAuto, ToolFunction: "get_time",
				Params: map[string]any{"seed": 7, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "w",
					"schema": map[string]any{"type": "object", "properties": map[string]any{"sky": map[string]any{"type": "string"}}, "additionalProperties": false}}}}},
			golden: "client.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Headers = map[string]string{"X-Goog-User-Project": "relay-test"}
			b := setup(t, tt.opts, hello)
			turn, err := b.client.Stream(t.Context(), tt.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, turn.Sent)
			if got := b.fake.Body(0); !bytes.Equal(got, turn.Sent) {
				t.Errorf("the server got other bytes than Turn.Sent:\n%s", got)
			}
			r := b.fake.Request(0)
			if want := "/v1beta/models/" + tt.req.Model + ":streamGenerateContent"; r.URL.Path != want || r.URL.RawQuery != "alt=sse" {
				t.Errorf("URL = %s, want %s?alt=sse", r.URL, want)
			}
			for k, want := range map[string]string{
				"X-Goog-Api-Key": testKey, "Content-Type": "application/json", "Accept": "text/event-stream", "X-Goog-User-Project": "relay-test",
			} {
				if got := r.Header.Get(k); got != want {
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
	usage := llm.Usage{PromptTokens: 8, CompletionTokens: 12, TotalTokens: 20}
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

func TestFunctionCalls(t *testing.T) {
	b := setup(t, Options{}, stream(
		textChunk("Checking.", ""),
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"location":"Paris","unit":"celsius"}},"thoughtSignature":"c2lnLTE="},{"functionCall":{"name":"get_time"}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":12,"totalTokenCount":42}}`,
	), hello)
	var c llmtest.Recorder
	req := simple()
	turn, err := b.client.Stream(t.Context(), req, c.Emit)
	if err != nil {
		t.Fatal(err)
	}
	usage := llm.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42}
	wantEvents := []llm.Event{
		{Kind: llm.EventText, Text: "Checking."},
		{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: 0, ID: "call_1", Name: "get_weather", ArgumentsDelta: `{"location":"Paris","unit":"celsius"}`}},
		{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: 1, ID: "call_2", Name: "get_time", ArgumentsDelta: `{}`}},
		{Kind: llm.EventUsage, Usage: usage},
	}
	if diff := cmp.Diff(wantEvents, c.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := &llm.Turn{
		Text: "Checking.",
		ToolCalls: []llm.ToolCall{
			{ID: "call_1", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"location":"Paris","unit":"celsius"}`}},
			{ID: "call_2", Type: "function", Function: llm.FunctionCall{Name: "get_time", Arguments: `{}`}},
		},
		FinishReason: llm.FinishToolCalls, Usage: usage, Sent: turn.Sent,
	}
	if diff := cmp.Diff(want, turn); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}

	// The next turn sends the calls back with the signature Gemini gave the
	// first, and their results named after them.
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: turn.Text, ToolCalls: turn.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "18°C"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_2", Content: "noon"})
	next, err := b.client.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(next.Sent, &body); err != nil {
		t.Fatal(err)
	}
	wantContents := []string{
		`{"role":"user","parts":[{"text":"Say hello. My secret prompt."}]}`,
		`{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"location":"Paris","unit":"celsius"}},"thoughtSignature":"c2lnLTE="},{"functionCall":{"name":"get_time","args":{}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18°C"}}},{"functionResponse":{"name":"get_time","response":{"output":"noon"}}}]}`,
	}
	var got []string
	for _, c := range body.Contents {
		got = append(got, string(c))
	}
	if diff := cmp.Diff(wantContents, got); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

// Results sent in another order than their calls, as an OpenAI client may
// send them, reach Gemini in the calls' order: Gemini pairs a response with
// a call by position, so two calls of one function would otherwise each
// read the other's result.
func TestFunctionResponsesInCallOrder(t *testing.T) {
	b := setup(t, Options{}, hello)
	req := simple()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "call_p", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			{ID: "call_o", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
			{ID: "call_t", Type: "function", Function: llm.FunctionCall{Name: "get_time", Arguments: `{}`}},
		}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_t", Content: "noon"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_o", Content: "Oslo: 2°C"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_p", Content: "Paris: 18°C"})
	sent := slices.Clone(req.Messages)
	turn, err := b.client.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(turn.Sent, &body); err != nil || len(body.Contents) != 3 {
		t.Fatalf("%s: %v", turn.Sent, err)
	}
	want := `{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"Paris: 18°C"}}},{"functionResponse":{"name":"get_weather","response":{"output":"Oslo: 2°C"}}},{"functionResponse":{"name":"get_time","response":{"output":"noon"}}}]}`
	if got := string(body.Contents[2]); got != want {
		t.Errorf("responses\n got %s\nwant %s", got, want)
	}
	if diff := cmp.Diff(sent, req.Messages); diff != "" {
		t.Errorf("the request's messages changed (-before +after):\n%s", diff)
	}
}

func TestFinishReasons(t *testing.T) {
	for reason, want := range map[string]string{
		"STOP": llm.FinishStop, "MAX_TOKENS": llm.FinishLength, "SAFETY": llm.FinishFiltered,
		"RECITATION": llm.FinishFiltered, "PROHIBITED_CONTENT": llm.FinishFiltered, "OTHER": llm.FinishStop,
	} {
		t.Run(reason, func(t *testing.T) {
			b := setup(t, Options{}, stream(textChunk("x", reason)))
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

func TestBlockedAnswers(t *testing.T) {
	// A blocked prompt or a filtered answer with nothing in it is an error
	// the user can read, not an empty answer; one with text keeps it.
	tests := []struct {
		name    string
		chunks  []string
		wantErr string // empty: the turn succeeds
		text    string
	}{
		{
			name:    "blocked prompt",
			chunks:  []string{`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}}`},
			wantErr: "model provider: Gemini blocked the prompt: PROHIBITED_CONTENT",
		},
		{
			name:    "blocked prompt with a message",
			chunks:  []string{`{"promptFeedback":{"blockReason":"SAFETY","blockReasonMessage":"The prompt was blocked due to safety.","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}}`},
			wantErr: "model provider: Gemini blocked the prompt: SAFETY (The prompt was blocked due to safety.)",
		},
		{
			name:    "answer stopped before any text",
			chunks:  []string{`{"candidates":[{"content":{"role":"model"},"finishReason":"RECITATION","index":0}],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}}`},
			wantErr: "model provider: Gemini stopped the answer: RECITATION",
		},
		{
			name:   "answer stopped after some text",
			chunks: []string{textChunk("Part of it", ""), `{"candidates":[{"content":{"role":"model"},"finishReason":"SAFETY","index":0}]}`},
			text:   "Part of it",
		},
		{
			name:   "empty answer that was not filtered",
			chunks: []string{`{"candidates":[{"content":{"role":"model"},"finishReason":"STOP","index":0}]}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, Options{}, stream(tt.chunks...))
			turn, err := b.client.Stream(t.Context(), simple(), nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if turn.Text != tt.text {
					t.Errorf("text = %q, want %q", turn.Text, tt.text)
				}
				return
			}
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.ErrFiltered || le.Retryable() || err.Error() != tt.wantErr {
				t.Fatalf("error = %v, want %q of kind %s", err, tt.wantErr, llm.ErrFiltered)
			}
			if b.fake.Tries() != 1 {
				t.Errorf("%d tries, want 1", b.fake.Tries())
			}
			if turn == nil || turn.Text != "" || turn.FinishReason != llm.FinishFiltered || turn.Sent == nil {
				t.Errorf("turn = %+v, want the empty filtered turn with its body", turn)
			}
		})
	}
}

// An empty answer that Gemini ended for another reason than a filter (the
// model wrote a malformed function call) is an error naming that reason, not
// an empty success.
func TestEmptyAnswerEndedOtherwise(t *testing.T) {
	b := setup(t, Options{}, stream(`{"candidates":[{"content":{"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(default_api.lookup(q=))","index":0}]}`))
	_, err := b.client.Stream(t.Context(), simple(), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.ErrUnavailable ||
		err.Error() != "model provider: Gemini ended the answer with nothing in it: MALFORMED_FUNCTION_CALL (Malformed function call: print(default_api.lookup(q=)))" {
		t.Errorf("error = %v; want one naming MALFORMED_FUNCTION_CALL", err)
	}
}

func TestImageOut(t *testing.T) {
	b := setup(t, Options{}, stream(
		`{"candidates":[{"content":{"parts":[{"text":"Here:"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}],"role":"model"},"finishReason":"STOP","index":0}]}`,
	))
	var images []llm.Image
	turn, err := b.client.Stream(t.Context(), simple(), func(e llm.Event) {
		if e.Kind == llm.EventImage {
			images = append(images, *e.Image)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Here:" {
		t.Errorf("text = %q", turn.Text)
	}
	if len(images) != 1 || images[0] != (llm.Image{MIMEType: "image/png", Data: "iVBORw0KGgo="}) {
		t.Errorf("images = %+v, want the PNG as an image event", images)
	}
}

func TestRetries(t *testing.T) {
	quota := `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`
	b := setup(t, Options{},
		refuse(429, quota),
		llmtest.Reset,
		refuse(503, googleError(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), "Retry-After", "1"),
		hello,
	)
	b.client.ep.Retry.MaxTries = 4
	var c llmtest.Recorder
	turn, err := b.client.Stream(t.Context(), simple(), c.Emit)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Hello!" || turn.Retries != 3 || b.fake.Tries() != 4 {
		t.Errorf("text %q after %d retries, %d tries; want Hello! after 3 retries", turn.Text, turn.Retries, b.fake.Tries())
	}
	if len(b.waits) != 3 || b.waits[0] != 7*time.Second || b.waits[1] < 500*time.Millisecond || b.waits[1] > time.Second || b.waits[2] != time.Second {
		t.Errorf("waits = %v, want [7s (RetryInfo), 500ms..1s (backoff), 1s (Retry-After)]", b.waits)
	}
	var kinds []llm.ErrorKind
	for _, e := range c.Events {
		if e.Kind == llm.EventRetry {
			kinds = append(kinds, e.Retry.Kind)
		}
	}
	if diff := cmp.Diff([]llm.ErrorKind{llm.ErrRateLimited, llm.ErrNetwork, llm.ErrUnavailable}, kinds); diff != "" {
		t.Errorf("retry events (-want +got):\n%s", diff)
	}
	log := b.log.String()
	if strings.Count(log, `msg="model request failed, retrying"`) != 3 || !strings.Contains(log, "provider=google") {
		t.Errorf("log does not warn three times:\n%s", log)
	}
	llmtest.CheckClean(t, "log", log, testKey, "secret prompt")
}

func TestStreamCut(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{
			name:    "connection ends",
			handler: stream(textChunk("Partial ans", "")),
			want:    "model provider: the answer from Google broke off: the stream ended before a finishReason",
		},
		{
			name:    "error chunk",
			handler: stream(textChunk("Partial ans", ""), googleError(503, "UNAVAILABLE", "The model is overloaded.")),
			want:    "model provider: the answer from Google broke off: Google is unavailable or overloaded: The model is overloaded. (HTTP 503)",
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
		b := setup(t, Options{}, stream(), hello)
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		if err != nil || turn.Text != "Hello!" || turn.Retries != 1 {
			t.Fatalf("turn %+v, err %v; want Hello! after one retry", turn, err)
		}
	})
}

func TestRefusals(t *testing.T) {
	badKey := `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`
	tests := []struct {
		name    string
		handler http.HandlerFunc
		kind    llm.ErrorKind
		want    string
	}{
		{
			name: "bad key", handler: refuse(400, badKey), kind: llm.ErrAuth,
			want: "model provider: Google refused the API key: API key not valid. Please pass a valid API key. (HTTP 400)",
		},
		{
			name: "key echoed back is redacted", kind: llm.ErrAuth,
			handler: refuse(403, googleError(403, "PERMISSION_DENIED", "Key "+testKey+" is not allowed")),
			want:    "model provider: Google refused the API key: Key [redacted] is not allowed (HTTP 403)",
		},
		{
			name: "unknown model", kind: llm.ErrModelNotFound,
			handler: refuse(404, googleError(404, "NOT_FOUND", "models/gemini-2.5-flash is not found for API version v1beta, or is not supported for generateContent.")),
			want:    `model provider: Google has no model "gemini-2.5-flash": models/gemini-2.5-flash is not found for API version v1beta, or is not supported for generateContent. (HTTP 404)`,
		},
		{
			name: "prompt too long", kind: llm.ErrContextLength,
			handler: refuse(400, googleError(400, "INVALID_ARGUMENT", "The input token count (1248576) exceeds the maximum number of tokens allowed (1048576).")),
			want:    `model provider: the conversation is too long for "gemini-2.5-flash": The input token count (1248576) exceeds the maximum number of tokens allowed (1048576). (HTTP 400)`,
		},
		{
			name: "bad request, as a list", kind: llm.ErrBadRequest,
			handler: refuse(400, `[{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"foo\": Cannot find field.","status":"INVALID_ARGUMENT"}}]`),
			want:    `model provider: Google rejected the request: Invalid JSON payload received. Unknown name "foo": Cannot find field. (HTTP 400)`,
		},
		{
			name: "location not supported", kind: llm.ErrBadRequest,
			handler: refuse(400, googleError(400, "FAILED_PRECONDITION", "User location is not supported for the API use.")),
			want:    "model provider: Google rejected the request: User location is not supported for the API use. (HTTP 400)",
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
			stream(textChunk("Hm", ""))(w, r)
			<-r.Context().Done()
		})
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		llmtest.CheckFailure(t, turn, err, llmtest.Failure{Kind: llm.ErrStreamCut, Contains: "idle timeout (100ms)", Text: "Hm"})
	})
	t.Run("no answer", func(t *testing.T) {
		b := setup(t, Options{IdleTimeout: 100 * time.Millisecond, MaxTries: 2}, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		llmtest.CheckFailure(t, turn, err, llmtest.Failure{Kind: llm.ErrNetwork, Contains: "idle timeout"})
		if turn.Retries != 1 {
			t.Errorf("%d retries, want 1: a request with no answer is retried", turn.Retries)
		}
	})
}

func TestCancel(t *testing.T) {
	b := setup(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		stream(textChunk("Once upon", ""))(w, r)
		<-r.Context().Done()
	})
	llmtest.CheckCancel(t, b.client, simple(), b.fake.Tries, "Once upon")
}

func TestURL(t *testing.T) {
	tests := []struct{ base, model, want string }{
		{"", "gemini-2.5-flash", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{"https://proxy.example/google/", "gemini-2.5-pro", "https://proxy.example/google/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"https://proxy.example/v1", "models/gemini-2.5-pro", "https://proxy.example/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"https://proxy.example/v1alpha", "tunedModels/mine", "https://proxy.example/v1alpha/tunedModels/mine:streamGenerateContent?alt=sse"},
	}
	for _, tt := range tests {
		if got := New(Options{BaseURL: tt.base}).url(tt.model); got != tt.want {
			t.Errorf("BaseURL %q, model %q: url = %q, want %q", tt.base, tt.model, got, tt.want)
		}
	}
}

// CheckParam takes what generationConfig maps (seed and response_format
// included) and refuses what the endpoint drops or Relay does not send;
// CheckStrict refuses a function's strict true, which Gemini has no place for.
func TestCheckParam(t *testing.T) {
	c := New(Options{DropParams: []string{"topP"}})
	for name, want := range map[string]bool{"temperature": true, "max_tokens": true, "stop": true, "seed": true, "frequency_penalty": false} {
		if err := c.CheckParam(name, 1); (err == nil) != want {
			t.Errorf("CheckParam(%s) = %v; want accepted %v", name, err, want)
		}
	}
	if c.CheckParam("top_p", 0.5) == nil {
		t.Errorf("a parameter whose field is dropped was accepted")
	}
	if err := New(Options{AddParams: map[string]any{"generationConfig": map[string]any{"temperature": 1}}}).CheckParam("temperature", 0.5); err == nil {
		t.Errorf("a parameter the endpoint sets was accepted")
	}
	schema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "w", "schema": map[string]any{"type": "object"}}}
	if err := c.CheckParam("response_format", schema); err != nil {
		t.Errorf("json_schema: %v", err)
	}
	if c.CheckStrict(true) == nil || c.CheckStrict(false) != nil {
		t.Errorf("strict: true must be refused, false accepted")
	}
}
