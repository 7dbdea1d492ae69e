package mcp

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

const (
	numberA = `{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`
	closed  = `{"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":false}`
	nested  = `{"type":"object","properties":{"address":{"type":"object",
		"properties":{"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{4}[A-Z]{2}$"}},
		"required":["city"],"additionalProperties":false}}}`
	weather = `{"type":"object","properties":{
		"city":{"type":"string","minLength":1},
		"unit":{"type":"string","enum":["celsius","fahrenheit"]},
		"days":{"type":"integer","minimum":1,"maximum":14},
		"tags":{"type":"array","items":{"type":"string"},"maxItems":3},
		"note":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`
	defs = `{"$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
		"type":"object","properties":{"from":{"$ref":"#/$defs/Point"},"path":{"type":"array","items":{"$ref":"#/$defs/Point"}}},
		"required":["from"]}`
	// As zod-to-json-schema writes it (TypeScript MCP servers).
	zodDraft07 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"properties":{"item":{"$ref":"#/definitions/Item"}},"required":["item"],"additionalProperties":false,
		"definitions":{"Item":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}}}`
	oldDraft04 = `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"number"}}}`
	tuple      = `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]}}}`
)

func TestValidateArgs(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		args   string
		want   string // the error message; "" for valid arguments
	}{
		{"valid", numberA, `{"a":1.5}`, ""},
		{"integer is a number", numberA, `{"a":2}`, ""},
		{"required missing", numberA, `{}`, `invalid arguments for tool: missing required property "a"`},
		{"required missing, empty args", numberA, ``, `invalid arguments for tool: missing required property "a"`},
		{"required missing, null args", numberA, `null`, `invalid arguments for tool: missing required property "a"`},
		{"wrong type", numberA, `{"a":"1"}`, `invalid arguments for tool: property "a": expected number, got string`},
		{"additional property", closed, `{"a":1,"b":2}`, `invalid arguments for tool: unexpected property "b" (not in the tool's schema)`},
		{"additional properties", closed, `{"b":2,"c":3}`, `invalid arguments for tool: unexpected properties "b", "c" (not in the tool's schema)`},
		{"nested valid", nested, `{"address":{"city":"Utrecht","zip":"3511AB"}}`, ""},
		{"nested required", nested, `{"address":{"zip":"3511AB"}}`, `invalid arguments for tool: missing required property "address.city"`},
		{"nested type", nested, `{"address":{"city":3511}}`, `invalid arguments for tool: property "address.city": expected string, got integer`},
		{"nested additional", nested, `{"address":{"city":"Utrecht","country":"NL"}}`, `invalid arguments for tool: unexpected property "address.country" (not in the tool's schema)`},
		{"nested pattern", nested, `{"address":{"city":"Utrecht","zip":"3511"}}`, `invalid arguments for tool: property "address.zip": must match the regular expression "^[0-9]{4}[A-Z]{2}$"`},
		{"nested not an object", nested, `{"address":"Utrecht"}`, `invalid arguments for tool: property "address": expected object, got string`},
		{"enum valid", weather, `{"unit":"celsius"}`, ""},
		{"enum", weather, `{"unit":"kelvin"}`, `invalid arguments for tool: property "unit": must be one of "celsius", "fahrenheit"`},
		{"minLength", weather, `{"city":""}`, `invalid arguments for tool: property "city": must be at least 1 characters long`},
		{"minimum", weather, `{"days":0}`, `invalid arguments for tool: property "days": must be at least 1`},
		{"maximum", weather, `{"days":15}`, `invalid arguments for tool: property "days": must be at most 14`},
		{"integer", weather, `{"days":1.5}`, `invalid arguments for tool: property "days": expected integer, got number`},
		{"array item", weather, `{"tags":["a",2]}`, `invalid arguments for tool: property "tags[]": expected string, got integer`},
		{"maxItems", weather, `{"tags":["a","b","c","d"]}`, `invalid arguments for tool: property "tags": must have at most 3 items`},
		{"nullable valid", weather, `{"note":null}`, ""},
		{"nullable wrong type", weather, `{"note":5}`, `invalid arguments for tool: property "note": expected string or null, got integer`},
		{"$ref valid", defs, `{"from":{"x":1,"y":2},"path":[{"x":3,"y":4}]}`, ""},
		{"$ref type", defs, `{"from":{"x":"1","y":2}}`, `invalid arguments for tool: property "from.x": expected number, got string`},
		{"$ref required", defs, `{"from":{"x":1}}`, `invalid arguments for tool: missing required property "from.y"`},
		{"$ref in items", defs, `{"from":{"x":1,"y":2},"path":[{"x":3}]}`, `invalid arguments for tool: missing required property "path[].y"`},
		{"draft-07 valid", zodDraft07, `{"item":{"id":7}}`, ""},
		{"draft-07 definitions", zodDraft07, `{"item":{"id":"7"}}`, `invalid arguments for tool: property "item.id": expected integer, got string`},
		{"draft-07 additional", zodDraft07, `{"item":{"id":7},"extra":true}`, `invalid arguments for tool: unexpected property "extra" (not in the tool's schema)`},
		{"draft-04 read as 2020-12", oldDraft04, `{"a":"x"}`, `invalid arguments for tool: property "a": expected number, got string`},
		{"tuple", tuple, `{"pair":["a","b"]}`, `invalid arguments for tool: property "pair[1]": expected number, got string`},
		{"args an array", numberA, `[{"a":1}]`, `invalid arguments for tool: arguments must be a JSON object, got array`},
		{"args a string", numberA, `"a=1"`, `invalid arguments for tool: arguments must be a JSON object, got string`},
		{"args a number", `{}`, `1`, `invalid arguments for tool: arguments must be a JSON object, got integer`},
		{"args not JSON", numberA, `{"a":`, `invalid arguments for tool: arguments are not valid JSON: unexpected end of JSON input`},
		{"empty schema", `{}`, `{"anything":[1,"two",{"three":3}]}`, ""},
		{"true schema", `true`, `{"anything":1}`, ""},
		{"null schema", `null`, `{"anything":1}`, ""},
		{"object schema without properties", `{"type":"object"}`, `{"anything":1}`, ""},
		{"false schema", `false`, `{}`, `invalid arguments for tool: the tool's schema accepts no arguments`},
		{"remote $ref is not enforced", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, `{"a":1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateArgs(json.RawMessage(tt.schema), json.RawMessage(tt.args))
			got := ""
			if err != nil {
				got = err.Error()
				var ae *ArgsError
				if !errors.As(err, &ae) {
					t.Errorf("error %T is not an *ArgsError", err)
				}
			}
			if got != tt.want {
				t.Errorf("ValidateArgs(%s, %s)\n got %s\nwant %s", tt.schema, tt.args, got, tt.want)
			}
		})
	}
}

func TestValidateArgsSchemaForms(t *testing.T) {
	var asMap map[string]any // what the SDK client puts in Tool.InputSchema
	if err := json.Unmarshal([]byte(numberA), &asMap); err != nil {
		t.Fatal(err)
	}
	var asSchema jsonschema.Schema
	if err := json.Unmarshal([]byte(numberA), &asSchema); err != nil {
		t.Fatal(err)
	}
	forms := map[string]any{
		"map[string]any":     asMap,
		"json.RawMessage":    json.RawMessage(numberA),
		"[]byte":             []byte(numberA),
		"string":             numberA,
		"*jsonschema.Schema": &asSchema,
	}
	for name, schema := range forms {
		t.Run(name, func(t *testing.T) {
			if err := ValidateArgs(schema, json.RawMessage(`{"a":1}`)); err != nil {
				t.Errorf("valid arguments: %v", err)
			}
			err := ValidateArgs(schema, json.RawMessage(`{"a":true}`))
			var ae *ArgsError
			if !errors.As(err, &ae) || ae.Path != "a" || ae.Problem != "expected number, got boolean" {
				t.Errorf("invalid arguments: %#v", err)
			}
		})
	}
	for name, schema := range map[string]any{"nil": nil, "nil *jsonschema.Schema": (*jsonschema.Schema)(nil), "empty RawMessage": json.RawMessage(nil)} {
		if err := ValidateArgs(schema, json.RawMessage(`{"x":1}`)); err != nil {
			t.Errorf("%s schema: %v", name, err)
		}
		if err := ValidateArgs(schema, json.RawMessage(`[1]`)); err == nil {
			t.Errorf("%s schema accepted an array", name)
		}
	}
}

func TestCheckSchema(t *testing.T) {
	for _, schema := range []string{numberA, defs, zodDraft07, oldDraft04, `{}`, `true`} {
		if err := CheckSchema(json.RawMessage(schema)); err != nil {
			t.Errorf("CheckSchema(%s): %v", schema, err)
		}
	}
	if err := CheckSchema(nil); err != nil {
		t.Errorf("CheckSchema(nil): %v", err)
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		`{"type":"object","properties":{"a":{"type":"number","exclusiveMinimum":true}}}`, // draft-04 style
		`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
		`[1,2]`,
		`{"type":`,
	} {
		if err := CheckSchema(json.RawMessage(schema)); err == nil {
			t.Errorf("CheckSchema(%s) = nil, want an error", schema)
		}
		if err := ValidateArgs(json.RawMessage(schema), json.RawMessage(`{"a":1}`)); err != nil {
			t.Errorf("ValidateArgs with unusable schema %s: %v", schema, err)
		}
	}
}

