package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/retry"
)

func TestMergeParams(t *testing.T) {
	tests := []struct {
		name string
		base string
		add  map[string]any
		drop []string
		want string
	}{
		{
			name: "stream parameters are appended",
			base: `{"model":"m","messages":[]}`,
			want: `{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "bytes of the rest are kept, spacing and escapes included",
			base: "{ \"model\" : \"a\\u003cb\" ,\n\"messages\":[{\"content\":\"}],\\\"{\"}], \"n\": -1.5e3, \"x\":null}",
			add:  map[string]any{"n": 2},
			want: `{"model":"a\u003cb","messages":[{"content":"}],\"{"}],"n":2,"x":null,"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "added keys in order, without HTML escaping",
			base: `{"model":"m"}`,
			add:  map[string]any{"z": "<&>", "a": map[string]any{"k": []int{1}}},
			drop: []string{"stream_options"},
			want: `{"model":"m","stream":true,"a":{"k":[1]},"z":"<&>"}`,
		},
		{
			name: "drop wins over add",
			base: `{"model":"m","top_p":1}`,
			add:  map[string]any{"top_p": 0.5, "seed": 1},
			drop: []string{"top_p", "seed", "stream"},
			want: `{"model":"m"}`, // stream_options is refused without a stream
		},
		{
			name: "stream turned off",
			base: `{"model":"m"}`,
			add:  map[string]any{"stream": false},
			want: `{"model":"m","stream":false}`,
		},
		{
			name: "empty object",
			base: `{}`,
			drop: []string{"stream_options"},
			want: `{"stream":true}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mergeParams([]byte(tt.base), tt.add, tt.drop)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`[1]`, `{"a":`, ``} {
		if _, err := mergeParams([]byte(bad), nil, nil); err == nil {
			t.Errorf("mergeParams(%q) did not fail", bad)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "-4"}, 0},
		{map[string]string{"Retry-After": "3", "Retry-After-Ms": "1250"}, 1250 * time.Millisecond},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := retry.After(h, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := New(Options{BackoffBase: time.Second, MaxRetryWait: 5 * time.Second})
	for n, max := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		for range 50 {
			if d := c.ep.Retry.Backoff(n + 1); d < max/2 || d > max {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, max/2, max)
			}
		}
	}
	if d := c.ep.Retry.Backoff(1001); d < 2500*time.Millisecond || d > 5*time.Second {
		t.Errorf("backoff(1000) = %v", d)
	}
}

// A forced function is OpenAI's own tool_choice object; a /v1 client's
// parameters are sent as they are, unless the endpoint drops them, and its
// functions' strict always.
func TestClientChoices(t *testing.T) {
	c := New(Options{DropParams: []string{"seed"}})
	req := &llm.Request{Model: "gpt-4o", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools:      []llm.FunctionTool{{Function: llm.Function{Name: "get_weather"}}},
		ToolChoice: "required", ToolFunction: "get_weather",
		Params: map[string]any{"response_format": map[string]any{"type": "json_object"}, "seed": 7}}
	body, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, `"response_format":{"type":"json_object"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
	if strings.Contains(string(body), `"seed"`) || c.CheckParam("seed", 7) == nil || c.CheckParam("response_format", nil) != nil {
		t.Errorf("a dropped parameter must be refused by CheckParam, others accepted")
	}
	if c.CheckStrict(true) != nil || c.CheckStrict(false) != nil {
		t.Errorf("a function's strict is sent as it is: CheckStrict must accept it")
	}
}

// Calls made through another provider may have ids longer than OpenAI takes
// (40 characters; vLLM writes 46): a conversation continued with an OpenAI
// agent sends them shortened, the call and its result alike, and the
// request's own messages are left as they were.
func TestLongToolCallIDs(t *testing.T) {
	const vllm = "chatcmpl-tool-0123456789abcdef0123456789abcdef"
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "What is the weather?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: vllm, Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{}`}},
			{ID: "call_short", Type: "function", Function: llm.FunctionCall{Name: "get_time", Arguments: `{}`}}}},
		{Role: llm.RoleTool, ToolCallID: vllm, Content: "Sunny."},
		{Role: llm.RoleTool, ToolCallID: "call_short", Content: "Noon."},
		{Role: llm.RoleUser, Content: "And tomorrow?"},
	}
	body, err := New(Options{}).Body(&llm.Request{Model: "gpt-4o", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	calls, results := sent.Messages[1].ToolCalls, []string{sent.Messages[2].ToolCallID, sent.Messages[3].ToolCallID}
	if len(calls) != 2 || len(calls[0].ID) > 40 || calls[0].ID != results[0] || calls[1].ID != "call_short" || results[1] != "call_short" {
		t.Errorf("ids sent: calls %+v, results %q\n%s", calls, results, body)
	}
	if msgs[1].ToolCalls[0].ID != vllm || msgs[2].ToolCallID != vllm {
		t.Errorf("the request's messages were changed: %+v", msgs[1:3])
	}
}
