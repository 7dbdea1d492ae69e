// Package wire holds what the provider clients share in writing their request
// bodies from a llm.Request: JSON written without HTML escaping (so a body
// reads as the prompt does), extra top-level fields appended in key order,
// model parameters looked up under their aliases and read leniently, and the
// parts of a llm.Message every provider needs (its text, its tool call
// arguments as an object, whether a tool result is a failure). What each
// provider's body looks like stays in its own package.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/relay-ai/relay/internal/llm"
)

// Marshal writes v as JSON without HTML escaping and without a trailing
// newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// AppendFields adds fields, sorted by key, at the end of the JSON object obj
// (as Marshal writes it). The caller leaves out of obj the fields that
// fields replaces.
func AppendFields(obj []byte, fields map[string]any) ([]byte, error) {
	if len(fields) == 0 {
		return obj, nil
	}
	out := bytes.TrimSuffix(obj, []byte{'}'})
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		kb, _ := Marshal(k)
		vb, err := Marshal(fields[k])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, kb...), ':'), vb...)
	}
	return append(out, '}'), nil
}

// Param returns the value of the first of names that is set (not to null) in
// params and not dropped.
func Param(params map[string]any, drop map[string]bool, names ...string) (any, bool) {
	for _, n := range names {
		if v, ok := params[n]; ok && v != nil && !drop[n] {
			return v, true
		}
	}
	return nil, false
}

// Int reads a whole number from a model parameter: a Go integer, a float with
// no fraction, a json.Number or a decimal string.
func Int(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

// Strings reads a list of strings from a model parameter that holds one
// string or a list (OpenAI's stop). Empty strings are left out.
func Strings(v any) []string {
	var out []string
	switch s := v.(type) {
	case string:
		out = append(out, s)
	case []string:
		out = append(out, s...)
	case []any:
		for _, e := range s {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	if len(out) == 0 {
		return nil
	}
	return out
}

// Text is a message's text: its non-empty text parts joined with a blank line
// (as a tool result's texts are), or its Content when it has no parts.
func Text(m *llm.Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var texts []string
	for _, p := range m.Parts {
		if p.Type != llm.PartImage && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// System joins the texts of the system messages with a blank line: the
// providers that take the system prompt apart from the conversation get it
// whole.
func System(msgs []llm.Message) string {
	var texts []string
	for i := range msgs {
		if msgs[i].Role == llm.RoleSystem {
			if t := Text(&msgs[i]); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n\n")
}

// ToolFailed reports whether a tool message carries a failure, which
// providers that can be told so (Anthropic's is_error, Gemini's
// response.error) are told.
func ToolFailed(m *llm.Message) bool {
	return m.Role == llm.RoleTool && m.IsError
}

// Object returns a tool call's arguments as a JSON object, {} for none. ok is
// false when they are not an object (the model wrote broken JSON): providers
// that need an object are sent {} then, since the conversation must go on and
// the tool's result has already told the model what was wrong.
func Object(arguments string) (obj json.RawMessage, ok bool) {
	args := bytes.TrimSpace([]byte(arguments))
	if len(args) == 0 {
		return json.RawMessage("{}"), true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return json.RawMessage("{}"), false
	}
	return json.RawMessage(args), true
}

// Alias names a body field and the model parameters it is read from, under
// their names in order of preference (OpenAI's first).
type Alias struct {
	Field string
	Names []string
}

// Unmapped returns, sorted, the model parameters in params that none of
// aliases reads: those a provider's body does not send.
func Unmapped(params map[string]any, aliases []Alias) []string {
	var out []string
	for k := range params {
		if !slices.ContainsFunc(aliases, func(a Alias) bool { return slices.Contains(a.Names, k) }) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Parts is a message's text and images as a provider's content parts, made
// by text and image. Texts that are empty or only white space are left out:
// providers refuse them (Anthropic: "text content blocks must contain
// non-whitespace text"), and a model's answer may be one — the line breaks
// it wrote before a tool call — which would fail every later turn of its
// conversation.
func Parts[T any](m *llm.Message, text func(s string) T, image func(mimeType, data string) T) []T {
	if len(m.Parts) == 0 {
		if strings.TrimSpace(m.Content) == "" {
			return nil
		}
		return []T{text(m.Content)}
	}
	var out []T
	for _, p := range m.Parts {
		switch {
		case p.Type == llm.PartImage:
			out = append(out, image(p.MIMEType, p.Data))
		case strings.TrimSpace(p.Text) != "":
			out = append(out, text(p.Text))
		}
	}
	return out
}

// Arguments is a tool call's arguments as a JSON object (see [Object]); when
// they are not one, log is told at debug level.
func Arguments(tc llm.ToolCall, log *slog.Logger) json.RawMessage {
	obj, ok := Object(tc.Function.Arguments)
	if !ok && log != nil {
		log.Debug("tool call arguments are not a JSON object; sending {}", "tool", tc.Function.Name)
	}
	return obj
}
