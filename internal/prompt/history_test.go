package prompt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestForeignCalls(t *testing.T) {
	has := func(name string) bool { return name == "mine" }
	call := func(id, name string) ToolCall {
		return ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: name, Arguments: `{"q":1}`}}
	}
	for _, tt := range []struct {
		name     string
		in, want []Message
	}{
		{
			name: "only calls the agent has",
			in: []Message{
				{Role: RoleUser, Content: "hi"},
				{Role: RoleAssistant, ToolCalls: []ToolCall{call("1", "mine")}},
				{Role: RoleTool, ToolCallID: "1", Content: "r"},
			},
			want: []Message{
				{Role: RoleUser, Content: "hi"},
				{Role: RoleAssistant, ToolCalls: []ToolCall{call("1", "mine")}},
				{Role: RoleTool, ToolCallID: "1", Content: "r"},
			},
		},
		{
			name: "a foreign call beside one of the agent's",
			in: []Message{
				{Role: RoleUser, Content: "hi"},
				{Role: RoleAssistant, Content: "Looking.", ToolCalls: []ToolCall{call("1", "theirs"), call("2", "mine")}},
				{Role: RoleTool, ToolCallID: "1", Content: "r1", IsError: true},
				{Role: RoleTool, ToolCallID: "2", Content: "r2"},
				{Role: RoleAssistant, Content: "Done."},
			},
			want: []Message{
				{Role: RoleUser, Content: "hi"},
				{Role: RoleAssistant, Content: "Looking.\n\n[Called the tool theirs with {\"q\":1}]\n\n[Error from theirs]\nr1", ToolCalls: []ToolCall{call("2", "mine")}},
				{Role: RoleTool, ToolCallID: "2", Content: "r2"},
				{Role: RoleAssistant, Content: "Done."},
			},
		},
		{
			name: "only foreign calls",
			in: []Message{
				{Role: RoleAssistant, ToolCalls: []ToolCall{call("1", "theirs"), call("2", "other")}},
				{Role: RoleTool, ToolCallID: "1", Content: "r1"},
				{Role: RoleTool, ToolCallID: "2", Content: "r2"},
			},
			want: []Message{
				{Role: RoleAssistant, Content: "[Called the tool theirs with {\"q\":1}]\n\n[Called the tool other with {\"q\":1}]\n\n[Result of theirs]\nr1\n\n[Result of other]\nr2"},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Message(nil), tt.in...)
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
