package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/run"
)

// completionRequest is an OpenAI chat-completions request as Relay reads it
// (docs/api.md "OpenAI-compatible"): model is the agent's id; the client's
// tools, tool_choice and model parameters go to the run as run.Client.
type completionRequest struct {
	Model        string
	Messages     []completionMessage
	Stream       bool
	IncludeUsage bool
	Client       run.Client
}

// completionMessage is one message of the request.
type completionMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// The top-level fields of a chat-completions request, by what Relay does with
// them. A field in none of these lists is refused as unknown.
var (
	// modelParams are passed to the provider, over the agent's
	// model_parameters, or refused when the provider cannot take them.
	modelParams = []string{"temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "response_format"}
	// ignoredFields are accepted and ignored: they do not change the answer.
	ignoredFields = []string{"user", "metadata", "store"}
	// unsupportedFields are OpenAI's that Relay cannot honour: refused
	// unless null.
	unsupportedFields = []string{"frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "top_logprobs", "modalities", "audio",
		"prediction", "reasoning_effort", "service_tier", "web_search_options", "functions", "function_call", "verbosity", "prompt_cache_key", "safety_identifier"}
)

// noOpValues are, for unsupported fields, the values that ask for nothing
// (OpenAI's defaults), which clients send unasked: accepted like null.
var noOpValues = map[string][]string{
	"frequency_penalty": {"0"}, "presence_penalty": {"0"}, "logprobs": {"false"}, "top_logprobs": {"0"},
	"logit_bias": {"{}"}, "modalities": {`["text"]`}, "service_tier": {`"auto"`},
}

// asksNothing reports whether raw, the value of the unsupported field k, is
// one that asks for nothing (noOpValues).
func asksNothing(k string, raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	for _, s := range noOpValues[k] {
		var w any
		if json.Unmarshal([]byte(s), &w) == nil && reflect.DeepEqual(v, w) {
			return true
		}
	}
	return false
}

// functionName is what OpenAI allows as a function's name.
var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// invalidField is a 400 naming field, which /v1 answers as OpenAI's param.
func invalidField(field, format string, args ...any) error {
	return &fault.Error{Kind: fault.Invalid, Message: "invalid request", Fields: []fault.FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// readCompletion reads and checks a chat-completions request body.
func readCompletion(r *http.Request) (*completionRequest, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&fields); err != nil {
		return nil, classifyBodyErr(err)
	}
	if dec.More() {
		return nil, fault.New(fault.Invalid, "request body must hold one JSON value")
	}
	req := &completionRequest{}
	isNull := func(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
	var tools, choice, streamOptions json.RawMessage
	for _, k := range sortedKeys(fields) {
		raw := fields[k]
		var err error
		switch {
		case k == "model":
			err = json.Unmarshal(raw, &req.Model)
		case k == "messages":
			err = json.Unmarshal(raw, &req.Messages)
		case k == "stream":
			if !isNull(raw) {
				err = json.Unmarshal(raw, &req.Stream)
			}
		case k == "stream_options":
			streamOptions = raw
		case k == "tools":
			tools = raw
		case k == "tool_choice":
			choice = raw
		case k == "n":
			var n *float64
			if err = json.Unmarshal(raw, &n); err == nil && n != nil && *n != 1 {
				return nil, invalidField("n", "Relay answers with one choice: n must be 1, got %v", *n)
			}
		case k == "parallel_tool_calls":
			var p *bool
			if err = json.Unmarshal(raw, &p); err == nil && p != nil && !*p {
				return nil, invalidField(k, "Relay cannot keep the model from calling several tools at once: only true is accepted")
			}
		case slices.Contains(modelParams, k):
			if isNull(raw) {
				continue
			}
			var v any
			if v, err = modelParam(k, raw); err != nil {
				return nil, err
			}
			if v != nil {
				if req.Client.Params == nil {
					req.Client.Params = map[string]any{}
				}
				req.Client.Params[k] = v
			}
		case slices.Contains(ignoredFields, k):
		case slices.Contains(unsupportedFields, k):
			if !isNull(raw) && !asksNothing(k, raw) {
				return nil, invalidField(k, "not supported by Relay")
			}
		default:
			return nil, invalidField(k, "unknown field")
		}
		if err != nil {
			return nil, invalidField(k, "%v", plainJSONError(err))
		}
	}
	if req.Model == "" {
		return nil, invalidField("model", "required (an agent id)")
	}
	if len(req.Messages) == 0 {
		return nil, invalidField("messages", "required (at least one message)")
	}
	if len(streamOptions) > 0 && !isNull(streamOptions) {
		if !req.Stream {
			return nil, invalidField("stream_options", "only allowed when stream is true")
		}
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(streamOptions, &so); err != nil {
			return nil, invalidField("stream_options", "%v", plainJSONError(err))
		}
		req.IncludeUsage = so.IncludeUsage
	}
	if err := req.readTools(tools, choice); err != nil {
		return nil, err
	}
	return req, nil
}

// readTools reads the client's function tools and its tool_choice.
func (req *completionRequest) readTools(tools, choice json.RawMessage) error {
	if len(tools) > 0 && string(bytes.TrimSpace(tools)) != "null" {
		var list []struct {
			Type     string `json:"type"`
			Function *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      *bool           `json:"strict"` // null is as absent
			} `json:"function"`
		}
		if err := json.Unmarshal(tools, &list); err != nil {
			return invalidField("tools", "%v", plainJSONError(err))
		}
		for i, t := range list {
			if t.Type != "function" || t.Function == nil {
				return invalidField(fmt.Sprintf("tools[%d].type", i), "only function tools are supported, got %q", t.Type)
			}
			if !functionName.MatchString(t.Function.Name) {
				return invalidField(fmt.Sprintf("tools[%d].function.name", i), "must be 1 to 64 letters, digits, _ or -, got %q", t.Function.Name)
			}
			if req.hasTool(t.Function.Name) {
				return invalidField(fmt.Sprintf("tools[%d].function.name", i), "%q is declared twice", t.Function.Name)
			}
			params := bytes.TrimSpace(t.Function.Parameters)
			if len(params) > 0 && string(params) != "null" && params[0] != '{' {
				return invalidField(fmt.Sprintf("tools[%d].function.parameters", i), "must be a JSON Schema object")
			}
			if len(params) == 0 || string(params) == "null" {
				params = nil
			}
			req.Client.Tools = append(req.Client.Tools, llm.FunctionTool{Type: "function", Function: llm.Function{Name: t.Function.Name, Description: t.Function.Description, Parameters: params, Strict: t.Function.Strict}})
		}
	}
	if len(choice) == 0 || string(bytes.TrimSpace(choice)) == "null" {
		return nil
	}
	// A choice that forces a call needs functions to call: OpenAI refuses it
	// without tools, and Relay would otherwise force the agent's own tools.
	const noTools = "only allowed with tools: a choice that forces a call needs the request's functions"
	var s string
	if json.Unmarshal(choice, &s) == nil {
		switch s {
		case "required":
			if len(req.Client.Tools) == 0 {
				return invalidField("tool_choice", "%q is %s", s, noTools)
			}
			fallthrough
		case "none", "auto":
			req.Client.ToolChoice = s
			return nil
		}
		return invalidField("tool_choice", `must be "none", "auto", "required" or {"type":"function","function":{"name":…}}, got %q`, s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(choice, &named); err != nil || named.Type != "function" {
		return invalidField("tool_choice", `must be "none", "auto", "required" or {"type":"function","function":{"name":…}}`)
	}
	if len(req.Client.Tools) == 0 {
		return invalidField("tool_choice", "a named function is %s", noTools)
	}
	if !req.hasTool(named.Function.Name) {
		return invalidField("tool_choice.function.name", "%q is not one of the request's tools", named.Function.Name)
	}
	req.Client.ToolFunction = named.Function.Name
	return nil
}

// hasTool reports whether name is one of the client's functions.
func (req *completionRequest) hasTool(name string) bool {
	return slices.ContainsFunc(req.Client.Tools, func(t llm.FunctionTool) bool { return t.Function.Name == name })
}

// modelParam checks one model parameter and returns it as it is passed on;
// nil for one that asks for nothing (response_format "text").
func modelParam(name string, raw json.RawMessage) (any, error) {
	number := func(lo, hi float64) (any, error) {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, invalidField(name, "must be a number")
		}
		if f < lo || f > hi {
			return nil, invalidField(name, "must be from %g to %g, got %g", lo, hi, f)
		}
		return f, nil
	}
	integer := func(lo float64) (any, error) {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, invalidField(name, "must be a whole number")
		}
		if f < lo {
			return nil, invalidField(name, "must be at least %g, got %g", lo, f)
		}
		return int(f), nil
	}
	switch name {
	case "temperature":
		return number(0, 2)
	case "top_p":
		return number(0, 1)
	case "max_tokens", "max_completion_tokens":
		return integer(1)
	case "seed":
		return integer(math.Inf(-1))
	case "stop":
		var one string
		if json.Unmarshal(raw, &one) == nil {
			return one, nil
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil || len(list) > 4 {
			return nil, invalidField(name, "must be a string or a list of up to 4 strings")
		}
		out := make([]any, len(list))
		for i, s := range list {
			out[i] = s
		}
		return out, nil
	case "response_format":
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, invalidField(name, "must be an object")
		}
		switch v["type"] {
		case "text":
			return nil, nil
		case "json_object":
			return v, nil
		case "json_schema":
			js, _ := v["json_schema"].(map[string]any)
			if js == nil {
				return nil, invalidField("response_format.json_schema", "required with type json_schema")
			}
			if n, _ := js["name"].(string); n == "" {
				return nil, invalidField("response_format.json_schema.name", "required")
			}
			if s, ok := js["schema"]; ok {
				if _, isObj := s.(map[string]any); !isObj {
					return nil, invalidField("response_format.json_schema.schema", "must be a JSON Schema object")
				}
			}
			return v, nil
		}
		return nil, invalidField("response_format.type", `must be "text", "json_object" or "json_schema", got %v`, v["type"])
	}
	return nil, invalidField(name, "unknown field")
}

// plainJSONError is a decoding error without Go's type names.
func plainJSONError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return "expected " + jsonKindOf(te.Type.Kind().String()) + ", got " + te.Value
	}
	return "malformed"
}

