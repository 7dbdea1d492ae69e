package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// Field is one property of a question's requested schema: a flat object whose
// properties are strings, numbers, integers, booleans or arrays of enumerated
// strings (docs/mcp.md "Questions").
type Field struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Default is the schema's default, nil when it has none.
	Default any `json:"default,omitempty"`
	// Options are the values an enumerated string (or each item of an array)
	// may take, in the schema's order.
	Options []string `json:"options,omitempty"`
	// Format is a string's format: email, uri, date or date-time.
	Format string `json:"format,omitempty"`

	prop *property
}

// property is the JSON Schema of one field, as far as elicitation allows it.
type property struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Format      string   `json:"format"`
	MinLength   *int     `json:"minLength"`
	MaxLength   *int     `json:"maxLength"`
	Minimum     *float64 `json:"minimum"`
	Maximum     *float64 `json:"maximum"`
	Enum        []any    `json:"enum"`
	OneOf       []option `json:"oneOf"`
	AnyOf       []option `json:"anyOf"`
	Items       *property
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Default     json.RawMessage `json:"default"`
}

type option struct {
	Const any `json:"const"`
}

// options lists the allowed values of an enumerated string property.
func (p *property) options() []string {
	var out []string
	for _, v := range p.Enum {
		out = append(out, fmt.Sprint(v))
	}
	for _, o := range append(slices.Clone(p.OneOf), p.AnyOf...) {
		if o.Const != nil {
			out = append(out, fmt.Sprint(o.Const))
		}
	}
	return out
}

// Fields reads a requested schema's properties, in the schema's order. A
// schema that is not a flat object of primitive properties is an error.
func Fields(schema json.RawMessage) ([]Field, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
		return nil, nil
	}
	var s struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, fmt.Errorf("requested schema: type must be object, not %q", s.Type)
	}
	names, err := keysInOrder(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("requested schema: properties: %w", err)
	}
	var props map[string]*property
	if len(names) > 0 {
		if err := json.Unmarshal(s.Properties, &props); err != nil {
			return nil, fmt.Errorf("requested schema: properties: %w", err)
		}
	}
	out := make([]Field, 0, len(names))
	for _, name := range names {
		p := props[name]
		if p == nil {
			p = &property{}
		}
		switch p.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if p.Items == nil || len(p.Items.options()) == 0 {
				return nil, fmt.Errorf("requested schema: property %q: an array must list its items' values (enum or anyOf)", name)
			}
		default:
			return nil, fmt.Errorf("requested schema: property %q has type %q (string, number, integer, boolean or array)", name, p.Type)
		}
		f := Field{Name: name, Type: p.Type, Title: p.Title, Description: p.Description, Format: p.Format,
			Required: slices.Contains(s.Required, name), Options: p.options(), prop: p}
		if p.Type == "array" {
			f.Options = p.Items.options()
		}
		if len(p.Default) > 0 {
			if err := json.Unmarshal(p.Default, &f.Default); err != nil {
				return nil, fmt.Errorf("requested schema: property %q: default: %w", name, err)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// keysInOrder returns the keys of a JSON object in the order they are written.
func keysInOrder(obj json.RawMessage) ([]string, error) {
	if len(bytes.TrimSpace(obj)) == 0 || string(bytes.TrimSpace(obj)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// FillAnswer checks the content of an accepted answer against the question's
// requested schema and returns it with the schema's defaults put in for the
// fields it lacks (SEP-1034). Every problem is a fault.Invalid error naming
// the field: a missing required field without a default, a value of the wrong
// type or out of its bounds, a field the schema does not have.
func FillAnswer(schema json.RawMessage, content map[string]any) (map[string]any, error) {
	fields, err := Fields(schema)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, "the question's schema cannot be answered")
	}
	out := make(map[string]any, len(fields))
	var bad []fault.FieldError
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Name] = true
		v, ok := content[f.Name]
		if !ok || v == nil {
			switch {
			case f.Default != nil:
				out[f.Name] = f.Default
			case f.Required:
				bad = append(bad, fault.FieldError{Field: f.Name, Message: "required"})
			}
			continue
		}
		norm, msg := f.check(v)
		if msg != "" {
			bad = append(bad, fault.FieldError{Field: f.Name, Message: msg})
			continue
		}
		out[f.Name] = norm
	}
	var extra []string
	for k := range content {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		bad = append(bad, fault.FieldError{Field: k, Message: "not a field of the question"})
	}
	if len(bad) > 0 {
		return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid answer", Fields: bad}
	}
	return out, nil
}

// check returns v as the field's value, or what is wrong with it.
func (f *Field) check(v any) (any, string) {
	p := f.prop
	switch f.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, "must be a string"
		}
		n := len([]rune(s))
		if p.MinLength != nil && n < *p.MinLength {
			return nil, fmt.Sprintf("must be at least %d characters", *p.MinLength)
		}
		if p.MaxLength != nil && n > *p.MaxLength {
			return nil, fmt.Sprintf("must be at most %d characters", *p.MaxLength)
		}
		if len(f.Options) > 0 && !slices.Contains(f.Options, s) {
			return nil, "must be one of " + strings.Join(f.Options, ", ")
		}
		if msg := checkFormat(p.Format, s); msg != "" {
			return nil, msg
		}
		return s, ""
	case "number", "integer":
		x, ok := number(v)
		if !ok {
			return nil, "must be a number"
		}
		if f.Type == "integer" && x != math.Trunc(x) {
			return nil, "must be an integer"
		}
		if p.Minimum != nil && x < *p.Minimum {
			return nil, fmt.Sprintf("must be at least %v", *p.Minimum)
		}
		if p.Maximum != nil && x > *p.Maximum {
			return nil, fmt.Sprintf("must be at most %v", *p.Maximum)
		}
		if f.Type == "integer" {
			return int64(x), ""
		}
		return x, ""
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return b, ""
	case "array":
		items, ok := v.([]any)
		if !ok {
			if ss, isStrings := v.([]string); isStrings {
				for _, s := range ss {
					items = append(items, s)
				}
			} else {
				return nil, "must be a list"
			}
		}
		if p.MinItems != nil && len(items) < *p.MinItems {
			return nil, fmt.Sprintf("must have at least %d items", *p.MinItems)
		}
		if p.MaxItems != nil && len(items) > *p.MaxItems {
			return nil, fmt.Sprintf("must have at most %d items", *p.MaxItems)
		}
		out := make([]any, 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok || !slices.Contains(f.Options, s) {
				return nil, "each item must be one of " + strings.Join(f.Options, ", ")
			}
			out = append(out, s)
		}
		return out, ""
	}
	return nil, "has a type Relay cannot check"
}

// number reads a JSON number of any Go form.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// checkFormat checks the formats elicitation allows for strings.
func checkFormat(format, s string) string {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "must be an email address"
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return "must be a URI"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a date (YYYY-MM-DD)"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "must be a date and time (RFC 3339)"
		}
	}
	return ""
}
