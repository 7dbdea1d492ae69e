package llm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Role is the role of a chat message.
type Role string

// The roles of the OpenAI chat-completions API that Relay sends.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message in the OpenAI shape.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// Name optionally names the author of a message.
	Name string `json:"name,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Parts, when not empty, are the message's multimodal content and are
	// written as the content-part array in place of Content.
	Parts []Part `json:"-"`
	// IsError marks a tool message whose call failed. OpenAI's format has no
	// place for it (the text says so); Anthropic's and Gemini's do.
	IsError bool `json:"-"`
	// Thinking is, on an assistant message, the reasoning the model wrote
	// before it, as the provider's own JSON, for a provider that must be sent
	// it back unchanged (Anthropic's signed thinking blocks). Only the client
	// that wrote it reads it; the OpenAI shape has no place for it.
	Thinking json.RawMessage `json:"-"`
	// Question marks the message a run answers, the user's as the run began:
	// the context window keeps it and all that follows, whatever user
	// messages the agents' flow adds after it (a handoff's note, an edge's
	// prompt; docs/config.md "Context window"). Never sent.
	Question bool `json:"-"`
}

// The types of a content [Part].
const (
	PartText  = "text"
	PartImage = "image"
)

// Part is one piece of a multimodal message: a text, or an image given as
// base64 data. It is written as an OpenAI content part,
// {"type":"text","text":…} or
// {"type":"image_url","image_url":{"url":"data:<mime>;base64,<data>"}}.
type Part struct {
	// Type is PartText or PartImage.
	Type     string
	Text     string
	MIMEType string
	// Data is the image, base64 in the standard encoding.
	Data string
}

// ToolCall is one call of a tool by the model.
type ToolCall struct {
	ID string `json:"id"`
	// Type is "function"; empty is written as "function".
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function called and its arguments as a JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// FunctionTool is one entry of the tools array.
type FunctionTool struct {
	// Type is "function"; empty is written as "function".
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function is a tool in OpenAI function format.
type Function struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments, as it is sent.
	Parameters json.RawMessage `json:"parameters"`
	// Strict is OpenAI's strict mode for the function, as a client of
	// /v1 gave it (docs/api.md "OpenAI-compatible"); nil, as for the
	// agent's own tools, writes no strict at all.
	Strict *bool `json:"strict,omitempty"`
}

// ToolChoiceAuto lets the model decide whether to call a tool.
const ToolChoiceAuto = "auto"

// Request is an OpenAI chat-completions request body.
type Request struct {
	Model    string
	Messages []Message
	// Tools is omitted from the body when empty, and ToolChoice with it.
	Tools      []FunctionTool
	ToolChoice string
	// ToolFunction, when set, names the one function the model must call
	// (OpenAI's {"type":"function","function":{"name":…}} tool_choice); it
	// takes the place of ToolChoice.
	ToolFunction string
	// Params are the agent's model_parameters (Build passes the agent's map
	// itself, not a copy), written after tool_choice in the order of their
	// keys. Keys that name one of the fields above are left out.
	Params map[string]any
}

// ReservedParam reports whether key is one of the body's keys that model
// parameters may not override, or a model parameter that configures Relay
// rather than the model (maxContextTokens, the agent's context budget:
// docs/config.md), which is never sent.
func ReservedParam(key string) bool {
	switch key {
	case "model", "messages", "tools", "tool_choice", "maxContextTokens":
		return true
	}
	return false
}

// MarshalJSON writes the body with its keys in the order of docs/prompt.md
// "The request body": model, messages, tools, tool_choice, then the model
// parameters sorted by key. Strings are written without HTML escaping, so the
// body reads as the prompt does; json.Marshal would escape <, > and & again
// (same JSON value, other bytes), so send the output of MarshalJSON itself.
func (r Request) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, r.sizeHint()))
}

// AppendJSON appends the body that [Request.MarshalJSON] writes to dst.
func (r Request) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"model":`...)
	dst = appendString(dst, r.Model)
	dst = append(dst, `,"messages":[`...)
	for i := range r.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.Messages[i].appendJSON(dst)
	}
	dst = append(dst, ']')
	if len(r.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		for i := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = r.Tools[i].appendJSON(dst)
		}
		dst = append(dst, ']')
		switch {
		case r.ToolFunction != "":
			dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
			dst = appendString(dst, r.ToolFunction)
			dst = append(dst, "}}"...)
		case r.ToolChoice != "":
			dst = append(dst, `,"tool_choice":`...)
			dst = appendString(dst, r.ToolChoice)
		}
	}
	if len(r.Params) > 0 {
		var arr [16]string
		keys := arr[:0]
		for k := range r.Params {
			if !ReservedParam(k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = append(dst, ',')
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, r.Params[k], 0); err != nil {
				return nil, fmt.Errorf("writing model parameter %q: %w", k, err)
			}
		}
	}
	return append(dst, '}'), nil
}

