package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// chunkSamples are data events as providers send them, and some that no
// provider should, for the decoder to agree with encoding/json on.
var chunkSamples = []struct {
	data string
	fast bool // decoded without encoding/json
}{
	{`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`, true},
	{`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}],"usage":null}`, true},
	{`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, true},
	{`{"choices":[{"index":0,"delta":{"content":null},"finish_reason":"length"}]}`, true},
	{`{"model":"llama3","created_at":"2024-01-01T00:00:00Z","choices":[{"index":0,"delta":{"content":"日本語のテキスト ✓ 😀"}}]}`, true},
	{` { "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } ` + "\n", true},
	{`{"choices":[{"index":0,"delta":{"content":"<1700000000000000000>"}}],"x":[1,-2.5e3,true,false,null,{"a":[]}],"error":null}`, true},
	{`{"choices":[]}`, true},
	{`{"choices":null}`, true},
	{`{"choices":[{"index":1,"delta":{"content":"second"}},{"index":0,"delta":{"content":"first"}}]}`, true},
	{`{"choices":[{"index":0,"delta":null,"finish_reason":null}]}`, true},
	{`{}`, true},
	{`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"custom_blocklists":[]}}]}`, true},
	{`{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter","content_filter_results":{"violence":{"filtered":true,"severity":"medium"}}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"content":"x"},"content_filter_results":null}]}`, true},
	{`{"choices":[{"index":0,"delta":{"content":"x"},"content_filter_results": {"a" : 1} }]}`, true},
	// Tool calls, streamed in pieces.
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"sum","arguments":"{\"a\":"}}]}}]}`, true},
	{`{"id":"chatcmpl-X","object":"chat.completion.chunk","created":1795753945,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}]}`, true},
	{`{"id":"chatcmpl-X","object":"chat.completion.chunk","created":1795753945,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_KYO5","type":"function","function":{"name":"get-sum__mcp__bench","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`, true},
	{`{"id":"chatcmpl-X","object":"chat.completion.chunk","created":1795753945,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":2,\"b\":3}"}}]},"logprobs":null,"finish_reason":null}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2"}},{"index":1,"id":"call_2","function":{"name":"other","arguments":""}}]}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":null,"id":"call_3","function":{"name":"x"}}]}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"no index","arguments":"{}"},"id":"c"}]}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":null,"content":"x"}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"index":1,"id":"a","id":"b","function":{"name":"n","name":"m","x":[1]}}]}}]}`, true},
	// The usage at the end.
	{`{"id":"chatcmpl-X","object":"chat.completion.chunk","created":1795753945,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":8,"total_tokens":11}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`, true},
	{`{"choices":[],"usage":{}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":-0,"total_tokens":7,"total_tokens":8}}`, true},
	// Left to encoding/json.
	{`{"choices":[],"usage":{"prompt_tokens":5},"usage":{"completion_tokens":7}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":1.5}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":null,"total_tokens":1}}`, false},
	{`{"choices":[],"usage":{"Prompt_Tokens":5}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":12345678901}}`, false},
	{`{"choices":[],"usage":[1]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}],"tool_calls":[{"id":"x"}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a"},"function":{"arguments":"b"}}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"ID":"case","function":{"name":"a"}}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","function":{"Name":"case"}}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":null,"function":null}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[null]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"0"}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":{"index":0}}}]}`, false},
	// Keys json matches with Unicode's folding: ſ (U+017F) is an s, K (U+212A) a k.
	{`{"choice` + "\u017f" + `":[{"index":0,"delta":{"content":"x"}}]}`, false},
	{`{"choices":[],"u` + "\u017f" + `age":{"prompt_tokens":5}}`, false},
	{`{"choices":[],"usage":{"prompt_to` + "\u212a" + `ens":5}}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_call` + "\u017f" + `":[{"index":0}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"argument` + "\u017f" + `":"a"}}]}}]}`, false},
	{`{"choices":[{"index":0,"finish_rea` + "\u017f" + `on":"stop"}]}`, false},
	// Nesting past what encoding/json takes, and just under what is skipped by hand.
	{`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"choices":[]}`, false},
	{`{"x":` + strings.Repeat("[", maxSkipDepth) + strings.Repeat("]", maxSkipDepth) + `,"choices":[]}`, true},
	{`{"x":` + strings.Repeat("[", maxSkipDepth+1) + strings.Repeat("]", maxSkipDepth+1) + `,"choices":[]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"tab\tand \"quotes\" and \u00e9 \ud83d\ude00"}}]}`, true},
	{"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff byte\"}}]}", true},
	{`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"parts"}]}}]}`, false},
	{`{"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":null,"refusal":"I cannot help with that."}}]}`, false},
	{`{"error":{"message":"overloaded","code":529}}`, false},
	{`{"Choices":[{"index":0,"delta":{"Content":"case"}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"role":"x"}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":0,"delta":{"content":"b"}}]}`, false},
	{`{"ch\u006fices":[{"index":0,"delta":{"content":"escaped key"}}]}`, false},
	{`{"choices":[{"index":1.0,"delta":{"content":"x"}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"x"}}]} trailing`, false},
	{`{"choices":[{"index":0,"delta":{"content":"x"}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"unterminated}}]}`, false},
	{`{"choices":[{"index":01,"delta":{"content":"x"}}]}`, false},
	{`[1,2]`, false},
	{`nul`, false},
}

// used is a chunk as a stream leaves it: every field and every part of its
// room set.
const used = `{"choices":[{"index":0,"delta":{"content":"old","tool_calls":[{"index":3,"id":"call_old","function":{"name":"old","arguments":"{}"}}]},"finish_reason":"stop","content_filter_results":{"x":1}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`

// decodeBoth decodes data with json.Unmarshal into a new chunk and with
// decodeChunk into a chunk used before, as a stream reuses one, and fails
// when the two differ.
func decodeBoth(t *testing.T, data []byte) {
	t.Helper()
	var want chunk
	wantErr := json.Unmarshal(data, &want)
	var got chunk
	if err := decodeChunk([]byte(used), &got); err != nil {
		t.Fatal(err)
	}
	gotErr := decodeChunk(data, &got)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%s: decodeChunk error %v, json.Unmarshal error %v", data, gotErr, wantErr)
	}
	if wantErr == nil {
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(chunk{})); diff != "" {
			t.Errorf("%s: decodeChunk differs from json.Unmarshal (-json +decodeChunk):\n%s", data, diff)
		}
	}
}

func TestDecodeChunkIsJSONUnmarshal(t *testing.T) {
	for _, s := range chunkSamples {
		decodeBoth(t, []byte(s.data))
		var c chunk
		if fast := fastChunk([]byte(s.data), &c); fast != s.fast {
			t.Errorf("%s: decoded by hand %v, want %v", s.data, fast, s.fast)
		}
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, s := range chunkSamples {
		f.Add([]byte(s.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeBoth(t, data) })
}

func BenchmarkDecodeChunk(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"text", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`},
		{"tool call", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"query\": \"rates"}}]},"finish_reason":null}]}`},
		{"usage", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":340,"total_tokens":1540,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`},
	} {
		data := []byte(c.data)
		b.Run(c.name+"/by hand", func(b *testing.B) {
			b.ReportAllocs()
			var c chunk // one for the whole stream, as the assembler keeps it
			for b.Loop() {
				_ = decodeChunk(data, &c)
			}
		})
		b.Run(c.name+"/encoding/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var c chunk
				_ = json.Unmarshal(data, &c)
			}
		})
	}
}
