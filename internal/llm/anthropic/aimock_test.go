package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// aimockFixtures drive aimock, a fake LLM server nobody here wrote, through
// its Anthropic Messages endpoint.
const aimockFixtures = `{"fixtures":[
 {"match":{"userMessage":"2+3","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"2+3","hasToolResult":true},"response":{"content":"The sum is 5."}},
 {"match":{"userMessage":"busy","sequenceIndex":0},"response":{"error":{"message":"Rate limited","type":"rate_limit_error"},"status":429,"retryAfter":2}},
 {"match":{"userMessage":"busy"},"response":{"content":"Free now."}},
 {"match":{"userMessage":"hello"},"response":{"content":"Hello from aimock, streamed in pieces."}}
]}`

func TestAimock(t *testing.T) {
	base := llmtest.StartAimock(t, aimockFixtures)
	c := New(Options{BaseURL: base, APIKey: testKey})
	var waits []time.Duration
	c.ep.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	sum := llm.FunctionTool{Function: llm.Function{
		Name: "get-sum__mcp__everything", Description: "Returns the sum of two numbers",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
	}}

	t.Run("text", func(t *testing.T) {
		var c2 llmtest.Recorder
		turn, err := c.Stream(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "hello"},
		}}, c2.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Text != "Hello from aimock, streamed in pieces." || turn.FinishReason != llm.FinishStop {
			t.Errorf("turn = %+v", turn)
		}
		var texts int
		for _, e := range c2.Events {
			if e.Kind == llm.EventText {
				texts++
			}
		}
		if texts == 0 {
			t.Error("no text events")
		}
	})

	t.Run("tool call and its result", func(t *testing.T) {
		req := &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "What is 2+3?"},
		}, Tools: []llm.FunctionTool{sum}, ToolChoice: llm.ToolChoiceAuto}
		llmtest.CheckSumRoundTrip(t, c, req, "The sum is 5.")
	})

	t.Run("rate limited, then retried", func(t *testing.T) {
		waits = nil
		turn, err := c.Stream(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "busy?"},
		}}, nil)
		if err != nil {
			var le *llm.Error
			errors.As(err, &le)
			t.Fatalf("err = %v (%+v)", err, le)
		}
		if turn.Text != "Free now." || turn.Retries != 1 || len(waits) != 1 || waits[0] != 2*time.Second {
			t.Errorf("turn %+v, waits %v; want Free now. after one retry waiting Retry-After's 2s", turn, waits)
		}
	})
}
