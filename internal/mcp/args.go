package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ArgsError says why a tool's arguments do not match its input schema. Its
// message is written for the model, which gets it back instead of a result.
type ArgsError struct {
	// Path is where in the arguments the problem is, as property names joined
	// with "." and array items as "[i]" ("[]" when the index is unknown, "*"
	// for a property whose name is unknown), e.g. "address.city" or "tags[]".
	// It is "" for the arguments object itself, and when Problem names the
	// properties in full (missing or unexpected properties).
	Path string
	// Problem says what is wrong, e.g. `expected number, got string`.
	Problem string
}

// Error returns e.g. `invalid arguments for tool: property "a": expected
// number, got string`.
func (e *ArgsError) Error() string {
	if e.Path == "" {
		return "invalid arguments for tool: " + e.Problem
	}
	return fmt.Sprintf("invalid arguments for tool: property %q: %s", e.Path, e.Problem)
}

// ValidateArgs checks a tool's arguments against its input schema before the
// call; an error is an [*ArgsError] to hand back to the model instead of
// calling the server.
//
// schema is the tool's inputSchema as the SDK gives it (a map[string]any on the
// client side), its JSON (json.RawMessage, []byte, string), a
// *jsonschema.Schema, or anything else that marshals to a JSON Schema. A nil, empty or `true` schema accepts any
// arguments object. Empty or `null` args mean `{}`; arguments must be a JSON
// object. Draft-07 and 2020-12 schemas are understood; a "$schema" naming another
// draft is read as 2020-12. A schema that cannot be compiled (for example one
// with a remote $ref) is not enforced, because the server is the final judge of
// its own arguments; [CheckSchema] reports such schemas.
//
// ValidateArgs compiles the schema on every call; code that validates the same
// tool's arguments repeatedly compiles it once with [CompileArgsSchema].
func ValidateArgs(schema any, args json.RawMessage) error {
	return CompileArgsSchema(schema).Validate(args)
}

// CheckSchema reports why schema cannot be used to validate arguments, or nil
// if it can (or there is nothing to check). [ValidateArgs] skips such schemas;
// CheckSchema lets the caller say so once, e.g. when the tools are listed.
func CheckSchema(schema any) error { return CompileArgsSchema(schema).Err() }

// ArgsSchema is a tool's input schema compiled for validating arguments. It is
// safe for concurrent use.
type ArgsSchema struct{ c *compiledSchema }

// CompileArgsSchema compiles a tool's input schema (see [ValidateArgs] for the
// forms it takes). It never fails: a schema that cannot be used accepts every
// object, and Err says why.
func CompileArgsSchema(schema any) *ArgsSchema {
	raw, err := schemaJSON(schema)
	switch {
	case err != nil:
		return &ArgsSchema{c: &compiledSchema{err: err}}
	case raw == nil:
		return &ArgsSchema{c: &compiledSchema{}}
	}
	return &ArgsSchema{c: compile(raw)}
}

// Err says why the schema cannot be enforced, or nil.
func (a *ArgsSchema) Err() error { return a.c.err }

// Validate checks args (a JSON object; empty or null mean {}) against the schema.
func (a *ArgsSchema) Validate(args json.RawMessage) error {
	instance, err := decodeArgs(args)
	if err != nil {
		return err
	}
	if a.c.resolved == nil {
		return nil // an unusable schema is not enforced; see ValidateArgs
	}
	if a.c.flat != nil && a.c.flat.accepts(instance) {
		return nil
	}
	if err := a.c.resolved.Validate(instance); err != nil {
		return explain(err, a.c.doc, instance)
	}
	return nil
}

// compiledSchema is a compiled input schema.
type compiledSchema struct {
	resolved *jsonschema.Resolved // nil: accept any object
	flat     *flatSchema          // the schema checked without jsonschema-go, when it is simple enough; nil otherwise
	doc      any                  // the schema as plain JSON values, to quote enum and const in errors
	err      error                // why the schema cannot be enforced
}

