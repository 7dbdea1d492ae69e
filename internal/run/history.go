package run

import "github.com/relay-ai/relay/internal/llm"

// Replay turns a stored message into the messages a later turn of its
// conversation sends the model (docs/api.md "Conversations"): a user message
// as it was written, with its images; an answer as the model saw it being
// made — each model turn's text and tool calls as an assistant message,
// followed by one tool message per call with its result. Errors and the
// images a model produced are not sent again. Each provider's client writes
// these in its own format (tool_calls and tool messages, tool_use and
// tool_result blocks, function call and response parts).
func Replay(m *Message) []llm.Message {
	if m.Role != RoleAssistant {
		return []llm.Message{userMessage(m.Text, m.Parts)}
	}
	if !hasReplayParts(m.Parts) {
		if m.Text == "" {
			return nil
		}
		return []llm.Message{{Role: llm.RoleAssistant, Content: m.Text}}
	}
	var (
		out  []llm.Message
		turn *llm.Message // the assistant message being built
		who  string       // the agent whose turn it is
		recs []*Part      // its tool calls, in order
	)
	flush := func() {
		if turn == nil {
			return
		}
		out = append(out, *turn)
		for _, p := range recs {
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: p.Tool.ID, Content: p.Tool.Result, IsError: p.Tool.IsError})
		}
		turn, recs = nil, nil
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		switch {
		case p.Type == PartText && p.Text != "":
			// Text after tool calls is the model's next turn; text of another
			// agent is another agent's turn.
			if turn != nil && (len(recs) > 0 || who != p.AgentID) {
				flush()
			}
			if turn == nil {
				turn, who = &llm.Message{Role: llm.RoleAssistant}, p.AgentID
			} else if turn.Content != "" {
				// Two texts with no call between (an answer rebuilt from a
				// dead run's events, Streamed): joined as the answer's
				// text is, with a blank line.
				turn.Content += PartSep
			}
			turn.Content += p.Text
		case p.Type == PartToolCall && p.Tool != nil:
			// Calls of one model turn share its step; a new step or agent is
			// a new turn.
			if turn != nil && (who != p.AgentID || len(recs) > 0 && recs[len(recs)-1].Tool.Step != p.Tool.Step) {
				flush()
			}
			if turn == nil {
				turn, who = &llm.Message{Role: llm.RoleAssistant}, p.AgentID
			}
			turn.ToolCalls = append(turn.ToolCalls, llm.ToolCall{ID: p.Tool.ID, Type: "function", Function: llm.FunctionCall{Name: p.Tool.Name, Arguments: p.Tool.Arguments}})
			recs = append(recs, p)
		}
	}
	flush()
	return out
}

// hasReplayParts reports whether parts hold the answer's text or tool calls,
// which an answer saved before parts were kept, or one that failed before
// anything was said, does not.
func hasReplayParts(parts []Part) bool {
	for _, p := range parts {
		if p.Type == PartText && p.Text != "" || p.Type == PartToolCall && p.Tool != nil {
			return true
		}
	}
	return false
}
