package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// thinkingAnswer is a streamed answer with extended thinking: a thinking
// block and its signature, a redacted_thinking block, text and a tool call.
var thinkingAnswer = stream(
	event("message_start", messageStart),
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
	event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants 2+3. "}}`),
	event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I will call <sum> & \"see\"."}}`),
	event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`),
	event("content_block_stop", blockStop0),
	event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}}`),
	event("content_block_stop", `{"type":"content_block_stop","index":1}`),
	event("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`),
	event("content_block_delta", textDelta(2, "Adding.")),
	event("content_block_stop", `{"type":"content_block_stop","index":2}`),
	event("content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01","name":"sum","input":{}}}`),
	event("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\":2,\"b\":3}"}}`),
	event("content_block_stop", `{"type":"content_block_stop","index":3}`),
	event("message_delta", messageDelta("tool_use", 40)),
	event("message_stop", messageStop),
)

func TestThinkingIsKeptAndSentBack(t *testing.T) {
	b := setup(t, Options{AddParams: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}}, thinkingAnswer, hello)
	req := simple()
	var rec llmtest.Recorder
	turn, err := b.client.Stream(t.Context(), req, rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range rec.Events {
		if ev.Kind == llm.EventText && ev.Text != "Adding." {
			t.Errorf("thinking passed on as text: %q", ev.Text)
		}
	}
	if turn.Text != "Adding." || len(turn.ToolCalls) != 1 {
		t.Fatalf("turn = %+v", turn)
	}
	wantThinking := []map[string]any{
		{"type": "thinking", "thinking": `The user wants 2+3. I will call <sum> & "see".`, "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
		{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
	}
	var gotThinking []map[string]any
	if err := json.Unmarshal(turn.Thinking, &gotThinking); err != nil {
		t.Fatalf("Turn.Thinking %s: %v", turn.Thinking, err)
	}
	if diff := cmp.Diff(wantThinking, gotThinking); diff != "" {
		t.Errorf("Turn.Thinking (-want +got):\n%s", diff)
	}

	// The next request carries the turn as the agent loop keeps it.
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: turn.Text, ToolCalls: turn.ToolCalls, Thinking: turn.Thinking},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_01", Content: "5"},
	)
	if _, err := b.client.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b.fake.Body(1), &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 3 || sent.Messages[1].Role != "assistant" {
		t.Fatalf("messages sent: %s", b.fake.Body(1))
	}
	var types []string
	for _, c := range sent.Messages[1].Content {
		var blk struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(c, &blk)
		types = append(types, blk.Type)
	}
	if diff := cmp.Diff([]string{"thinking", "redacted_thinking", "text", "tool_use"}, types); diff != "" {
		t.Errorf("assistant content blocks (-want +got):\n%s", diff)
	}
	// The thinking goes back as it came: same text and signature, the
	// text's <, > and & not escaped.
	want := `{"type":"thinking","thinking":"The user wants 2+3. I will call <sum> & \"see\".","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}`
	if got := string(sent.Messages[1].Content[0]); got != want {
		t.Errorf("thinking block sent\n got %s\nwant %s", got, want)
	}
	if got, want := string(sent.Messages[1].Content[1]), `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}`; got != want {
		t.Errorf("redacted thinking block sent\n got %s\nwant %s", got, want)
	}
}

