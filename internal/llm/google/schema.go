package google

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Schema turns a tool's JSON Schema (as MCP servers and Relay's built-in
// tools write it) into the parameters of a Gemini function declaration, which
// take a subset of OpenAPI 3.0's Schema object. It returns nil for a tool
// without parameters: Gemini refuses an object schema with no properties.
//
// What it changes, at every level of the schema:
//   - local references ($ref to #/$defs/… or #/definitions/…) are inlined, up
//     to a depth of 8 (deeper ones, and other references, become a bare
//     object); $defs and definitions are then dropped;
//   - a type list becomes its one non-null type, with nullable: true for
//     "null" (several non-null types become anyOf);
//   - oneOf becomes anyOf; a null branch of either becomes nullable: true;
//     allOf is merged into one schema (properties, required, the rest of the
//     first branch that sets it);
//   - const becomes a one-value enum; enum is kept for strings only;
//   - format is kept only where Gemini knows it (date-time and enum for
//     strings, int32 and int64, float and double);
//   - required keeps only names of declared properties;
//   - type object is added where properties are given without a type, and type
//     array where items are;
//   - every other keyword is dropped, among them $schema, $id, $comment,
//     additionalProperties, patternProperties, unevaluatedProperties,
//     dependentRequired, exclusiveMinimum, exclusiveMaximum, multipleOf,
//     uniqueItems, contains, prefixItems, not, if/then/else, examples, const
//     (rewritten as above), readOnly and writeOnly.
func Schema(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not a JSON Schema object: %w", err)
	}
	defs := map[string]any{}
	for _, k := range []string{"definitions", "$defs"} {
		if d, ok := root[k].(map[string]any); ok {
			for name, s := range d {
				defs["#/"+k+"/"+name] = s
			}
		}
	}
	out := clean(root, defs, 0)
	if props, _ := out["properties"].(map[string]any); len(props) == 0 && (out["type"] == "object" || out["type"] == nil) {
		return nil, nil
	}
	return out, nil
}

// maxRefDepth bounds the inlining of references, which may be recursive.
const maxRefDepth = 8

// clean is Schema's work on one schema object.
func clean(s map[string]any, defs map[string]any, depth int) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		def, found := defs[ref].(map[string]any)
		if !found || depth >= maxRefDepth {
			out := map[string]any{"type": "object"}
			if d, ok := s["description"].(string); ok {
				out["description"] = d
			}
			return out
		}
		merged := map[string]any{}
		for k, v := range def {
			merged[k] = v
		}
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		return clean(merged, defs, depth+1)
	}
	if all, ok := s["allOf"].([]any); ok {
		s = mergeAll(s, all, defs, depth)
	}
	out := map[string]any{}
	nullable := false
	for k, v := range s {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				if t == "null" {
					nullable = true
				} else {
					out["type"] = t
				}
			case []any:
				var types []any
				for _, e := range t {
					if e == "null" {
						nullable = true
					} else if str, ok := e.(string); ok {
						types = append(types, str)
					}
				}
				switch len(types) {
				case 0:
				case 1:
					out["type"] = types[0]
				default:
					var branches []any
					for _, t := range types {
						branches = append(branches, map[string]any{"type": t})
					}
					out["anyOf"] = branches
				}
			}
		case "description", "title", "pattern", "default", "example",
			"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
			"minProperties", "maxProperties", "propertyOrdering":
			out[k] = v
		case "nullable":
			if b, ok := v.(bool); ok && b {
				nullable = true
			}
		case "properties":
			if props, ok := v.(map[string]any); ok {
				cleaned := map[string]any{}
				for name, p := range props {
					if ps, ok := p.(map[string]any); ok {
						cleaned[name] = clean(ps, defs, depth)
					}
				}
				out["properties"] = cleaned
			}
		case "items":
			switch it := v.(type) {
			case map[string]any:
				out["items"] = clean(it, defs, depth)
			case []any:
				if len(it) > 0 {
					if first, ok := it[0].(map[string]any); ok {
						out["items"] = clean(first, defs, depth)
					}
				}
			}
		case "anyOf", "oneOf":
			branches, _ := v.([]any)
			var kept []any
			for _, b := range branches {
				bs, ok := b.(map[string]any)
				if !ok {
					continue
				}
				if bs["type"] == "null" && len(bs) == 1 {
					nullable = true
					continue
				}
				kept = append(kept, clean(bs, defs, depth))
			}
			switch len(kept) {
			case 0:
			case 1:
				for bk, bv := range kept[0].(map[string]any) {
					if _, set := out[bk]; !set {
						out[bk] = bv
					}
				}
			default:
				out["anyOf"] = kept
			}
		case "const":
			if str, ok := v.(string); ok {
				out["enum"] = []any{str}
			}
		}
	}
	if e, ok := s["enum"].([]any); ok && out["enum"] == nil {
		if vals := stringsOnly(e); vals != nil {
			out["enum"] = vals
		}
	}
	if f, ok := s["format"].(string); ok && knownFormat(out["type"], f) {
		out["format"] = f
	}
	if out["type"] == nil && out["anyOf"] == nil {
		switch {
		case out["properties"] != nil:
			out["type"] = "object"
		case out["items"] != nil:
			out["type"] = "array"
		case out["enum"] != nil:
			out["type"] = "string"
		}
	}
	if out["enum"] != nil && out["type"] != "string" {
		delete(out, "enum")
	}
	if req, ok := s["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		var names []any
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil && !slices.Contains(names, any(name)) {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			out["required"] = names
		}
	}
	if nullable {
		out["nullable"] = true
	}
	return out
}

// mergeAll folds allOf's branches into s: their properties and required lists
// are united, and any other keyword is taken from s or else the first branch
// that sets it.
func mergeAll(s map[string]any, all []any, defs map[string]any, depth int) map[string]any {
	merged := map[string]any{}
	for k, v := range s {
		if k != "allOf" {
			merged[k] = v
		}
	}
	props := map[string]any{}
	if p, ok := s["properties"].(map[string]any); ok {
		for k, v := range p {
			props[k] = v
		}
	}
	var required []any
	if r, ok := s["required"].([]any); ok {
		required = append(required, r...)
	}
	for _, b := range all {
		bs, ok := b.(map[string]any)
		if !ok {
			continue
		}
		if ref, ok := bs["$ref"].(string); ok && depth < maxRefDepth {
			if def, found := defs[ref].(map[string]any); found {
				bs = def
			}
		}
		for k, v := range bs {
			switch k {
			case "properties":
				if p, ok := v.(map[string]any); ok {
					for name, ps := range p {
						if _, set := props[name]; !set {
							props[name] = ps
						}
					}
				}
			case "required":
				if r, ok := v.([]any); ok {
					required = append(required, r...)
				}
			case "$ref":
			default:
				if _, set := merged[k]; !set {
					merged[k] = v
				}
			}
		}
	}
	if len(props) > 0 {
		merged["properties"] = props
	}
	if len(required) > 0 {
		merged["required"] = required
	}
	return merged
}

// stringsOnly returns the enum values if all are strings, else nil.
func stringsOnly(values []any) []any {
	for _, v := range values {
		if _, ok := v.(string); !ok {
			return nil
		}
	}
	return values
}

// knownFormat reports whether Gemini accepts format f for type t.
func knownFormat(t any, f string) bool {
	switch t {
	case "string":
		return f == "date-time" || f == "enum"
	case "integer":
		return f == "int32" || f == "int64"
	case "number":
		return f == "float" || f == "double"
	}
	return false
}
