package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/wire"
)

// request is the body of POST /v1/messages, its fields in the order they are
// written. Every optional field is left out when empty, dropped, or replaced
// by AddParams.
type request struct {
	Model         string      `json:"model"`
	System        string      `json:"system,omitempty"`
	Messages      []message   `json:"messages"`
	Tools         []tool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice `json:"tool_choice,omitempty"`
	MaxTokens     any         `json:"max_tokens,omitempty"`
	Temperature   any         `json:"temperature,omitempty"`
	TopP          any         `json:"top_p,omitempty"`
	TopK          any         `json:"top_k,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Stream        bool        `json:"stream"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block of the Messages API: text, image, tool_use,
// tool_result, thinking or redacted_thinking.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *imageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []block         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Thinking is a thinking block's text, written even when empty.
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	// Data is a redacted_thinking block's encrypted thinking.
	Data string `json:"data,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
	// Name is the tool a "tool" choice forces.
	Name string `json:"name,omitempty"`
}

// emptySchema is the input schema of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// params maps the body's sampling fields to the model parameter names they are
// read from, OpenAI's first.
var params = []wire.Alias{
	{Field: "max_tokens", Names: []string{"max_tokens", "max_completion_tokens", "maxOutputTokens", "maxTokens"}},
	{Field: "temperature", Names: []string{"temperature"}},
	{Field: "top_p", Names: []string{"top_p", "topP"}},
	{Field: "top_k", Names: []string{"top_k", "topK"}},
	{Field: "stop_sequences", Names: []string{"stop", "stop_sequences", "stopSequences"}},
}

// Body returns the bytes Stream would send for req; see llm.Bodier.
func (c *Client) Body(req *llm.Request) ([]byte, error) { return c.body(req) }

// body writes the Messages API body for r: the request struct, then
// AddParams sorted by key. Strings are not HTML-escaped, so the body reads as
// the prompt does.
func (c *Client) body(r *llm.Request) ([]byte, error) {
	keep := func(field string) bool {
		_, added := c.add[field]
		return !added && !c.drop[field]
	}
	b := request{Model: r.Model, Stream: true}
	if keep("system") {
		b.System = wire.System(r.Messages)
	}
	b.Messages = c.messages(r.Messages)
	if len(r.Tools) > 0 && keep("tools") {
		for _, t := range r.Tools {
			schema := t.Function.Parameters
			if s := bytes.TrimSpace(schema); len(s) == 0 || string(s) == "null" {
				schema = emptySchema
			}
			b.Tools = append(b.Tools, tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
		}
		if keep("tool_choice") {
			b.ToolChoice = &toolChoice{Type: choice(r.ToolChoice)}
			if r.ToolFunction != "" {
				b.ToolChoice = &toolChoice{Type: "tool", Name: r.ToolFunction}
			}
		}
	}
	for _, p := range params {
		if !keep(p.Field) {
			continue
		}
		v, ok := wire.Param(r.Params, c.drop, p.Names...)
		switch p.Field {
		case "max_tokens":
			n, isInt := wire.Int(v)
			if !ok || !isInt || n <= 0 {
				n = DefaultMaxTokens
			}
			b.MaxTokens = n
		case "temperature":
			b.Temperature = v
		case "top_p":
			b.TopP = v
		case "top_k":
			b.TopK = v
		case "stop_sequences":
			b.StopSequences = wire.Strings(v)
		}
	}
	for _, k := range wire.Unmapped(r.Params, params) {
		c.ep.Log.Debug("model parameter not sent", "param", k)
	}
	out, err := wire.Marshal(b)
	if err != nil {
		return nil, err
	}
	return wire.AppendFields(out, c.add)
}

// CheckParam says whether a model parameter reaches Anthropic (llm.ParamChecker):
// those of params do, unless the endpoint drops them; seed and
// response_format (other than "text") have no place in the Messages API.
func (c *Client) CheckParam(name string, value any) error {
	if name == "response_format" {
		if m, ok := value.(map[string]any); ok && m["type"] == "text" {
			return nil
		}
		//lint:ignore ST1005 the message starts with a name, which keeps its capital.
		return errors.New("Anthropic's Messages API has no response_format (ask for JSON in the instructions)")
	}
	i := slices.IndexFunc(params, func(a wire.Alias) bool { return slices.Contains(a.Names, name) })
	if i < 0 {
		//lint:ignore ST1005 the message starts with a name, which keeps its capital.
		return fmt.Errorf("Anthropic's Messages API has no %s", name)
	}
	field := params[i].Field
	if c.drop[name] || c.drop[field] {
		return fmt.Errorf("the endpoint's dropParams removes %s", name)
	}
	if _, added := c.add[field]; added {
		return fmt.Errorf("the endpoint's addParams sets %s", field)
	}
	return nil
}

// CheckStrict says whether a function's strict flag reaches Anthropic
// (llm.ParamChecker): Relay writes Anthropic's tools without one, so strict
// true is refused and false, which asks for nothing, passes.
func (c *Client) CheckStrict(strict bool) error {
	if strict {
		//lint:ignore ST1005 the message starts with a name, which keeps its capital.
		return errors.New("Relay does not send strict to Anthropic")
	}
	return nil
}

// choice maps OpenAI's tool_choice onto Anthropic's tool_choice type.
func choice(openai string) string {
	switch openai {
	case "required":
		return "any"
	case "none":
		return "none"
	}
	return "auto"
}

// messages translates the conversation (system messages aside) into
// alternating user and assistant messages.
func (c *Client) messages(msgs []llm.Message) []message {
	var out []message
	add := func(role string, blocks ...block) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			last := &out[n-1]
			if blocks[0].Type == "tool_result" {
				// Tool results must lead their user message.
				at := 0
				for at < len(last.Content) && last.Content[at].Type == "tool_result" {
					at++
				}
				last.Content = slices.Insert(last.Content, at, blocks...)
				return
			}
			last.Content = append(last.Content, blocks...)
			return
		}
		out = append(out, message{Role: role, Content: blocks})
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleSystem:
		case llm.RoleAssistant:
			// Thinking leads the assistant message it came before, as
			// Anthropic requires of the turn that used tools.
			blocks := c.thinking(m)
			blocks = append(blocks, content(m)...)
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, block{Type: "tool_use", ID: toolUseID(tc.ID), Name: tc.Function.Name, Input: wire.Arguments(tc, c.ep.Log)})
			}
			add("assistant", blocks...)
		case llm.RoleTool:
			add("user", block{Type: "tool_result", ToolUseID: toolUseID(m.ToolCallID), Content: content(m), IsError: wire.ToolFailed(m)})
		default:
			add("user", content(m)...)
		}
	}
	return out
}

// toolUseID is id as Anthropic takes a tool_use block's id, which must match
// ^[a-zA-Z0-9_-]+$: every other character becomes "_". The calls of a
// conversation may come from other providers, whose ids need not (some
// OpenAI-compatible servers write "functions.get_weather:0"), and a request
// holding one is refused, so that the conversation could not go on with an
// Anthropic agent. The same id always gives the same result, so that a call
// and the result answering it stay paired.
func toolUseID(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, id)
}

// thinking is the thinking blocks an assistant message keeps from the turn
// that wrote it (see reader.thinkingJSON), or none.
func (c *Client) thinking(m *llm.Message) []block {
	if len(m.Thinking) == 0 {
		return nil
	}
	var blocks []block
	if err := json.Unmarshal(m.Thinking, &blocks); err != nil {
		c.ep.Log.Warn("thinking of an assistant message not sent: not Anthropic's content blocks", "error", err)
		return nil
	}
	return blocks
}

// content is a message's text and images as blocks.
func content(m *llm.Message) []block {
	return wire.Parts(m, func(s string) block { return block{Type: "text", Text: s} }, func(mimeType, data string) block {
		return block{Type: "image", Source: &imageSource{Type: "base64", MediaType: mimeType, Data: data}}
	})
}