// decodeArgs decodes the arguments, which must be a JSON object.
func decodeArgs(args json.RawMessage) (map[string]any, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(trimmed, &v); err != nil {
		return nil, &ArgsError{Problem: "arguments are not valid JSON: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &ArgsError{Problem: "arguments must be a JSON object, got " + jsonTypeOf(v)}
	}
	return obj, nil
}

// schemaJSON returns the schema's JSON, or nil for no schema.
func schemaJSON(schema any) ([]byte, error) {
	var raw []byte
	switch s := schema.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	case string:
		raw = []byte(s)
	case *jsonschema.Schema:
		if s == nil {
			return nil, nil
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("marshal input schema: %w", err)
		}
		raw = b
	default:
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("marshal input schema: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return raw, nil
}

// Values of "$schema" that jsonschema-go validates.
const (
	draft07      = "http://json-schema.org/draft-07/schema#"
	draft2020_12 = "https://json-schema.org/draft/2020-12/schema"
)

// compile turns a schema's JSON into a compiledSchema.
func compile(raw []byte) *compiledSchema {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return &compiledSchema{err: fmt.Errorf("input schema is not valid JSON: %w", err)}
	}
	switch d := doc.(type) {
	case bool:
		if d {
			return &compiledSchema{doc: doc}
		}
	case map[string]any:
		if len(d) == 0 {
			return &compiledSchema{doc: doc}
		}
		if v, ok := d["$schema"].(string); ok {
			// jsonschema-go knows only the exact draft-07 and 2020-12 URIs;
			// servers write them in several spellings, and older drafts are
			// close enough to 2020-12 for tool arguments.
			switch {
			case strings.Contains(v, "draft-07"):
				d["$schema"] = draft07
			case strings.Contains(v, "2020-12"):
				d["$schema"] = draft2020_12
			default:
				delete(d, "$schema")
			}
			b, err := json.Marshal(d)
			if err != nil {
				return &compiledSchema{err: fmt.Errorf("input schema: %w", err)}
			}
			raw = b
		}
	default:
		return &compiledSchema{err: fmt.Errorf("input schema is a JSON %s, not an object", jsonTypeOf(doc))}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return &compiledSchema{err: fmt.Errorf("input schema: %w", err)}
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return &compiledSchema{err: fmt.Errorf("input schema: %w", err)}
	}
	cs := &compiledSchema{resolved: rs, doc: doc}
	if d, ok := doc.(map[string]any); ok {
		cs.flat = flatten(d)
	}
	return cs
}

// flatSchema is an input schema that says no more than which properties the
// arguments must have, each property's JSON type, and whether others may be
// there: what most tools' schemas say. Arguments it accepts are valid; those
// it does not are handed to jsonschema-go, which says why. It spares a tool
// call jsonschema-go's walk through the arguments, most of the cost of
// validating them.
type flatSchema struct {
	types    map[string]string // property → its JSON type; "" for any
	required []string
	closed   bool // additionalProperties: false
}

// Keywords that say nothing about whether a value is valid.
var annotations = map[string]bool{
	"$schema": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// jsonTypes are the values of "type" a flatSchema checks.
var jsonTypes = map[string]bool{
	"null": true, "boolean": true, "integer": true, "number": true, "string": true, "array": true, "object": true,
}

// flatten returns the flatSchema of a schema, or nil if it says more than one
// can (any keyword but annotations, "type": "object", "properties",
// "required" and a boolean "additionalProperties"; a property's schema
// anything but annotations and one "type").
func flatten(doc map[string]any) *flatSchema {
	f := &flatSchema{types: map[string]string{}}
	for k, v := range doc {
		switch {
		case annotations[k]:
		case k == "type":
			if v != "object" {
				return nil
			}
		case k == "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.closed = !b
		case k == "required":
			names, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, n := range names {
				s, ok := n.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, s)
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range props {
				t, ok := flatType(p)
				if !ok {
					return nil
				}
				f.types[name] = t
			}
		default:
			return nil
		}
	}
	return f
}

// flatType is the JSON type a property's schema asks for ("" for any), if it
// asks for nothing else.
func flatType(schema any) (string, bool) {
	if b, ok := schema.(bool); ok {
		return "", b
	}
	m, ok := schema.(map[string]any)
	if !ok {
		return "", false
	}
	t := ""
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "type":
			s, ok := v.(string)
			if !ok || !jsonTypes[s] {
				return "", false
			}
			t = s
		default:
			return "", false
		}
	}
	return t, true
}

// accepts reports whether args are valid; false means they may not be.
func (f *flatSchema) accepts(args map[string]any) bool {
	for _, name := range f.required {
		if _, ok := args[name]; !ok {
			return false
		}
	}
	for k, v := range args {
		t, ok := f.types[k]
		switch {
		case !ok:
			if f.closed {
				return false
			}
		case t == "", t == jsonTypeOf(v):
		case t == "number" && jsonTypeOf(v) == "integer":
		default:
			return false
		}
	}
	return true
}