// sizeHint estimates the length of the body.
func (r Request) sizeHint() int {
	n := 64 + len(r.Model) + 32*len(r.Params)
	for i := range r.Messages {
		m := &r.Messages[i]
		n += 32 + len(m.Content) + len(m.Content)/16 + len(m.Name) + len(m.ToolCallID)
		for j := range m.Parts {
			p := &m.Parts[j]
			n += 64 + len(p.Text) + len(p.Text)/16 + len(p.MIMEType) + len(p.Data)
		}
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			n += 64 + len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)*5/4
		}
	}
	for i := range r.Tools {
		f := &r.Tools[i].Function
		n += 64 + len(f.Name) + len(f.Description) + len(f.Parameters)
	}
	return n
}

// MarshalJSON writes the message without HTML escaping. An assistant message
// with tool calls and no text has a null content, as the API expects; a
// message with Parts has the content-part array.
func (m Message) MarshalJSON() ([]byte, error) {
	return m.appendJSON(nil), nil
}

func (m *Message) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, string(m.Role))
	dst = append(dst, `,"content":`...)
	if len(m.Parts) > 0 {
		dst = appendParts(dst, m.Parts)
	} else if m.Content == "" && len(m.ToolCalls) > 0 {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, m.Content)
	}
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, m.Name)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = appendString(dst, c.ID)
			dst = append(dst, `,"type":`...)
			dst = appendString(dst, orFunction(c.Type))
			dst = append(dst, `,"function":{"name":`...)
			dst = appendString(dst, c.Function.Name)
			dst = append(dst, `,"arguments":`...)
			dst = appendString(dst, c.Function.Arguments)
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = appendString(dst, m.ToolCallID)
	}
	return append(dst, '}')
}

// appendParts appends parts as an array of OpenAI content parts. A part of
// any type other than PartImage is written as a text part.
func appendParts(dst []byte, parts []Part) []byte {
	dst = append(dst, '[')
	for i := range parts {
		p := &parts[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		if p.Type == PartImage {
			dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
			dst = appendString(dst, "data:"+p.MIMEType+";base64,"+p.Data)
			dst = append(dst, "}}"...)
			continue
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = appendString(dst, p.Text)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// MarshalJSON writes the tool without HTML escaping in its texts.
func (t FunctionTool) MarshalJSON() ([]byte, error) {
	return t.appendJSON(nil), nil
}

func (t *FunctionTool) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, orFunction(t.Type))
	dst = append(dst, `,"function":{"name":`...)
	dst = appendString(dst, t.Function.Name)
	dst = append(dst, `,"description":`...)
	dst = appendString(dst, t.Function.Description)
	dst = append(dst, `,"parameters":`...)
	// Build has checked the parameters; a FunctionTool made by hand must
	// hold valid JSON (json.Marshal checks it, MarshalJSON does not).
	if p := t.Function.Parameters; len(p) > 0 {
		dst = append(dst, p...)
	} else {
		dst = append(dst, EmptyObjectSchema...)
	}
	if t.Function.Strict != nil {
		dst = append(dst, `,"strict":`...)
		dst = strconv.AppendBool(dst, *t.Function.Strict)
	}
	return append(dst, "}}"...)
}

func orFunction(typ string) string {
	if typ == "" {
		return "function"
	}
	return typ
}
