package openai

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/relay-ai/relay/internal/llm"
)

// Body returns the bytes Stream would send for req; see llm.Bodier.
func (c *Client) Body(req *llm.Request) ([]byte, error) { return c.body(req) }

// body returns the bytes sent for req: the prompt's own body, with tool
// images moved into user messages, streaming asked for, AddParams merged in
// and DropParams removed.
func (c *Client) body(req *llm.Request) ([]byte, error) {
	r := *req
	r.Messages = shortIDs(splitToolImages(req.Messages))
	base, err := r.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("writing the request body: %w", err)
	}
	return mergeParams(base, c.opts.AddParams, c.opts.DropParams)
}

// splitToolImages returns msgs with the images of tool messages moved out, as
// OpenAI-compatible providers take them (docs/mcp.md "Results"): a
// tool message holds its text parts only, joined into one string, which every
// such provider accepts, and its images follow as image_url parts of a user
// message. The user message comes after the last of a run of tool messages,
// because the tool messages answering one assistant message must follow it
// directly. msgs itself is not changed; when no tool message has parts it is
// returned as is.
func splitToolImages(msgs []llm.Message) []llm.Message {
	if !slices.ContainsFunc(msgs, toolWithParts) {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs)+1)
	var images []llm.Part
	for i := range msgs {
		m := msgs[i]
		if m.Role == llm.RoleTool && len(m.Parts) > 0 {
			var texts []llm.Part
			for _, p := range m.Parts {
				if p.Type == llm.PartImage {
					images = append(images, p)
				} else {
					texts = append(texts, p)
				}
			}
			m.Parts = nil
			m.Content = joinTexts(texts)
		}
		out = append(out, m)
		lastOfRun := m.Role == llm.RoleTool && (i+1 == len(msgs) || msgs[i+1].Role != llm.RoleTool)
		if lastOfRun && len(images) > 0 {
			out = append(out, llm.Message{Role: llm.RoleUser, Parts: images})
			images = nil
		}
	}
	return out
}

// maxToolCallID is the longest tool call id OpenAI takes; a request with a
// longer one is refused ("string too long. Expected a string with maximum
// length 40").
const maxToolCallID = 40

// shortIDs returns msgs with each tool call id longer than maxToolCallID, and
// each tool message's id of such a call, replaced by "call_" and 32 hex
// digits of its SHA-256: the calls of a conversation may come from other
// providers, whose ids can be longer (vLLM writes "chatcmpl-tool-" and 32 hex
// digits), and a request holding one is refused, so that the conversation
// could not go on with this provider. The same id always gives the same
// result, so that a call and its result stay paired. msgs itself is not
// changed; when no id is too long it is returned as is.
func shortIDs(msgs []llm.Message) []llm.Message {
	long := func(m llm.Message) bool {
		return len(m.ToolCallID) > maxToolCallID || slices.ContainsFunc(m.ToolCalls, func(c llm.ToolCall) bool { return len(c.ID) > maxToolCallID })
	}
	if !slices.ContainsFunc(msgs, long) {
		return msgs
	}
	short := func(id string) string {
		if len(id) <= maxToolCallID {
			return id
		}
		sum := sha256.Sum256([]byte(id))
		return "call_" + hex.EncodeToString(sum[:16])
	}
	out := slices.Clone(msgs)
	for i := range out {
		m := &out[i]
		if !long(*m) {
			continue
		}
		m.ToolCallID = short(m.ToolCallID)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].ID = short(m.ToolCalls[j].ID)
		}
	}
	return out
}

func toolWithParts(m llm.Message) bool {
	return m.Role == llm.RoleTool && len(m.Parts) > 0
}

