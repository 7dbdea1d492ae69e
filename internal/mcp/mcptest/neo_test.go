package mcptest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// neoReferenceTools is the tools array of
// internal/prompt/testdata/neo_tools.reference.json, names without the server
// part.
const neoReferenceTools = `[
  {"name": "zoek_documenten_nederlandse_wetgeving",
   "description": "STEP 1: Search Dutch legislation database to discover which documents are relevant to your query. Use this tool FIRST to identify relevant documents. Each result displays '📄 Document ID: [number]' - these are the IDs you need for step 2. After reviewing results, use 'zoek_in_specifieke_wetgeving' with the document IDs from the summary for focused search.",
   "parameters": {"type": "object", "properties": {
     "question": {"type": "string", "description": "The search query or question"},
     "num_results": {"type": "integer", "description": "Number of results to return (1-10, default: 5)"}},
     "required": ["question"]}},
  {"name": "zoek_in_specifieke_wetgeving",
   "description": "STEP 2: Search within specific Dutch legislation documents that you've already identified. Use this tool AFTER 'zoek_documenten_nederlandse_wetgeving'. IMPORTANT: doc_ids requires actual Document ID numbers from step 1 (e.g., [39248184, 12345], NOT [0, 1, 2]).",
   "parameters": {"type": "object", "properties": {
     "question": {"type": "string", "description": "The search query or question"},
     "doc_ids": {"type": "array", "items": {"type": "integer"}, "description": "List of document IDs to search within (from step 1 SUMMARY)"},
     "num_results": {"type": "integer", "description": "Number of chunks to return (1-20, default: 10)"}},
     "required": ["question", "doc_ids"]}},
  {"name": "zoek_documenten_iaea_kennis",
   "description": "STEP 1: Search IAEA nuclear safety database to discover which documents are relevant to your query. Use this tool FIRST to identify relevant IAEA documents. After reviewing results, use 'zoek_in_specifieke_iaea_documenten' with the document IDs for focused search.",
   "parameters": {"type": "object", "properties": {
     "question": {"type": "string", "description": "The search query or question"},
     "num_results": {"type": "integer", "description": "Number of results to return (1-10, default: 5)"}},
     "required": ["question"]}},
  {"name": "zoek_in_specifieke_iaea_documenten",
   "description": "STEP 2: Search within specific IAEA nuclear safety documents that you've already identified. Use this tool AFTER 'zoek_documenten_iaea_kennis'. IMPORTANT: doc_ids requires actual Document ID numbers from step 1.",
   "parameters": {"type": "object", "properties": {
     "question": {"type": "string", "description": "The search query or question"},
     "doc_ids": {"type": "array", "items": {"type": "integer"}, "description": "List of document IDs to search within (from step 1 SUMMARY)"},
     "num_results": {"type": "integer", "description": "Number of chunks to return (1-20, default: 10)"}},
     "required": ["question", "doc_ids"]}},
  {"name": "zoek_documenten_anvs_kennis",
   "description": "STEP 1: Search ANVS nuclear safety database to discover which documents are relevant to your query. Use this tool FIRST to identify relevant ANVS documents. After reviewing results, use 'zoek_in_specifieke_anvs_documenten' with the document IDs for focused search.",
   "parameters": {"type": "object", "properties": {
     "question": {"type": "string", "description": "The search query or question"},
     "num_results": {"type": "integer", "description": "Number of results to return (1-10, default: 5)"}},
     "required": ["question"]}},
  {"name": "zoek_in_specifieke_anvs_documenten",
   "description": "STEP 2: Search within specific ANVS nuclear safety documents that you've already identified. Use this tool AFTER 'zoek_documenten_anvs_kennis'. IMPORTANT: doc_ids requires actual Document ID numbers from step 1.",
   "parameters": {"type": "object", "properties": {
     "question": {"type": "string", "description": "The search query or question"},
     "doc_ids": {"type": "array", "items": {"type": "integer"}, "description": "List of document IDs to search within (from step 1 SUMMARY)"},
     "num_results": {"type": "integer", "description": "Number of chunks to return (1-20, default: 10)"}},
     "required": ["question", "doc_ids"]}}
]`

func TestNEO(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.NEO())
	cs := connect(t, &sdk.StreamableClientTransport{Endpoint: url})

	ir := cs.InitializeResult()
	if ir.ServerInfo.Name != mcptest.NEOName {
		t.Errorf("server name = %q, want %q", ir.ServerInfo.Name, mcptest.NEOName)
	}
	if ir.Instructions != mcptest.NEOInstructions {
		t.Errorf("instructions = %q, want NEOInstructions", ir.Instructions)
	}

	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type tool struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
	}
	var got []tool
	for _, lt := range res.Tools {
		got = append(got, tool{Name: lt.Name, Description: lt.Description, Parameters: lt.InputSchema})
	}
	var want []tool
	if err := json.Unmarshal([]byte(neoReferenceTools), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools differ from the reference example's (-want +got):\n%s", diff)
	}
	var names []string
	for _, w := range want {
		names = append(names, w.Name)
	}
	if diff := cmp.Diff(names, mcptest.NEOToolNames()); diff != "" {
		t.Errorf("NEOToolNames (-want +got):\n%s", diff)
	}
}

func TestNEOToolResults(t *testing.T) {
	cs := inMemory(t, mcptest.NEO())
	tests := []struct {
		name    string
		tool    string
		args    any
		isError bool
		want    []string
	}{
		{
			name: "discovery",
			tool: "zoek_documenten_nederlandse_wetgeving",
			args: map[string]any{"question": "stralingsbescherming eisen", "num_results": 5},
			want: []string{"📚 DOCUMENT DISCOVERY", "📄 **Document ID: 39248184**", "Title: Besluit stralingsbescherming", "**Document IDs for STEP 2:** [39248184, 39248190, 39248195]", "Use 'zoek_in_specifieke_wetgeving'"},
		},
		{
			name: "discovery limited",
			tool: "zoek_documenten_iaea_kennis",
			args: map[string]any{"question": "dose limits", "num_results": 1},
			want: []string{"Found 1 unique document(s)", "[51004417]"},
		},
		{
			name: "focused",
			tool: "zoek_in_specifieke_wetgeving",
			args: map[string]any{"question": "dosislimieten", "doc_ids": []int{39248184, 39248190}},
			want: []string{"Retrieved context:", "📄 Document ID: 39248184", "Besluit stralingsbescherming (Pages: 12, 15, 18)", "Artikel 4.1 - Dosislimieten", "📄 Document ID: 39248190"},
		},
		{
			name:    "positions instead of ids",
			tool:    "zoek_in_specifieke_anvs_documenten",
			args:    map[string]any{"question": "meldingen", "doc_ids": []int{0, 1, 2}},
			isError: true,
			want:    []string{"Use the Document ID numbers from step 1"},
		},
		{
			name:    "no question",
			tool:    "zoek_documenten_anvs_kennis",
			args:    map[string]any{},
			isError: true,
			want:    []string{"question is required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			if res.IsError != tt.isError {
				t.Errorf("IsError = %v, want %v", res.IsError, tt.isError)
			}
			if len(res.Content) != 1 {
				t.Fatalf("got %d content parts, want 1", len(res.Content))
			}
			text := res.Content[0].(*sdk.TextContent).Text
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("result lacks %q:\n%s", w, text)
				}
			}
		})
	}
}
