package google

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/wire"
)

// request is the body of streamGenerateContent, its fields in the order they
// are written, followed by AddParams sorted by key.
type request struct {
	SystemInstruction *content    `json:"systemInstruction,omitempty"`
	Contents          []content   `json:"contents"`
	Tools             []toolList  `json:"tools,omitempty"`
	ToolConfig        *toolConfig `json:"toolConfig,omitempty"`
	// GenerationConfig is written by generationConfig.
	GenerationConfig json.RawMessage `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one part of a content; exactly one of its data fields is set.
type part struct {
	Text             string            `json:"text,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
}

type blob struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

type functionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type toolList struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig struct {
		Mode string `json:"mode"`
		// AllowedFunctionNames limits an ANY mode to these functions.
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
	} `json:"functionCallingConfig"`
}

// generation is Relay's part of generationConfig.
type generation struct {
	Temperature     any      `json:"temperature,omitempty"`
	TopP            any      `json:"topP,omitempty"`
	TopK            any      `json:"topK,omitempty"`
	MaxOutputTokens any      `json:"maxOutputTokens,omitempty"`
	StopSequences   []string `json:"stopSequences,omitempty"`
	Seed            any      `json:"seed,omitempty"`
	// ResponseMIMEType and ResponseSchema are OpenAI's response_format:
	// application/json for json_object and json_schema, with the schema.
	ResponseMIMEType string `json:"responseMimeType,omitempty"`
	ResponseSchema   any    `json:"responseSchema,omitempty"`
}

// params maps generationConfig's fields to the model parameter names they are
// read from, OpenAI's first.
var params = []wire.Alias{
	{Field: "temperature", Names: []string{"temperature"}},
	{Field: "topP", Names: []string{"top_p", "topP"}},
	{Field: "topK", Names: []string{"top_k", "topK"}},
	{Field: "maxOutputTokens", Names: []string{"max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens"}},
	{Field: "stopSequences", Names: []string{"stop", "stop_sequences", "stopSequences"}},
	{Field: "seed", Names: []string{"seed"}},
	{Field: "responseMimeType", Names: []string{"response_format"}},
}

// skipSignature is the thoughtSignature Google documents for a function call
// whose signature is unknown (the call was not made by this model, or the
// signature was lost); it tells Gemini 3 not to validate it.
const skipSignature = "skip_thought_signature_validator"

// Body returns the bytes Stream would send for req; see llm.Bodier.
func (c *Client) Body(req *llm.Request) ([]byte, error) { return c.body(req) }