// joinTexts joins text parts with a blank line, as tool results' texts are
// joined (mcp.Format).
func joinTexts(parts []llm.Part) string {
	var b bytes.Buffer
	for _, p := range parts {
		if p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// streamParams are the keys Relay adds to ask for a stream with usage.
var streamParams = []field{
	{key: "stream", value: []byte("true")},
	{key: "stream_options", value: []byte(`{"include_usage":true}`)},
}

// field is one member of a JSON object: its key and raw value. raw holds the
// key as it was written, when it comes from the body.
type field struct {
	key   string
	raw   []byte
	value []byte
}

// mergeParams returns base, a JSON object, with the stream parameters and add
// set and the keys in drop removed. Keys already in base keep their place and
// bytes, a value replaced by add included; new keys are appended, the stream
// parameters first, then add's in the order of their keys. add wins over
// everything else, and drop applies last, to the stream parameters too;
// stream_options goes whenever "stream" is no longer true.
func mergeParams(base []byte, add map[string]any, drop []string) ([]byte, error) {
	fields, err := objectFields(base)
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	for _, sp := range streamParams {
		if i := indexOf(fields, sp.key); i >= 0 {
			fields[i].value = sp.value
		} else {
			fields = append(fields, sp)
		}
	}
	keys := make([]string, 0, len(add))
	for k := range add {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := marshal(add[k])
		if err != nil {
			return nil, fmt.Errorf("writing added parameter %q: %w", k, err)
		}
		if i := indexOf(fields, k); i >= 0 {
			fields[i].value = v
		} else {
			fields = append(fields, field{key: k, value: v})
		}
	}
	fields = slices.DeleteFunc(fields, func(f field) bool { return slices.Contains(drop, f.key) })
	// stream_options is refused without "stream": true, so it goes with a
	// stream that was dropped or turned off.
	if i := indexOf(fields, "stream"); i < 0 || string(bytes.TrimSpace(fields[i].value)) != "true" {
		fields = slices.DeleteFunc(fields, func(f field) bool { return f.key == "stream_options" })
	}

	out := make([]byte, 0, len(base)+64)
	out = append(out, '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		if f.raw != nil {
			out = append(out, f.raw...)
		} else {
			k, err := marshal(f.key)
			if err != nil {
				return nil, err
			}
			out = append(out, k...)
		}
		out = append(out, ':')
		out = append(out, f.value...)
	}
	return append(out, '}'), nil
}

func indexOf(fields []field, key string) int {
	return slices.IndexFunc(fields, func(f field) bool { return f.key == key })
}

// marshal is json.Marshal without HTML escaping, so that added parameters
// read as they were written.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// objectFields splits a JSON object into its members, keeping each key's and
// value's bytes as they are.
func objectFields(b []byte) ([]field, error) {
	if !json.Valid(b) {
		return nil, errors.New("not valid JSON")
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	i = skipSpace(b, i+1)
	var fields []field
	if b[i] == '}' {
		return fields, nil
	}
	for {
		end := skipValue(b, i)
		rawKey := b[i:end]
		var key string
		if err := json.Unmarshal(rawKey, &key); err != nil {
			return nil, err
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // the colon
		end = skipValue(b, i)
		fields = append(fields, field{key: key, raw: rawKey, value: b[i:end]})
		i = skipSpace(b, end)
		if b[i] == '}' {
			return fields, nil
		}
		i = skipSpace(b, i+1) // the comma
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at b[i]; b is valid
// JSON.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// CheckParam says whether a model parameter reaches the endpoint
// (llm.ParamChecker): every one does, written into the body as it is, unless
// the endpoint's dropParams removes it or its addParams sets it.
func (c *Client) CheckParam(name string, _ any) error {
	if slices.Contains(c.opts.DropParams, name) {
		return fmt.Errorf("the endpoint's dropParams removes %s", name)
	}
	if _, added := c.opts.AddParams[name]; added {
		return fmt.Errorf("the endpoint's addParams sets %s", name)
	}
	return nil
}

// CheckStrict says that a function's strict flag reaches the endpoint
// (llm.ParamChecker): it is written into the function as the client gave it.
func (c *Client) CheckStrict(bool) error { return nil }
