package store

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonSamples = []string{
	`{"agent_id":"calc","text":"The sum is 5."}`,
	`{"agent_id":"calc","text":"tab\tquote\" slash\\ \/ \b\f\n\r é \u00e9 \ud83d\ude00 \uD83D"}`,
	"{\"text\":\"raw \xff byte\"}",
	`{}`, `{"a":""}`, `{"a":"1","b":"2","c":"3"}`, `{"a":"1", "b":"2"}`, `{"a":1}`, `{"a":{"b":"c"}}`,
	`{"a":"1"} `, `[]`, `"s"`, `null`, `{"a":"1",}`, `{"a":"1"`, `{"a":"1""b":"2"}`, `{"a"}`, `{"a":"\x"}`,
	`{"a":"\u12"}`, `{"a":"\u12G4"}`, "{\"a\":\"new\nline\"}", `{"a":"unterminated}`, `{"a":"1"}}`, `{`, ``,
	` { "model" : "gpt-4o" , "messages" : [ { "role" : "user" , "content" : "hi" } ] , "stream" : true } `,
	"\t[1,\r\n2]\n", `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[{}]`, `{"a":[]}`, `{"a" : [ ] }`, `{1:2}`, `{"a":}`,
	`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5`, `-1.5e10`, `1E+2`, `1e-`, `1e`, `2.e3`, `1.0e+`, `123456789012345678901234567890`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `[true,false,null]`, `[nan]`, `Infinity`, `"a" "b"`, `1 2`,
	` `, `[`, `]`, `{"a":1}x`, `"\u00e9"`, `"\/"`, "\"\x00\"", "\"\x7f\"",
}

func TestValidJSONIsJSONValid(t *testing.T) {
	for _, s := range jsonSamples {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", s, got, want)
		}
	}
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1, 10001} {
		deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		if got, want := validJSON([]byte(deep)), json.Valid([]byte(deep)); got != want {
			t.Errorf("validJSON of %d arrays nested = %v, json.Valid %v", depth, got, want)
		}
		broken := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth-1)
		if validJSON([]byte(broken)) {
			t.Errorf("validJSON of %d objects nested, one left open: true", depth)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if validJSON(b) != json.Valid(b) {
			t.Fatalf("validJSON(%q) = %v, json.Valid differs", b, validJSON(b))
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	for _, s := range []struct{ name, data string }{
		{"delta", `{"agent_id":"regulatory-search","text":" the applicable threshold"}`},
		{"request", modelRequestSample},
	} {
		data := []byte(s.data)
		b.Run(s.name+"/validJSON", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				validJSON(data)
			}
		})
		b.Run(s.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				json.Valid(data)
			}
		})
	}
}

// modelRequestSample is the body of a model request as a run stores it.
const modelRequestSample = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are the calculator. Use get-sum for every sum.\nAnswer in one sentence."},` +
	`{"role":"user","content":"What is 2 + 3?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get-sum__mcp__bench","arguments":"{\"a\":2,\"b\":3}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"The sum of 2 and 3 is 5."}],"stream":true,"stream_options":{"include_usage":true},` +
	`"tools":[{"type":"function","function":{"name":"get-sum__mcp__bench","description":"Adds two numbers and says the sum.","parameters":{"type":"object","properties":{"a":{"type":"number","description":"the first number"},"b":{"type":"number","description":"the second number"}},"required":["a","b"],"additionalProperties":false}}}],"temperature":0.2,"max_tokens":-1e3}`