// jsonTypeOf names the JSON type of a decoded value the way JSON Schema does.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// explain turns a jsonschema-go validation error into an *ArgsError.
//
// jsonschema-go wraps the error once per schema it descends into, as
// "validating <schema path>: …", where the schema path is a JSON Pointer into
// the schema ("root" for the schema itself, "/properties/a", "/$defs/X", …).
// The chain of schema paths gives the path in the arguments: a step into
// "properties/<name>" is that property, "items" an array item, and so on; a
// jump that is not a step down is a $ref. The innermost message names the
// keyword that failed and is rewritten into plain words.
func explain(err error, doc any, args map[string]any) error {
	var frames []string
	for {
		inner := errors.Unwrap(err)
		msg := err.Error()
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok || inner == nil || !strings.HasSuffix(rest, ": "+inner.Error()) {
			break
		}
		frames = append(frames, strings.TrimSuffix(rest, ": "+inner.Error()))
		err = inner
	}
	var path []string
	prev := ""
	for i, f := range frames {
		p := f
		if p == "root" {
			p = ""
		}
		if i > 0 && strings.HasPrefix(p, prev+"/") {
			path = append(path, instanceSteps(strings.Split(p[len(prev)+1:], "/"))...)
		}
		prev = p
	}
	schemaAt := ""
	if len(frames) > 0 {
		schemaAt = frames[len(frames)-1]
	}
	value, found := valueAt(args, path)
	return problem(err.Error(), path, pointer(doc, schemaAt), value, found)
}