func TestCompiledSchemaConcurrent(t *testing.T) {
	schema := CompileArgsSchema(json.RawMessage(`{"type":"object","properties":{"p":{"type":"number"}}}`))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 50 {
				err := schema.Validate(json.RawMessage(`{"p":"x"}`))
				if err == nil || err.Error() != `invalid arguments for tool: property "p": expected number, got string` {
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkValidateArgs(b *testing.B) {
	var schema map[string]any
	if err := json.Unmarshal([]byte(weather), &schema); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"city":"Utrecht","unit":"celsius","days":3,"tags":["a"],"note":null}`)
	compiled := CompileArgsSchema(schema)
	for b.Loop() {
		if err := compiled.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

// Schemas a flatSchema checks, and arguments to check against them.
var (
	flatSchemas = []string{
		numberA,
		closed,
		`{"type":"object","properties":{"a":{"type":"number","description":"first"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","title":"search",
			"properties":{"query":{"type":"string"},"top_k":{"type":"integer","default":5},"strict":{"type":"boolean"},
			"filters":{"type":"object"},"ids":{"type":"array"},"nothing":{"type":"null"},"any":{},"yes":true},
			"required":["query"]}`,
		`{"properties":{"a":{"type":"string"}},"required":["b"]}`,
	}
	flatArgs = []string{
		`{}`, ``, `null`, `{"a":1}`, `{"a":1.5}`, `{"a":-0}`, `{"a":1e300}`, `{"a":"1"}`, `{"a":null}`, `{"a":true}`,
		`{"a":1,"b":2}`, `{"a":1,"b":"2"}`, `{"a":1,"a":"x"}`, `{"a":"x","a":1}`, `{"b":2}`, `{"c":3}`,
		`{"query":"q"}`, `{"query":"q","top_k":3}`, `{"query":"q","top_k":3.5}`, `{"query":"q","top_k":3.0}`,
		`{"query":"q","strict":false,"filters":{"x":[1]},"ids":["a",2],"nothing":null,"any":[{}],"yes":"y"}`,
		`{"query":"q","filters":[]}`, `{"query":"q","ids":{}}`, `{"query":"q","nothing":0}`, `{"query":1}`,
		`{"query":"q","extra":{"deep":[1,2]}}`, `{"QUERY":"q"}`, `{"a":"x","b":2}`, `{"b":"x"}`,
	}
)

// A flat schema accepts exactly what jsonschema-go accepts.
func TestFlatSchemaIsJSONSchema(t *testing.T) {
	for _, schema := range flatSchemas {
		c := CompileArgsSchema(json.RawMessage(schema))
		if c.c.flat == nil {
			t.Fatalf("schema %s is not flat", schema)
		}
		for _, args := range flatArgs {
			instance, err := decodeArgs(json.RawMessage(args))
			if err != nil {
				t.Fatalf("decode %s: %v", args, err)
			}
			flat := c.c.flat.accepts(instance)
			full := c.c.resolved.Validate(instance) == nil
			if flat != full {
				t.Errorf("schema %s, args %s: flat accepts %v, jsonschema-go %v", schema, args, flat, full)
			}
		}
	}
}

// Schemas that say more than a flatSchema can are left to jsonschema-go.
func TestFlatSchemaOnlyWhenFlat(t *testing.T) {
	for _, schema := range []string{nested, weather, defs, zodDraft07, tuple,
		`{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":1}}}`,
		`{"type":"object","properties":{"a":false}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1}`,
		`{"type":"object","properties":{"a":{"type":"text"}}}`,
		`{"type":"object","required":"a"}`,
	} {
		if c := CompileArgsSchema(json.RawMessage(schema)); c.c.flat != nil {
			t.Errorf("schema %s is taken as flat", schema)
		}
	}
}

func FuzzFlatSchema(f *testing.F) {
	for _, args := range flatArgs {
		f.Add(args)
	}
	compiled := make([]*ArgsSchema, len(flatSchemas))
	for i, s := range flatSchemas {
		compiled[i] = CompileArgsSchema(json.RawMessage(s))
	}
	f.Fuzz(func(t *testing.T, args string) {
		instance, err := decodeArgs(json.RawMessage(args))
		if err != nil {
			return
		}
		for i, c := range compiled {
			if flat, full := c.c.flat.accepts(instance), c.c.resolved.Validate(instance) == nil; flat != full {
				t.Errorf("schema %s, args %s: flat accepts %v, jsonschema-go %v", flatSchemas[i], args, flat, full)
			}
		}
	})
}

func BenchmarkValidateFlatArgs(b *testing.B) {
	compiled := CompileArgsSchema(json.RawMessage(flatSchemas[2]))
	args := json.RawMessage(`{"a":2,"b":3}`)
	for b.Loop() {
		if err := compiled.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
