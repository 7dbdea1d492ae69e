package prompt

import (
	"encoding/json"
	"fmt"

	"github.com/relay-ai/relay/internal/llm"
)

// Build returns the chat-completions request for in: the system message of
// [SystemMessage] (left out when empty), then in.Messages; the tools in
// OpenAI function format, in the agent's order, a name listed twice kept
// once; tool_choice "auto" when there are tools; and the agent's model
// parameters. It fails only when a tool's parameters or a model parameter
// cannot be written as JSON.
func Build(in Input) (*llm.Request, error) {
	req := &llm.Request{Model: in.Agent.Model, Params: in.Agent.ModelParameters}
	for k, v := range in.Agent.ModelParameters {
		if llm.ReservedParam(k) {
			continue
		}
		if err := checkParam(v); err != nil {
			return nil, fmt.Errorf("building the request for agent %q: model parameter %q: %w", in.AgentID, k, err)
		}
	}
	sys := SystemMessage(in)
	n := len(in.Messages)
	if sys != "" {
		n++
	}
	req.Messages = make([]llm.Message, 0, n)
	if sys != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: sys})
	}
	req.Messages = append(req.Messages, in.Messages...)

	if len(in.Tools) == 0 {
		return req, nil
	}
	tools, err := functionTools(in.Tools)
	if err != nil {
		return nil, fmt.Errorf("building the request for agent %q: %w", in.AgentID, err)
	}
	req.Tools, req.ToolChoice = tools, llm.ToolChoiceAuto
	return req, nil
}

// checkParam reports whether a model parameter can be written, without
// writing it for the common scalar kinds.
func checkParam(v any) error {
	switch v := v.(type) {
	case nil, string, bool, int, int64, int32, uint64:
		return nil
	case float64:
		_, err := llm.AppendJSONValue(nil, v)
		return err
	}
	_, err := llm.AppendJSONValue(make([]byte, 0, 64), v)
	return err
}

// functionTools turns tools into the tools array. Parameters that are not
// already JSON are written once, into one shared buffer.
func functionTools(tools []Tool) ([]llm.FunctionTool, error) {
	out := make([]llm.FunctionTool, 0, len(tools))
	var slab []byte
	for i := range tools {
		t := &tools[i]
		if dupTool(tools[:i], t.Name) {
			continue
		}
		f := llm.FunctionTool{Type: "function", Function: llm.Function{Name: t.Name, Description: t.Description}}
		switch p := t.Parameters.(type) {
		case nil:
			f.Function.Parameters = json.RawMessage(llm.EmptyObjectSchema)
		case Schema:
			f.Function.Parameters = p.JSON()
		case json.RawMessage:
			if len(p) == 0 {
				f.Function.Parameters = json.RawMessage(llm.EmptyObjectSchema)
				break
			}
			if !json.Valid(p) {
				return nil, fmt.Errorf("parameters of tool %q are not valid JSON", t.Name)
			}
			f.Function.Parameters = p
		default:
			if slab == nil {
				slab = make([]byte, 0, 512*(len(tools)-i))
			}
			start := len(slab)
			var err error
			if slab, err = llm.AppendJSONValue(slab, p); err != nil {
				return nil, fmt.Errorf("parameters of tool %q: %w", t.Name, err)
			}
			f.Function.Parameters = json.RawMessage(slab[start:len(slab):len(slab)])
		}
		out = append(out, f)
	}
	return out, nil
}

// dupTool reports whether an earlier tool has the same name.
func dupTool(earlier []Tool, name string) bool {
	for i := range earlier {
		if earlier[i].Name == name {
			return true
		}
	}
	return false
}