// body writes the streamGenerateContent body for r. Strings are not
// HTML-escaped, so the body reads as the prompt does.
func (c *Client) body(r *llm.Request) ([]byte, error) {
	keep := func(field string) bool {
		_, added := c.add[field]
		return !added && !c.drop[field]
	}
	var b request
	if keep("systemInstruction") {
		if s := wire.System(r.Messages); s != "" {
			b.SystemInstruction = &content{Parts: []part{{Text: s}}}
		}
	}
	b.Contents = c.contents(r.Messages)
	if len(r.Tools) > 0 && keep("tools") {
		var decls []functionDeclaration
		for _, t := range r.Tools {
			params, err := Schema(t.Function.Parameters)
			if err != nil {
				return nil, fmt.Errorf("parameters of tool %q: %w", t.Function.Name, err)
			}
			decls = append(decls, functionDeclaration{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
		}
		b.Tools = []toolList{{FunctionDeclarations: decls}}
		if keep("toolConfig") {
			b.ToolConfig = &toolConfig{}
			b.ToolConfig.FunctionCallingConfig.Mode = mode(r.ToolChoice)
			if r.ToolFunction != "" {
				b.ToolConfig.FunctionCallingConfig.Mode = "ANY"
				b.ToolConfig.FunctionCallingConfig.AllowedFunctionNames = []string{r.ToolFunction}
			}
		}
	}
	if keep("generationConfig") || c.addConfig != nil {
		cfg, err := c.generationConfig(r.Params)
		if err != nil {
			return nil, err
		}
		b.GenerationConfig = cfg
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

// generationConfig writes generationConfig: the mapped model parameters, then
// AddParams' generationConfig; nil when both are empty.
func (c *Client) generationConfig(ps map[string]any) (json.RawMessage, error) {
	var g generation
	add := map[string]any{}
	for k, v := range c.addConfig {
		if !c.drop[k] {
			add[k] = v
		}
	}
	for _, p := range params {
		if _, added := add[p.Field]; added || c.drop[p.Field] {
			continue
		}
		v, ok := wire.Param(ps, c.drop, p.Names...)
		if !ok {
			continue
		}
		switch p.Field {
		case "temperature":
			g.Temperature = v
		case "topP":
			g.TopP = v
		case "topK":
			g.TopK = v
		case "maxOutputTokens":
			if n, ok := wire.Int(v); ok && n > 0 {
				g.MaxOutputTokens = n
			}
		case "stopSequences":
			g.StopSequences = wire.Strings(v)
		case "seed":
			g.Seed = v
		case "responseMimeType":
			mime, schema, err := responseFormat(v)
			if err != nil {
				return nil, err
			}
			g.ResponseMIMEType, g.ResponseSchema = mime, schema
		}
	}
	out, err := wire.Marshal(g)
	if err != nil {
		return nil, err
	}
	out, err = wire.AppendFields(out, add)
	if err != nil {
		return nil, fmt.Errorf("generationConfig: %w", err)
	}
	if string(out) == "{}" {
		return nil, nil
	}
	return out, nil
}

// responseFormat maps OpenAI's response_format onto Gemini's
// responseMimeType and responseSchema: json_object asks for JSON, json_schema
// for JSON of the schema (in Gemini's dialect, see Schema); text asks for
// nothing.
func responseFormat(v any) (mime string, schema any, err error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("response_format: %w", err)
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", nil, fmt.Errorf("response_format: %w", err)
	}
	switch f.Type {
	case "json_object":
		return "application/json", nil, nil
	case "json_schema":
		schema, err := Schema(f.JSONSchema.Schema)
		if err != nil {
			return "", nil, fmt.Errorf("response_format.json_schema.schema: %w", err)
		}
		return "application/json", schema, nil
	}
	return "", nil, nil
}

// CheckParam says whether a model parameter reaches Gemini (llm.ParamChecker):
// every one of OpenAI's that Relay maps does, unless the endpoint drops it; a
// response_format's schema must be one Gemini's dialect can hold.
func (c *Client) CheckParam(name string, value any) error {
	i := slices.IndexFunc(params, func(a wire.Alias) bool { return slices.Contains(a.Names, name) })
	if i < 0 {
		//lint:ignore ST1005 the message starts with a name, which keeps its capital.
		return fmt.Errorf("Relay does not send %s to Google", name)
	}
	field := params[i].Field
	if c.drop[name] || c.drop[field] || c.drop["generationConfig"] && c.addConfig == nil {
		return fmt.Errorf("the endpoint's dropParams removes %s", name)
	}
	if _, added := c.addConfig[field]; added {
		return fmt.Errorf("the endpoint's addParams sets generationConfig.%s", field)
	}
	if name == "response_format" {
		_, _, err := responseFormat(value)
		return err
	}
	return nil
}

// CheckStrict says whether a function's strict flag reaches Gemini
// (llm.ParamChecker): a function declaration has no strict mode, so strict
// true is refused and false, which asks for nothing, passes.
func (c *Client) CheckStrict(strict bool) error {
	if strict {
		//lint:ignore ST1005 the message starts with a name, which keeps its capital.
		return errors.New("Relay does not send strict to Google: Gemini's function declarations have no strict mode")
	}
	return nil
}

// mode maps OpenAI's tool_choice onto functionCallingConfig.mode.
func mode(openai string) string {
	switch openai {
	case "required":
		return "ANY"
	case "none":
		return "NONE"
	}
	return "AUTO"
}

// contents translates the conversation (system messages aside) into Gemini's
// contents.
func (c *Client) contents(msgs []llm.Message) []content {
	var out []content
	// images holds the images of the tool results in the current "user"
	// content, written after all its functionResponse parts.
	var images []part
	flush := func() {
		if len(images) > 0 {
			last := &out[len(out)-1]
			last.Parts = append(last.Parts, images...)
			images = nil
		}
	}
	add := func(role string, parts ...part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			if parts[0].FunctionResponse == nil {
				flush()
			}
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		flush()
		out = append(out, content{Role: role, Parts: parts})
	}
	names := map[string]string{} // tool call id → function name
	msgs = inCallOrder(msgs)
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleSystem:
		case llm.RoleAssistant:
			parts := contentParts(m)
			for j, tc := range m.ToolCalls {
				names[tc.ID] = tc.Function.Name
				p := part{FunctionCall: &functionCall{Name: tc.Function.Name, Args: wire.Arguments(tc, c.ep.Log)}}
				if p.ThoughtSignature = c.sigs.get(tc.ID); p.ThoughtSignature == "" && j == 0 {
					p.ThoughtSignature = skipSignature
				}
				parts = append(parts, p)
			}
			add("model", parts...)
		case llm.RoleTool:
			name := names[m.ToolCallID]
			if name == "" {
				name = "unknown" // a result whose call is not in the conversation
			}
			key := "output"
			if wire.ToolFailed(m) {
				key = "error"
			}
			add("user", part{FunctionResponse: &functionResponse{Name: name, Response: map[string]any{key: wire.Text(m)}}})
			for _, p := range m.Parts {
				if p.Type == llm.PartImage {
					images = append(images, part{InlineData: &blob{MIMEType: p.MIMEType, Data: p.Data}})
				}
			}
		default:
			add("user", contentParts(m)...)
		}
	}
	flush()
	return out
}

// inCallOrder is msgs with each run of tool messages in the order of the
// calls they answer in the assistant message before them (results of no
// call of it last). Gemini's function calls and responses carry no ids: it
// pairs a response with a call by position, so results sent in another
// order, as an OpenAI client may send them (they are matched by id there),
// would each be read as another call's. msgs is not changed.
func inCallOrder(msgs []llm.Message) []llm.Message {
	pos := map[string]int{} // call id → its index in the last assistant message
	out, cloned := msgs, false
	for i := 0; i < len(msgs); {
		if msgs[i].Role == llm.RoleAssistant {
			clear(pos)
			for j, tc := range msgs[i].ToolCalls {
				pos[tc.ID] = j
			}
		}
		if msgs[i].Role != llm.RoleTool {
			i++
			continue
		}
		end := i
		for end < len(msgs) && msgs[end].Role == llm.RoleTool {
			end++
		}
		rank := func(m llm.Message) int {
			if p, ok := pos[m.ToolCallID]; ok {
				return p
			}
			return len(pos)
		}
		if !slices.IsSortedFunc(msgs[i:end], func(a, b llm.Message) int { return cmp.Compare(rank(a), rank(b)) }) {
			if !cloned {
				out, cloned = slices.Clone(msgs), true
			}
			slices.SortStableFunc(out[i:end], func(a, b llm.Message) int { return cmp.Compare(rank(a), rank(b)) })
		}
		i = end
	}
	return out
}

// contentParts is a message's text and images as parts.
func contentParts(m *llm.Message) []part {
	return wire.Parts(m, func(s string) part { return part{Text: s} }, func(mimeType, data string) part {
		return part{InlineData: &blob{MIMEType: mimeType, Data: data}}
	})
}

// randomID makes a tool call id in OpenAI's style.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
