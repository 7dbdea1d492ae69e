package token_test

import (
	"encoding/json"
	"testing"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/token"
)

// The expected counts below are published numbers, not outputs of this code:
// the texts are OpenAI's cookbook "How to count tokens with tiktoken"
// (sections 3 and 5, cl100k_base) and tiktoken's reference vectors as the Go
// port's own tests carry them (o200k_base); the chat and tool examples are
// the cookbook's sections 6 and 7, whose counts it checked against
// usage.prompt_tokens of the OpenAI API.

func TestTextCounts(t *testing.T) {
	cs := token.NewCounters(0)
	tests := []struct {
		model string
		text  string
		want  int
	}{
		{"gpt-4", "tiktoken is great!", 6},
		{"gpt-4", "antidisestablishmentarianism", 6},
		{"gpt-4", "2 + 2 = 4", 7},
		{"gpt-4", "お誕生日おめでとう", 9},
		{"gpt-3.5-turbo", "hello world", 2},
		{"gpt-3.5-turbo", "hello   world", 3},
		{"gpt-4", "supercalifragilistic", 7},
		{"gpt-4", "We know what we are, but know not what we may be.", 14},
		{"gpt-4o", "hello world", 2},
		{"gpt-4o", "hello   world", 3},
		{"gpt-4o", "'RE", 2},
		{"gpt-4o", "supercalifragilistic", 6},
		{"gpt-4o-mini", "We know what we are, but know not what we may be.", 14},
		{"gpt-4o", "", 0},
	}
	for _, tt := range tests {
		if got := cs.For(tt.model).Text(tt.text); got != tt.want {
			t.Errorf("%s %q: %d tokens, want %d", tt.model, tt.text, got, tt.want)
		}
	}
}

// cookbookMessages is the cookbook's chat example (section 6).
var cookbookMessages = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
	{Role: llm.RoleSystem, Name: "example_user", Content: "New synergies will help drive top-line growth."},
	{Role: llm.RoleSystem, Name: "example_assistant", Content: "Things working well together will increase revenue."},
	{Role: llm.RoleSystem, Name: "example_user", Content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
	{Role: llm.RoleSystem, Name: "example_assistant", Content: "Let's talk later when we're less busy about how to do better."},
	{Role: llm.RoleUser, Content: "This late pivot means we don't have time to boil the ocean for the client deliverable."},
}

func TestChatCounts(t *testing.T) {
	cs := token.NewCounters(0)
	for model, want := range map[string]int{"gpt-3.5-turbo": 129, "gpt-4-0613": 129, "gpt-4": 129, "gpt-4o": 124, "gpt-4o-mini": 124} {
		c := cs.For(model)
		if got := c.Messages(cookbookMessages); got != want {
			t.Errorf("%s: %d prompt tokens, want %d", model, got, want)
		}
		// Counted again, from the cache.
		if got := c.Messages(cookbookMessages); got != want {
			t.Errorf("%s (cached): %d prompt tokens, want %d", model, got, want)
		}
	}
}

func TestToolCounts(t *testing.T) {
	cs := token.NewCounters(0)
	tools := []llm.FunctionTool{{Type: "function", Function: llm.Function{
		Name:        "get_current_weather",
		Description: "Get the current weather in a given location",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},` +
			`"unit":{"type":"string","description":"The unit of temperature to return","enum":["celsius","fahrenheit"]}},` +
			`"required":["location"]}`),
	}}}
	req := &llm.Request{Tools: tools, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a helpful assistant that can answer to questions about the weather."},
		{Role: llm.RoleUser, Content: "What's the weather like in San Francisco?"},
	}}
	for model, want := range map[string]int{"gpt-3.5-turbo": 105, "gpt-4": 105, "gpt-4o": 101, "gpt-4o-mini": 101} {
		if got := cs.For(model).Request(req); got != want {
			t.Errorf("%s: %d prompt tokens, want %d", model, got, want)
		}
	}
}

func TestEncodingFor(t *testing.T) {
	tests := []struct {
		model string
		enc   token.Encoding
		exact bool
	}{
		{"gpt-4o", token.O200k, true},
		{"gpt-4o-mini-2024-07-18", token.O200k, true},
		{"gpt-4.1-nano", token.O200k, true},
		{"gpt-5", token.O200k, true},
		{"o3-mini", token.O200k, true},
		{"openai/gpt-4o", token.O200k, true},
		{"GPT-4-turbo", token.Cl100k, true},
		{"gpt-3.5-turbo", token.Cl100k, true},
		{"gpt-35-turbo", token.Cl100k, true},
		{"claude-sonnet-4-5", token.Cl100k, false},
		{"gemini-2.5-pro", token.Cl100k, false},
		{"llama3.1:8b", token.Cl100k, false},
	}
	for _, tt := range tests {
		enc, exact := token.EncodingFor(tt.model)
		if enc != tt.enc || exact != tt.exact {
			t.Errorf("EncodingFor(%q) = %s, %v; want %s, %v", tt.model, enc, exact, tt.enc, tt.exact)
		}
	}
}

// Models whose tokenizer Relay does not hold are counted with cl100k_base and
// a fifth more, rounded up.
func TestEstimate(t *testing.T) {
	cs := token.NewCounters(0)
	exact := cs.For("gpt-4").Message(&cookbookMessages[5])
	est := cs.For("claude-sonnet-4-5").Message(&cookbookMessages[5])
	if want := exact + (exact+4)/5; est != want {
		t.Errorf("estimate %d, want %d (cl100k_base %d + 20%%)", est, want, exact)
	}
	if m := cs.For("claude-sonnet-4-5").Method(); m != "estimate (cl100k_base + 20%)" {
		t.Errorf("Method() = %q", m)
	}
}

// Tool calls and results count their texts; an image counts as a
// high-detail 1024×1024 image.
func TestToolCallAndImageCounts(t *testing.T) {
	c := token.NewCounters(0).For("gpt-4o")
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}
	want := 3 + c.Text("assistant") + 3 + c.Text("call_1") + c.Text("get_weather") + c.Text(`{"city":"Paris"}`)
	if got := c.Message(&call); got != want {
		t.Errorf("tool call message: %d, want %d", got, want)
	}
	result := llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "18°C and sunny"}
	if got, want := c.Message(&result), 3+c.Text("tool")+c.Text("18°C and sunny")+c.Text("call_1"); got != want {
		t.Errorf("tool message: %d, want %d", got, want)
	}
	img := llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartText, Text: "What is this?"}, {Type: llm.PartImage, MIMEType: "image/png", Data: "AAAA"}}}
	if got, want := c.Message(&img), 3+c.Text("user")+c.Text("What is this?")+765; got != want {
		t.Errorf("image message: %d, want %d", got, want)
	}
}

// A full cache starts over instead of growing.
func TestCacheBound(t *testing.T) {
	cs := token.NewCounters(2)
	c := cs.For("gpt-4o")
	for i := range cookbookMessages {
		c.Message(&cookbookMessages[i])
	}
	if got := c.Messages(cookbookMessages); got != 124 {
		t.Errorf("%d tokens after the cache started over, want 124", got)
	}
}
