package turn_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/anthropic"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/turn"
)

// anthropicEvent is one server-sent event as Anthropic writes it.
func anthropicEvent(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

// With extended thinking on, Anthropic answers 400 to a tool loop whose last
// assistant message does not start with the thinking that led to its tool
// calls; the turn keeps that thinking on the message and the client sends it
// back first, signature and all.
func TestRunSendsAnthropicThinkingBack(t *testing.T) {
	const usage = `{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}`
	fake := llmtest.NewProvider(t, func(r *http.Request) bool { return r.URL.Path == "/v1/messages" },
		llmtest.Stream("text/event-stream",
			anthropicEvent("message_start", usage),
			anthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
			anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I should add 2 and 3."}}`),
			anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"ErUBCkYIBxgCIkB"}}`),
			anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
			anthropicEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"sum","input":{}}}`),
			anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":2,\"b\":3}"}}`),
			anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":1}`),
			anthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`),
			anthropicEvent("message_stop", `{"type":"message_stop"}`),
		),
		llmtest.Stream("text/event-stream",
			anthropicEvent("message_start", usage),
			anthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The sum is 5."}}`),
			anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
			anthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`),
			anthropicEvent("message_stop", `{"type":"message_stop"}`),
		),
	)
	model := anthropic.New(anthropic.Options{BaseURL: fake.URL, APIKey: "sk-ant-test-0123456789",
		AddParams: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}})
	req := &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Content: "What is 2+3?"}},
		Tools:      []llm.FunctionTool{{Function: llm.Function{Name: "sum", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`)}}},
		ToolChoice: llm.ToolChoiceAuto}
	out, err := turn.Run(t.Context(), req, turn.Options{Model: model, Tools: &tools{}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "The sum is 5." || len(out.Tools) != 1 || out.Tools[0].Result != "5" {
		t.Fatalf("outcome %+v", out)
	}
	var second struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(fake.Body(1), &second); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range second.Messages {
		for _, c := range m.Content {
			got = append(got, m.Role+" "+string(c))
		}
	}
	want := []string{
		`user {"type":"text","text":"What is 2+3?"}`,
		`assistant {"type":"thinking","thinking":"I should add 2 and 3.","signature":"ErUBCkYIBxgCIkB"}`,
		`assistant {"type":"tool_use","id":"toolu_1","name":"sum","input":{"a":2,"b":3}}`,
		`user {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"5"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second request's content blocks (-want +got):\n%s", diff)
	}
}
