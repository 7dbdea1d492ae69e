package run

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
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
	old := &ToolCall{ToolRecord: agent.ToolRecord{Name: builtin.FileSearchName, Result: res.Text, Sources: res.Sources}}
	if diff := cmp.Diff(want, retrievedContexts(old)); diff != "" {
		t.Errorf("contexts of a call stored without them (-want +got):\n%s", diff)
	}
	stored := &ToolCall{ToolRecord: agent.ToolRecord{Name: builtin.FileSearchName, Result: res.Text, Sources: res.Sources, Contexts: res.Contexts}}
	if diff := cmp.Diff(want, retrievedContexts(stored)); diff != "" {
		t.Errorf("contexts of a call stored with them (-want +got):\n%s", diff)
	}
	// No files, no match, or a text that is not what the sources describe:
	// nothing retrieved, rather than a note or a blob.
	for _, c := range []*ToolCall{
		{ToolRecord: agent.ToolRecord{Name: builtin.FileSearchName, Result: builtin.NoFilesText}},
		{ToolRecord: agent.ToolRecord{Name: builtin.FileSearchName, Result: "changed", Sources: []tool.Source{{Kind: tool.SourceFile, FileName: "a.pdf"}}}},
	} {
		if got := retrievedContexts(c); len(got) != 0 {
			t.Errorf("contexts of %q: %q, want none", c.Result, got)
		}
	}
	// Another tool's result without contexts is one passage.
	mcpCall := &ToolCall{ToolRecord: agent.ToolRecord{Name: "search__mcp__docs", Result: "One passage.\n\nStill one."}}
	if diff := cmp.Diff([]string{"One passage.\n\nStill one."}, retrievedContexts(mcpCall)); diff != "" {
		t.Errorf("contexts of an MCP call (-want +got):\n%s", diff)
	}
}