// instanceSteps converts the schema path segments of one step down the schema
// into steps in the arguments: property names, "[i]" and "[]" for array items,
// "*" for a property whose name the schema path does not tell.
func instanceSteps(segs []string) []string {
	var steps []string
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				i++
				steps = append(steps, unescapePointer(segs[i]))
			}
		case "prefixItems":
			if i+1 < len(segs) {
				i++
				steps = append(steps, "["+segs[i]+"]")
			}
		case "items":
			if i+1 < len(segs) && isIndex(segs[i+1]) { // draft-07 tuple form
				i++
				steps = append(steps, "["+segs[i]+"]")
			} else {
				steps = append(steps, "[]")
			}
		case "additionalItems", "unevaluatedItems", "contains":
			steps = append(steps, "[]")
		case "additionalProperties", "unevaluatedProperties":
			steps = append(steps, "*")
		case "patternProperties":
			i++ // the pattern, not the property's name
			steps = append(steps, "*")
		case "$defs", "definitions", "dependentSchemas", "dependencies",
			"allOf", "anyOf", "oneOf":
			i++ // skip the name or index: these do not move in the arguments
		}
	}
	return steps
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// joinPath renders steps as "a.b[0].c".
func joinPath(steps []string) string {
	var b strings.Builder
	for _, s := range steps {
		if !strings.HasPrefix(s, "[") && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

var (
	reType     = regexp.MustCompile(`(?s)^type: .* has type "([a-z]+)", want "([a-z]+)"$`)
	reTypes    = regexp.MustCompile(`(?s)^type: .* has type "([a-z]+)", want one of "([a-z, ]+)"$`)
	reRequired = regexp.MustCompile(`^required: missing properties: \[(.*)\]$`)
	reExtra    = regexp.MustCompile(`^unexpected additional properties \[(.*)\]$`)
	reQuoted   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// limits words the bounds keywords; %s is the bound as written in the schema.
var limits = map[string]string{
	"minimum":          "must be at least %s",
	"maximum":          "must be at most %s",
	"exclusiveMinimum": "must be greater than %s",
	"exclusiveMaximum": "must be less than %s",
	"multipleOf":       "must be a multiple of %s",
	"minLength":        "must be at least %s characters long",
	"maxLength":        "must be at most %s characters long",
	"pattern":          "must match the regular expression %s",
	"minItems":         "must have at least %s items",
	"maxItems":         "must have at most %s items",
	"minProperties":    "must have at least %s properties",
	"maxProperties":    "must have at most %s properties",
}

// problem rewrites the innermost jsonschema-go message msg, found at path in
// the arguments while validating against the subschema sub. value is the
// offending value when path leads to it (found).
func problem(msg string, path []string, sub, value any, found bool) *ArgsError {
	at := joinPath(path)
	if m := reType.FindStringSubmatch(msg); m != nil {
		return &ArgsError{Path: at, Problem: "expected " + m[2] + ", got " + m[1]}
	}
	if m := reTypes.FindStringSubmatch(msg); m != nil {
		want := strings.ReplaceAll(m[2], ", ", " or ")
		return &ArgsError{Path: at, Problem: "expected " + want + ", got " + m[1]}
	}
	if m := reRequired.FindStringSubmatch(msg); m != nil {
		names := quotedNames(m[1], path)
		if len(names) == 1 {
			return &ArgsError{Problem: "missing required property " + names[0]}
		}
		return &ArgsError{Problem: "missing required properties " + strings.Join(names, ", ")}
	}
	if m := reExtra.FindStringSubmatch(msg); m != nil {
		names := quotedNames(m[1], path)
		slices.Sort(names) // they come in map order
		if len(names) == 1 {
			return &ArgsError{Problem: "unexpected property " + names[0] + " (not in the tool's schema)"}
		}
		return &ArgsError{Problem: "unexpected properties " + strings.Join(names, ", ") + " (not in the tool's schema)"}
	}
	if b, ok := sub.(bool); ok && !b {
		if at == "" {
			return &ArgsError{Problem: "the tool's schema accepts no arguments"}
		}
		return &ArgsError{Path: at, Problem: "is not allowed"}
	}
	obj, _ := sub.(map[string]any)
	keyword, _, _ := strings.Cut(msg, ":")
	if format, ok := limits[keyword]; ok {
		if bound, ok := obj[keyword]; ok {
			return &ArgsError{Path: at, Problem: fmt.Sprintf(format, jsonList([]any{bound}))}
		}
	}
	switch keyword {
	case "enum":
		if vals, ok := obj["enum"].([]any); ok {
			return &ArgsError{Path: at, Problem: "must be one of " + jsonList(vals)}
		}
	case "const":
		if v, ok := obj["const"]; ok {
			return &ArgsError{Path: at, Problem: "must be " + jsonList([]any{v})}
		}
	case "anyOf", "oneOf":
		if strings.HasPrefix(msg, "oneOf: validated against both") {
			return &ArgsError{Path: at, Problem: "matches more than one of the allowed forms (oneOf)"}
		}
		if want, ok := branchTypes(obj[keyword]); ok && found && !typeIn(jsonTypeOf(value), want) {
			return &ArgsError{Path: at, Problem: "expected " + strings.Join(want, " or ") + ", got " + jsonTypeOf(value)}
		}
		return &ArgsError{Path: at, Problem: "does not match any of the allowed forms (" + keyword + ")"}
	case "not":
		return &ArgsError{Path: at, Problem: "matches a form that is not allowed (not)"}
	}
	return &ArgsError{Path: at, Problem: msg}
}

// branchTypes returns the types of anyOf or oneOf branches that each say no
// more than their type, as in {"anyOf":[{"type":"string"},{"type":"null"}]}.
func branchTypes(branches any) ([]string, bool) {
	list, ok := branches.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	var types []string
	for _, b := range list {
		m, ok := b.(map[string]any)
		if !ok {
			return nil, false
		}
		for k := range m {
			if k != "type" && k != "description" && k != "title" {
				return nil, false
			}
		}
		switch t := m["type"].(type) {
		case string:
			types = append(types, t)
		case []any:
			for _, x := range t {
				s, ok := x.(string)
				if !ok {
					return nil, false
				}
				types = append(types, s)
			}
		default:
			return nil, false
		}
	}
	return types, true
}

// typeIn reports whether a value of JSON type got is of one of the types want.
func typeIn(got string, want []string) bool {
	for _, w := range want {
		if w == got || w == "number" && got == "integer" {
			return true
		}
	}
	return false
}

// valueAt returns the value at path in args; paths with unknown steps ("[]",
// "*") lead nowhere.
func valueAt(args any, path []string) (any, bool) {
	cur := args
	for _, step := range path {
		if step == "[]" || step == "*" {
			return nil, false
		}
		if strings.HasPrefix(step, "[") {
			arr, ok := cur.([]any)
			i, err := strconv.Atoi(strings.Trim(step, "[]"))
			if !ok || err != nil || i < 0 || i >= len(arr) {
				return nil, false
			}
			cur = arr[i]
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[step]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// quotedNames turns the %q-quoted names of a jsonschema-go message into quoted
// paths below path.
func quotedNames(list string, path []string) []string {
	var out []string
	for _, q := range reQuoted.FindAllString(list, -1) {
		name, err := strconv.Unquote(q)
		if err != nil {
			name = q
		}
		out = append(out, strconv.Quote(joinPath(append(path[:len(path):len(path)], name))))
	}
	return out
}

// jsonList renders values as JSON, separated by ", ".
func jsonList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

// pointer returns the value at the JSON Pointer p ("root" or "" for doc itself)
// in doc, or nil.
func pointer(doc any, p string) any {
	if p == "" || p == "root" {
		return doc
	}
	if !strings.HasPrefix(p, "/") {
		return nil // an $id, not a path
	}
	cur := doc
	for _, seg := range strings.Split(p[1:], "/") {
		seg = unescapePointer(seg)
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
