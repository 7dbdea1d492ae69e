package google

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "unsupported keywords stripped",
			in: `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object","additionalProperties":false,
				"properties":{"n":{"type":"integer","exclusiveMinimum":0,"multipleOf":2,"minimum":1,"format":"int64"},
				"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true,"minItems":1},
				"url":{"type":"string","format":"uri","pattern":"^https://"},
				"when":{"type":"string","format":"date-time","examples":["2026-01-01T00:00:00Z"]}},
				"required":["n","ghost"]}`,
			want: `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"format":"int64"},
				"tags":{"type":"array","items":{"type":"string"},"minItems":1},
				"url":{"type":"string","pattern":"^https://"},
				"when":{"type":"string","format":"date-time"}},
				"required":["n"]}`,
		},
		{
			name: "references inlined",
			in: `{"type":"object","$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},
				"properties":{"from":{"$ref":"#/$defs/Point","description":"start"},"to":{"$ref":"#/definitions/Missing"}}}`,
			want: `{"type":"object","properties":{"from":{"type":"object","description":"start","properties":{"x":{"type":"number"}},"required":["x"]},
				"to":{"type":"object"}}}`,
		},
		{
			name: "recursive reference stops",
			in:   `{"type":"object","$defs":{"Node":{"type":"object","properties":{"next":{"$ref":"#/$defs/Node"},"v":{"type":"string"}}}},"properties":{"head":{"$ref":"#/$defs/Node"}}}`,
			want: `{"type":"object","properties":{"head":` + nest(8) + `}}`,
		},
		{
			name: "nullable types",
			in: `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"integer"},{"type":"null"}]},
				"c":{"type":["string","number"]},"d":{"oneOf":[{"type":"string"},{"type":"boolean"}]}}}`,
			want: `{"type":"object","properties":{"a":{"type":"string","nullable":true},"b":{"type":"integer","nullable":true},
				"c":{"anyOf":[{"type":"string"},{"type":"number"}]},"d":{"anyOf":[{"type":"string"},{"type":"boolean"}]}}}`,
		},
		{
			name: "enums and const",
			in: `{"type":"object","properties":{"unit":{"type":"string","enum":["c","f"]},"level":{"type":"integer","enum":[1,2,3]},
				"kind":{"const":"fixed"},"untyped":{"enum":["x","y"]}}}`,
			want: `{"type":"object","properties":{"unit":{"type":"string","enum":["c","f"]},"level":{"type":"integer"},
				"kind":{"type":"string","enum":["fixed"]},"untyped":{"type":"string","enum":["x","y"]}}}`,
		},
		{
			name: "allOf merged",
			in: `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},
				{"properties":{"b":{"type":"number"}},"required":["b"]}],"description":"both"}`,
			want: `{"type":"object","description":"both","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a","b"]}`,
		},
		{
			name: "types inferred",
			in:   `{"properties":{"list":{"items":{"type":"string"}}}}`,
			want: `{"type":"object","properties":{"list":{"type":"array","items":{"type":"string"}}}}`,
		},
		{name: "no properties means no parameters", in: `{"type":"object","properties":{},"additionalProperties":false}`, want: `null`},
		{name: "no schema", in: ``, want: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Schema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			gotJSON, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(gotJSON, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatalf("want: %v", err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("schema (-want +got):\n%s\ngot %s", diff, gotJSON)
			}
		})
	}
	if _, err := Schema(json.RawMessage(`[1]`)); err == nil {
		t.Error("a schema that is not an object is accepted")
	}
}

// nest is the Node schema of "recursive reference stops" inlined depth times,
// then cut short.
func nest(depth int) string {
	if depth == 0 {
		return `{"type":"object"}`
	}
	return `{"type":"object","properties":{"next":` + nest(depth-1) + `,"v":{"type":"string"}}}`
}
