package ragas

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
	"github.com/relay-ai/relay/internal/turn"
)

// A file_search call stored without its contexts (before they were kept) is
// cut into its passages by the headers its sources describe, even when a
// passage holds what looks like a separator.
func TestRetrievedContextsOfStoredFileSearch(t *testing.T) {
	hits := []file.Hit{
		{FileID: "a", FileName: "a.pdf", Page: 1, Score: 0.91234, Text: "First.\n---\nFile: a.pdf\nContent: not a header"},
		{FileID: "a", FileName: "a.pdf", Page: 4, Score: 0.5, Text: "Second."},
		{FileID: "b", FileName: "b «x».md", Page: 0, Score: 0.1, Text: "  Third.  "},
	}
	res, err := builtin.FileSearch(builtin.SearchFunc(func(context.Context, file.Query) ([]file.Hit, error) { return hits, nil }),
		[]string{"a", "b"}).Call(context.Background(), "u", json.RawMessage(`{"query":"q"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"First.\n---\nFile: a.pdf\nContent: not a header", "Second.", "Third."}
	old := &run.ToolCall{ToolRecord: turn.ToolRecord{Name: builtin.FileSearchName, Result: res.Text, Sources: res.Sources}}
	if diff := cmp.Diff(want, retrievedContexts(old)); diff != "" {
		t.Errorf("contexts of a call stored without them (-want +got):\n%s", diff)
	}
	stored := &run.ToolCall{ToolRecord: turn.ToolRecord{Name: builtin.FileSearchName, Result: res.Text, Sources: res.Sources, Contexts: res.Contexts}}
	if diff := cmp.Diff(want, retrievedContexts(stored)); diff != "" {
		t.Errorf("contexts of a call stored with them (-want +got):\n%s", diff)
	}
	// No files, no match, or a text that is not what the sources describe:
	// nothing retrieved, rather than a note or a blob.
	for _, c := range []*run.ToolCall{
		{ToolRecord: turn.ToolRecord{Name: builtin.FileSearchName, Result: builtin.NoFilesText}},
		{ToolRecord: turn.ToolRecord{Name: builtin.FileSearchName, Result: "changed", Sources: []tool.Source{{Kind: tool.SourceFile, FileName: "a.pdf"}}}},
	} {
		if got := retrievedContexts(c); len(got) != 0 {
			t.Errorf("contexts of %q: %q, want none", c.Result, got)
		}
	}
	// Another tool's result without contexts is one passage.
	mcpCall := &run.ToolCall{ToolRecord: turn.ToolRecord{Name: "search__mcp__docs", Result: "One passage.\n\nStill one."}}
	if diff := cmp.Diff([]string{"One passage.\n\nStill one."}, retrievedContexts(mcpCall)); diff != "" {
		t.Errorf("contexts of an MCP call (-want +got):\n%s", diff)
	}
}

// The conversation of a multi-turn sample is read from the last request in
// its provider's own format.
func TestRequestMessages(t *testing.T) {
	want := []ragasMessage{
		{Type: "human", Content: "What is 2+3?"},
		{Type: "ai", Content: "Let me add.", ToolCalls: []ragasToolCall{
			{Name: "get-sum", Args: json.RawMessage(`{"a":2,"b":3}`)},
			{Name: "lookup", Args: json.RawMessage(`{}`)},
		}},
		{Type: "tool", Content: "5"},
		{Type: "tool", Content: "nothing"},
		{Type: "ai", Content: "It is 5."},
		{Type: "human", Content: "Sure?"},
	}
	for _, tc := range []struct{ name, body string }{
		{"openai", `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is 2+3?"},
			{"role":"assistant","content":"Let me add.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get-sum","arguments":"{\"a\":2,\"b\":3}"}},
			{"id":"c2","type":"function","function":{"name":"lookup","arguments":""}}]},
			{"role":"tool","tool_call_id":"c1","content":"5"},{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"nothing"}]},
			{"role":"assistant","content":"It is 5. \\ue202turn0file0"},{"role":"user","content":[{"type":"text","text":"Sure?"}]}]}`},
		{"anthropic", `{"model":"m","system":"Be brief.","messages":[{"role":"user","content":"What is 2+3?"},
			{"role":"assistant","content":[{"type":"text","text":"Let me add."},{"type":"tool_use","id":"t1","name":"get-sum","input":{"a":2,"b":3}},
			{"type":"tool_use","id":"t2","name":"lookup","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"5"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"nothing"}]}]},
			{"role":"assistant","content":[{"type":"text","text":"It is 5. \ue202turn0file0"}]},{"role":"user","content":[{"type":"text","text":"Sure?"}]}]}`},
		{"gemini", `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"What is 2+3?"}]},
			{"role":"model","parts":[{"text":"Let me add."},{"functionCall":{"name":"get-sum","args":{"a":2,"b":3}}},{"functionCall":{"name":"lookup"}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"get-sum","response":{"output":"5"}}},{"functionResponse":{"name":"lookup","response":{"error":"nothing"}}}]},
			{"role":"model","parts":[{"text":"It is 5. turn0file0"}]},{"role":"user","parts":[{"text":"Sure?"}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := requestMessages(json.RawMessage(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmp.Transformer("compact", func(r json.RawMessage) string { return string(ToolArgs(r)) })); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}