func TestThinkingWithoutTextKeepsEmptyField(t *testing.T) {
	// Claude 4 models may give a thinking block with its text omitted and
	// only a signature; the block goes back with "thinking":"".
	b := setup(t, Options{}, stream(
		event("message_start", messageStart),
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`),
		event("content_block_stop", blockStop0),
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"now","input":{}}}`),
		event("content_block_stop", `{"type":"content_block_stop","index":1}`),
		event("message_delta", messageDelta("tool_use", 5)),
		event("message_stop", messageStop),
	), hello)
	req := simple()
	turn, err := b.client.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: turn.ToolCalls, Thinking: turn.Thinking},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_9", Content: "noon"},
	)
	if _, err := b.client.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"SIG"},{"type":"tool_use","id":"toolu_9","name":"now","input":{}}]}`
	if !bytes.Contains(b.fake.Body(1), []byte(want)) {
		t.Errorf("body sent lacks %s:\n%s", want, b.fake.Body(1))
	}
}

func TestThinkingOfACutBlockIsNotKept(t *testing.T) {
	// A thinking block without content_block_stop is not whole; a turn
	// without thinking has none.
	b := setup(t, Options{}, hello)
	turn, err := b.client.Stream(t.Context(), simple(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Thinking != nil {
		t.Errorf("Turn.Thinking = %s, want none", turn.Thinking)
	}
	r := &reader{turn: &llm.Turn{}, blocks: map[int]*openBlock{}, thoughts: map[int]*thinkingBlock{}}
	r.thinking = append(r.thinking, &thinkingBlock{typ: "thinking"})
	r.Partial()
	if r.turn.Thinking != nil {
		t.Errorf("Turn.Thinking of an unfinished block = %s, want none", r.turn.Thinking)
	}
}

func TestStartBlockInput(t *testing.T) {
	toolStart := func(input string) string {
		return event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"add","input":`+input+`}}`)
	}
	inputDelta := event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":5}"}}`)
	tests := []struct {
		name   string
		events []string
		want   string
	}{
		// Some Anthropic-compatible servers give the input whole at the start.
		{"whole at the start", []string{toolStart(`{"a":1,"b":2}`)}, `{"a":1,"b":2}`},
		{"empty", []string{toolStart(`{}`)}, `{}`},
		{"null", []string{toolStart(`null`)}, `{}`},
		{"streamed", []string{toolStart(`{}`), inputDelta}, `{"a":5}`},
		{"deltas win over the start's input", []string{toolStart(`{"a":1}`), inputDelta}, `{"a":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append([]string{event("message_start", messageStart)}, tt.events...)
			events = append(events,
				event("content_block_stop", blockStop0),
				event("message_delta", messageDelta("tool_use", 5)),
				event("message_stop", messageStop),
			)
			b := setup(t, Options{}, stream(events...))
			var rec llmtest.Recorder
			turn, err := b.client.Stream(t.Context(), simple(), rec.Emit)
			if err != nil {
				t.Fatal(err)
			}
			if len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Function.Arguments != tt.want {
				t.Fatalf("tool calls = %+v, want arguments %s", turn.ToolCalls, tt.want)
			}
			var streamed string
			for _, ev := range rec.Kinds(llm.EventToolCallDelta) {
				streamed += ev.ToolCall.ArgumentsDelta
			}
			if streamed != tt.want {
				t.Errorf("streamed arguments %q, want %q", streamed, tt.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	refusal := func(text string) http.HandlerFunc {
		events := []string{event("message_start", messageStart)}
		if text != "" {
			events = append(events,
				event("content_block_start", textStart),
				event("content_block_delta", textDelta(0, text)),
				event("content_block_stop", blockStop0),
			)
		}
		return stream(append(events,
			event("message_delta", messageDelta("refusal", 3)),
			event("message_stop", messageStop),
		)...)
	}
	t.Run("nothing said", func(t *testing.T) {
		// Claude's classifiers stopped the answer before anything of it: an
		// error the user can read, not an empty answer, and not retried.
		b := setup(t, Options{}, refusal(""))
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		var le *llm.Error
		if !errors.As(err, &le) || le.Kind != llm.ErrFiltered || le.Retryable() {
			t.Fatalf("error = %#v, want an ErrFiltered llm.Error", err)
		}
		if want := "model provider: Anthropic declined to answer (stop_reason: refusal)"; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
		if b.fake.Tries() != 1 {
			t.Errorf("%d tries, want 1", b.fake.Tries())
		}
		if turn == nil || turn.FinishReason != llm.FinishFiltered || turn.Usage.CompletionTokens != 3 || turn.Sent == nil {
			t.Errorf("turn = %+v, want the filtered turn with its usage and body", turn)
		}
	})
	t.Run("after some text", func(t *testing.T) {
		b := setup(t, Options{}, refusal("I can help with part"))
		turn, err := b.client.Stream(t.Context(), simple(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Text != "I can help with part" || turn.FinishReason != llm.FinishFiltered {
			t.Errorf("turn = %+v, want the text to stand", turn)
		}
	})
}