func jsonKindOf(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "a number"
}

func sortedKeys(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }

// chatRequest turns the client's messages into a run's request: the last
// user message is the question and what came before it the history, with
// the assistant's tool calls and the tool messages answering them. A request
// that ends with tool messages continues from them: the model answers the
// tool results. System and developer messages are left out: the agent's
// instructions rule.
func (req *completionRequest) chatRequest() (run.ChatRequest, error) {
	out := run.ChatRequest{AgentID: req.Model, KeepTitle: true}
	if len(req.Client.Tools) > 0 || req.Client.ToolChoice != "" || len(req.Client.Params) > 0 {
		out.Client = &req.Client
	}
	last := len(req.Messages) - 1
	// Every provider refuses a call without its result, and a result that
	// is not of the assistant message just before it: the calls of an
	// assistant message are answered by the tool messages right after it,
	// or the request is the client's mistake, a 400, never a failed run.
	pending := map[string]string{} // the last assistant message's unanswered calls: id → field
	var order []string             // their ids, in order
	unanswered := func() error {
		for _, id := range order {
			if field, ok := pending[id]; ok {
				return invalidField(field, "the call %q has no tool message answering it: each call of an assistant message needs a tool message right after it", id)
			}
		}
		return nil
	}
	var history []llm.Message
	for i, m := range req.Messages {
		t, imgs, err := messageContent(fmt.Sprintf("messages[%d].content", i), m.Content)
		if err != nil {
			return out, err
		}
		if len(imgs) > 0 && (m.Role == "assistant" || m.Role == "tool") {
			// Only a user message's images reach the model: refused here
			// rather than dropped unseen, as OpenAI refuses them.
			return out, invalidField(fmt.Sprintf("messages[%d].content", i), "image_url parts are read in user messages only, not in %s messages", m.Role)
		}
		if m.Role == "user" || m.Role == "assistant" {
			if err := unanswered(); err != nil {
				return out, err
			}
			clear(pending)
			order = order[:0]
		}
		switch m.Role {
		case "user":
			if i == last {
				out.Text, out.Images = t, imgs
				continue
			}
			um := llm.Message{Role: llm.RoleUser, Content: t}
			for j, img := range imgs {
				if j == 0 {
					um.Parts = append(um.Parts, llm.Part{Type: llm.PartText, Text: t})
				}
				um.Parts = append(um.Parts, llm.Part{Type: llm.PartImage, MIMEType: img.MIMEType, Data: img.Data})
			}
			history = append(history, um)
		case "assistant":
			am := llm.Message{Role: llm.RoleAssistant, Content: t}
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" {
					return out, invalidField(fmt.Sprintf("messages[%d].tool_calls[%d]", i, j), "a tool call needs an id and function.name")
				}
				pending[c.ID] = fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
				order = append(order, c.ID)
				am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: c.ID, Type: "function", Function: llm.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
			}
			history = append(history, am)
		case "tool":
			if _, ok := pending[m.ToolCallID]; !ok {
				return out, invalidField(fmt.Sprintf("messages[%d].tool_call_id", i), "%q answers no call of the assistant message before it that is still unanswered", m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			history = append(history, llm.Message{Role: llm.RoleTool, ToolCallID: m.ToolCallID, Content: t})
		case "system", "developer":
		default:
			return out, invalidField(fmt.Sprintf("messages[%d].role", i), `must be "system", "developer", "user", "assistant" or "tool", got %q`, m.Role)
		}
	}
	out.History = history
	switch req.Messages[last].Role {
	case "user":
		if strings.TrimSpace(out.Text) == "" {
			return out, invalidField(fmt.Sprintf("messages[%d].content", last), "the last user message needs text (images go with a question)")
		}
	case "tool":
		if err := unanswered(); err != nil {
			return out, err
		}
		// The stored user message of the run is the tool results the
		// client gave; the conversation is titled by its last question.
		var results []string
		for i := len(history) - 1; i >= 0 && history[i].Role == llm.RoleTool; i-- {
			results = append([]string{history[i].Content}, results...)
		}
		for i := len(history) - 1; i >= 0; i-- {
			if history[i].Role == llm.RoleUser {
				// Its first words, as a conversation's first title is made.
				out.Title = run.FirstWords(history[i].Content)
				break
			}
		}
		req.Client.Continue = true
		out.Client = &req.Client
		out.Text = strings.Join(results, "\n\n")
	default:
		return out, invalidField(fmt.Sprintf("messages[%d].role", last), "the last message must be the user's, or tool results")
	}
	return out, nil
}
