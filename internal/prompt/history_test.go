package prompt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/relay-ai/relay/internal/llm"
)

func TestForeignCalls(t *testing.T) {
	has := func(name string) bool { return name == "mine" }
	call := func(id, name string) llm.ToolCall {
		return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: `{"q":1}`}}
	}
	for _, tt := range []struct {
		name     string
		in, want []llm.Message
	}{
		{
			name: "only calls the agent has",
			in: []llm.Message{
				{Role: llm.RoleUser, Content: "hi"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("1", "mine")}},
				{Role: llm.RoleTool, ToolCallID: "1", Content: "r"},
			},
			want: []llm.Message{
				{Role: llm.RoleUser, Content: "hi"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("1", "mine")}},
				{Role: llm.RoleTool, ToolCallID: "1", Content: "r"},
			},
		},
		{
			name: "a foreign call beside one of the agent's",
			in: []llm.Message{
				{Role: llm.RoleUser, Content: "hi"},
				{Role: llm.RoleAssistant, Content: "Looking.", ToolCalls: []llm.ToolCall{call("1", "theirs"), call("2", "mine")}},
				{Role: llm.RoleTool, ToolCallID: "1", Content: "r1", IsError: true},
				{Role: llm.RoleTool, ToolCallID: "2", Content: "r2"},
				{Role: llm.RoleAssistant, Content: "Done."},
			},
			want: []llm.Message{
				{Role: llm.RoleUser, Content: "hi"},
				{Role: llm.RoleAssistant, Content: "Looking.\n\n[Called the tool theirs with {\"q\":1}]\n\n[Error from theirs]\nr1", ToolCalls: []llm.ToolCall{call("2", "mine")}},
				{Role: llm.RoleTool, ToolCallID: "2", Content: "r2"},
				{Role: llm.RoleAssistant, Content: "Done."},
			},
		},
		{
			name: "only foreign calls",
			in: []llm.Message{
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("1", "theirs"), call("2", "other")}},
				{Role: llm.RoleTool, ToolCallID: "1", Content: "r1"},
				{Role: llm.RoleTool, ToolCallID: "2", Content: "r2"},
			},
			want: []llm.Message{
				{Role: llm.RoleAssistant, Content: "[Called the tool theirs with {\"q\":1}]\n\n[Called the tool other with {\"q\":1}]\n\n[Result of theirs]\nr1\n\n[Result of other]\nr2"},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]llm.Message(nil), tt.in...)
			got := ForeignCalls(in, has)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.in, in, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
		})
	}
}

// Buffer writes one line per message that says something: the user's, the
// assistant's text (its tool calls only name the results), and each result
// with its tool's name; system messages are left out.
func TestBuffer(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "Write it"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Function: llm.FunctionCall{Name: "search", Arguments: `{}`}}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "two hits"},
		{Role: llm.RoleAssistant, Content: "A's draft"},
	}
	want := "Human: Write it\nTool: search, two hits\nAI: A's draft"
	if got := Buffer(msgs); got != want {
		t.Errorf("Buffer = %q, want %q", got, want)
	}
	if got := Buffer(nil); got != "" {
		t.Errorf("Buffer(nil) = %q, want empty", got)
	}
}
