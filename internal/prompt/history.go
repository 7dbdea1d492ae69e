package prompt

import (
	"fmt"
	"strings"

	"github.com/relay-ai/relay/internal/llm"
)

// ForeignCalls rewrites the tool calls in msgs that name a tool the receiving
// agent does not have (has reports which it has) as text, so that every
// provider can read the conversation: another agent's calls in a handoff, or
// an earlier turn's calls to a tool the agent has lost. Such a call becomes a
// paragraph of its assistant message's text, naming the tool, its arguments
// and the result that answered it, and the tool message of that result is
// dropped; calls the agent has stay as they are. Providers refuse a tool call
// or result for a tool the request does not define (Anthropic) or read it as
// a call the model may repeat. msgs is not changed; a slice with nothing to
// rewrite is returned as it is (docs/api.md "Conversations").
func ForeignCalls(msgs []llm.Message, has func(name string) bool) []llm.Message {
	foreign := map[string]int{}  // call id → index in out of its assistant message
	names := map[string]string{} // call id → tool name
	var out []llm.Message
	for i := range msgs {
		m := msgs[i]
		if m.Role == llm.RoleTool {
			if at, ok := foreign[m.ToolCallID]; ok {
				out[at].Content = strings.TrimSpace(out[at].Content + "\n\n" + foreignResult(names[m.ToolCallID], m))
				continue
			}
		}
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			var kept []llm.ToolCall
			for _, c := range m.ToolCalls {
				if has(c.Function.Name) {
					kept = append(kept, c)
				}
			}
			if len(kept) < len(m.ToolCalls) {
				if out == nil {
					out = append(make([]llm.Message, 0, len(msgs)), msgs[:i]...)
				}
				at := len(out)
				for _, c := range m.ToolCalls {
					if !has(c.Function.Name) {
						foreign[c.ID], names[c.ID] = at, c.Function.Name
						m.Content = strings.TrimSpace(m.Content + "\n\n" + foreignCall(c))
					}
				}
				m.ToolCalls = kept
				out = append(out, m)
				continue
			}
		}
		if out != nil {
			out = append(out, m)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// foreignCall is a call rewritten as text.
func foreignCall(c llm.ToolCall) string {
	return "[Called the tool " + c.Function.Name + " with " + strings.TrimSpace(c.Function.Arguments) + "]"
}

// foreignResult is the result of a rewritten call of the tool name as text.
func foreignResult(name string, m llm.Message) string {
	label := "[Result of " + name + "]"
	if m.IsError {
		label = "[Error from " + name + "]"
	}
	return label + "\n" + m.Content
}

// Buffer renders messages as text, one line each (docs/agents.md "Edges"):
// "Human: …" for a user message, "AI: …" for an assistant's text, "Tool:
// <name>, <result>" for a tool's result. It is how an edge's prompt gives one
// agent what others did, and how dropped messages reach the summary model.
func Buffer(msgs []llm.Message) string {
	names := map[string]string{}
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			fmt.Fprintf(&b, "Human: %s\n", m.Content)
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
			}
			if m.Content != "" {
				fmt.Fprintf(&b, "AI: %s\n", m.Content)
			}
		case llm.RoleTool:
			fmt.Fprintf(&b, "Tool: %s, %s\n", names[m.ToolCallID], m.Content)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
