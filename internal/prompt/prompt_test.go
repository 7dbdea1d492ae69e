package prompt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, wherever the tests run

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/prompt"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mcpTool(tool, server string) prompt.Tool {
	return prompt.Tool{
		Name:        mcp.Key(tool, server),
		Description: "Tool " + tool + " of " + server,
		Parameters:  map[string]any{"type": "object", "properties": map[string]any{}},
		Kind:        prompt.ToolMCP,
		Server:      server,
	}
}

func marshal(t *testing.T, req *llm.Request) []byte {
	t.Helper()
	b, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
	return b
}

func TestReplacePlaceholders(t *testing.T) {
	utcLate := time.Date(2025, 11, 25, 23, 30, 45, 123_000_000, time.UTC)
	tests := []struct {
		name string
		text string
		now  time.Time
		loc  *time.Location
		user string
		want string
	}{
		{name: "date", text: "Today: {{current_date}}.", now: referenceNow, want: "Today: 2025-11-25 (2)."},
		{name: "capitals", text: "{{CURRENT_DATE}} / {{Current_Date}} / {{current_DATETIME}}", now: referenceNow,
			want: "2025-11-25 (2) / 2025-11-25 (2) / 2025-11-25 14:30:45 (2)"},
		{name: "datetime", text: "{{current_datetime}}", now: referenceNow, want: "2025-11-25 14:30:45 (2)"},
		{name: "iso", text: "{{iso_datetime}}", now: utcLate, want: "2025-11-25T23:30:45.123Z"},
		{name: "user", text: "Hello {{current_user}}, {{CURRENT_USER}}!", now: referenceNow, user: "John Doe", want: "Hello John Doe, John Doe!"},
		{name: "user without a name", text: "Hello {{current_user}}", now: referenceNow, want: "Hello {{current_user}}"},
		{name: "unknown placeholder", text: "{{current_time}} {{ current_date }} {{LIBRECHAT_USER_ID}} {{}} {{", now: referenceNow,
			want: "{{current_time}} {{ current_date }} {{LIBRECHAT_USER_ID}} {{}} {{"},
		{name: "brace before a placeholder", text: "{{{current_date}}}", now: referenceNow, want: "{2025-11-25 (2)}"},
		{name: "every occurrence", text: "{{current_date}}{{current_date}}", now: referenceNow, want: "2025-11-25 (2)2025-11-25 (2)"},
		{name: "no placeholder", text: "plain", now: referenceNow, want: "plain"},
		{name: "replacements are not expanded", text: "{{current_user}}", now: referenceNow, user: "{{current_date}}", want: "{{current_date}}"},
		// 23:30 UTC on Tuesday is already Wednesday in Auckland (UTC+13 in summer).
		{name: "zone ahead of UTC", text: "{{current_date}} {{current_datetime}} {{iso_datetime}}", now: utcLate, loc: mustZone(t, "Pacific/Auckland"),
			want: "2025-11-26 (3) 2025-11-26 12:30:45 (3) 2025-11-25T23:30:45.123Z"},
		// 02:00 UTC on Tuesday is still Monday in Los Angeles (UTC-8).
		{name: "zone behind UTC", text: "{{current_date}}", now: time.Date(2025, 11, 25, 2, 0, 0, 0, time.UTC), loc: mustZone(t, "America/Los_Angeles"),
			want: "2025-11-24 (1)"},
		{name: "nil zone is now's own", text: "{{current_datetime}}", now: utcLate.In(mustZone(t, "Asia/Tokyo")),
			want: "2025-11-26 08:30:45 (3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prompt.ReplacePlaceholders(tt.text, tt.now, tt.loc, tt.user)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSystemMessagePlaceholdersOnlyInInstructions(t *testing.T) {
	in := prompt.Input{
		Agent:    prompt.Agent{Instructions: "Date {{current_date}}"},
		Tools:    []prompt.Tool{mcpTool("t", "s")},
		Servers:  []prompt.Server{{Name: "s", Instructions: "Server date {{current_date}}"}},
		Now:      referenceNow,
		Location: time.UTC,
	}
	got := prompt.SystemMessage(in)
	if !strings.Contains(got, "Date 2025-11-25 (2)") || !strings.Contains(got, "Server date {{current_date}}") {
		t.Errorf("placeholders must be replaced in the instructions only:\n%s", got)
	}
}

func TestRAGBlock(t *testing.T) {
	doc := prompt.File{ID: "f1", Filename: "notes.txt", Type: "text/plain"}
	tests := []struct {
		name string
		rag  *prompt.RAG
		want []string
		not  []string
	}{
		{
			name: "chunk containing the CDATA end",
			rag:  &prompt.RAG{Files: []prompt.RAGFile{{File: doc, Chunks: []string{"  if a[b[0]]> 1 { x = \"]]>\" }  "}}}},
			want: []string{
				"The user has attached a file to the conversation:\n<files>\n  <file>\n    <filename>notes.txt</filename>",
				"<![CDATA[if a[b[0]]]]><![CDATA[> 1 { x = \"]]]]><![CDATA[>\" }]]>",
			},
		},
		{
			name: "no results",
			rag:  &prompt.RAG{Files: []prompt.RAGFile{{File: doc}, {File: prompt.File{Filename: "b.md"}, Chunks: []string{"  "}}}},
			want: []string{"The user has attached 2 files", "<context>\n  The semantic search did not return any results.\n</context>"},
			not:  []string{"<contextItem>"},
		},
		{
			name: "at most four chunks",
			rag:  &prompt.RAG{Files: []prompt.RAGFile{{File: doc, Chunks: []string{"c1", "", "c2", "c3", "c4", "c5"}}}},
			want: []string{"[c1]", "[c4]"},
			not:  []string{"[c5]", "CDATA[]]"},
		},
		{
			name: "empty retrieval",
			rag:  &prompt.RAG{},
			not:  []string{"attached"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prompt.SystemMessage(prompt.Input{RAG: tt.rag, Now: referenceNow})
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("holds %q:\n%s", n, got)
				}
			}
		})
	}
}

func TestLongToolKey(t *testing.T) {
	server := "anvs-iaea-wetten-2"
	tool := "zoek_in_specifieke_iaea_documenten_uitgebreid" // 70 characters with the server
	if n := len(tool + mcp.Delimiter + server); n != 70 {
		t.Fatalf("full key has %d characters, want 70", n)
	}
	var names mcp.Names
	key := names.Add(server, tool)
	if len(key) != mcp.MaxKeyLen || key != mcp.Key(tool, server) {
		t.Fatalf("key %q: want the 64-character key of mcp.Key", key)
	}
	req, err := prompt.Build(prompt.Input{
		Tools: []prompt.Tool{{Name: key, Description: "d", Kind: prompt.ToolMCP, Server: server}},
		Now:   referenceNow,
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := req.Tools[0].Function.Name
	if sent != key {
		t.Fatalf("sent name %q, want %q", sent, key)
	}
	gotServer, gotTool, ok := names.Lookup(sent)
	if !ok || gotServer != server || gotTool != tool {
		t.Errorf("Lookup(%q) = %q, %q, %v; want %q, %q", sent, gotServer, gotTool, ok, server, tool)
	}
}

// landbouwInstructions are the serverInstructions of a real server
// configuration ("Landbouw & Natuur"), with its broken brackets fixed ("ã€ã€‘" is "【】" whose first
// byte 0x90 has no Windows-1252 character).
const landbouwInstructions = `When using the gkn_search tool, synthesize the results into a clear, 
comprehensive answer in the language of the question.

**Critical rules:**
- Do NOT use brackets 【】, markdown links, or footnotes
`

func TestMCPInstructions(t *testing.T) {
	tests := []struct {
		name    string
		tools   []prompt.Tool
		servers []prompt.Server
		want    string
	}{
		{
			name:    "server name with spaces and ampersand",
			tools:   []prompt.Tool{mcpTool("gkn_search", "Landbouw & Natuur")},
			servers: []prompt.Server{{Name: "Landbouw & Natuur", Instructions: landbouwInstructions}},
			want: "# MCP Server Instructions\n\nThe following MCP servers are available with their specific instructions:\n\n" +
				"## Landbouw & Natuur MCP Server Instructions\n\n" + strings.TrimSpace(landbouwInstructions) +
				"\n\nPlease follow these instructions when using tools from the respective MCP servers.",
		},
		{
			name:  "two servers, one with instructions",
			tools: []prompt.Tool{mcpTool("a", "quiet"), mcpTool("b", "chatty"), mcpTool("c", "quiet")},
			servers: []prompt.Server{
				{Name: "quiet"},
				{Name: "chatty", Instructions: "  Cite sources.\n"},
			},
			want: "# MCP Server Instructions\n\nThe following MCP servers are available with their specific instructions:\n\n" +
				"## chatty MCP Server Instructions\n\nCite sources.\n\nPlease follow these instructions when using tools from the respective MCP servers.",
		},
		{
			name:  "servers in the order of their first tool",
			tools: []prompt.Tool{mcpTool("a", "second"), mcpTool("b", "first"), mcpTool("c", "second")},
			servers: []prompt.Server{
				{Name: "first", Instructions: "F"},
				{Name: "second", Instructions: "S"},
			},
			want: "# MCP Server Instructions\n\nThe following MCP servers are available with their specific instructions:\n\n" +
				"## second MCP Server Instructions\n\nS\n\n## first MCP Server Instructions\n\nF\n\nPlease follow these instructions when using tools from the respective MCP servers.",
		},
		{
			name:    "a server without tools of the agent",
			tools:   []prompt.Tool{mcpTool("a", "used")},
			servers: []prompt.Server{{Name: "unused", Instructions: "Never shown."}},
		},
		{
			name:    "whitespace instructions",
			tools:   []prompt.Tool{mcpTool("a", "s")},
			servers: []prompt.Server{{Name: "s", Instructions: " \n\t"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prompt.SystemMessage(prompt.Input{Tools: tt.tools, Servers: tt.servers, Now: referenceNow})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := mcp.Key("gkn_search", "Landbouw & Natuur"); got != "gkn_search__mcp__Landbouw___Natuur" {
		t.Errorf("key = %q", got)
	}
}

// TestInstructionsFromSilentServer: serverInstructions: true against a server
// that sends no instructions gives no MCP segment.
func TestInstructionsFromSilentServer(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{Name: "silent"})
	m := mcp.NewManager([]mcp.ServerConfig{{
		Name: "silent", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeApp,
		Timeout: 10 * time.Second, InitTimeout: 10 * time.Second, InstructionsFromServer: true,
	}}, mcp.Options{})
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	text, err := m.Instructions(ctx, "silent", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := prompt.SystemMessage(prompt.Input{
		Agent:   prompt.Agent{Instructions: "Be brief."},
		Tools:   []prompt.Tool{mcpTool("echo", "silent")},
		Servers: []prompt.Server{{Name: "silent", Instructions: text}},
		Now:     referenceNow,
	})
	if got != "Be brief." {
		t.Errorf("system message = %q, want only the agent's instructions", got)
	}
}

func TestEmptyInstructions(t *testing.T) {
	for _, instructions := range []string{"", "  \n\t ", "\n\n"} {
		in := prompt.Input{
			Agent:    prompt.Agent{Model: "m", Instructions: instructions},
			Tools:    []prompt.Tool{builtin(t, prompt.WebSearch)},
			Now:      referenceNow,
			Messages: user("hi"),
		}
		got := prompt.SystemMessage(in)
		if !strings.HasPrefix(got, "# `web_search` (WEB SEARCH) – RULES") || !strings.HasSuffix(got, "ANSWER IN THE USER'S LANGUAGE.") {
			t.Errorf("instructions %q: system message = %q", instructions, got)
		}

		in.Tools = nil
		req, err := prompt.Build(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Messages) != 1 || req.Messages[0].Role != llm.RoleUser {
			t.Errorf("instructions %q and nothing else: want no system message, got %+v", instructions, req.Messages)
		}
	}
}

func TestNoTools(t *testing.T) {
	req, err := prompt.Build(prompt.Input{
		Agent:    prompt.Agent{Model: "gpt-4o", Instructions: "Hi.", ModelParameters: map[string]any{"temperature": 0.2}},
		Now:      referenceNow,
		Messages: user("hello"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4o","messages":[{"role":"system","content":"Hi."},{"role":"user","content":"hello"}],"temperature":0.2}`
	if got := string(marshal(t, req)); got != want {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}
}

func TestToolContexts(t *testing.T) {
	agentFile := prompt.File{ID: "a", Filename: "handbook.pdf"}
	attached := prompt.File{ID: "b", Filename: "new.docx"}
	tests := []struct {
		name string
		in   prompt.Input
		want string
	}{
		{
			name: "order of the agent's tools",
			in: prompt.Input{
				Tools:      []prompt.Tool{builtin(t, prompt.WebSearch), builtin(t, prompt.FileSearch)},
				AgentFiles: []prompt.File{agentFile},
			},
			want: strings.TrimSpace(webSearch) + "\n- Note: Use the file_search tool to find relevant information within:\n\t- handbook.pdf",
		},
		{
			name: "attached files bias file_search",
			in: prompt.Input{
				Tools:      []prompt.Tool{builtin(t, prompt.FileSearch)},
				AgentFiles: []prompt.File{agentFile},
				Attached:   []prompt.File{attached, agentFile},
			},
			want: "- Note: Use the file_search tool to find relevant information within:\n\t- handbook.pdf\n\t- new.docx (just attached by user)\n\n" + bias,
		},
		{
			name: "attached files without file_search",
			in:   prompt.Input{Attached: []prompt.File{attached}},
			want: "",
		},
		{
			name: "file_search without files",
			in:   prompt.Input{Tools: []prompt.Tool{builtin(t, prompt.FileSearch)}},
			want: prompt.NoFilesNote,
		},
		{
			name: "answer language",
			in:   prompt.Input{Tools: []prompt.Tool{builtin(t, prompt.WebSearch)}, AnswerLanguage: "Dutch"},
			want: strings.TrimSuffix(strings.TrimSpace(webSearch), ".") + " (DUTCH IN YOUR CASE).",
		},
		{
			name: "tool listed twice",
			in:   prompt.Input{Tools: []prompt.Tool{builtin(t, prompt.WebSearch), builtin(t, prompt.WebSearch)}},
			want: strings.TrimSpace(webSearch),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = referenceNow
			if diff := cmp.Diff(tt.want, prompt.SystemMessage(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// webSearch and bias are LibreChat's texts (docs/prompt.md "Exact texts"), as
// the golden files hold them.
var (
	webSearch = `# ` + "`web_search`" + ` (WEB SEARCH) – RULES

YOU HAVE ACCESS TO A WEB SEARCH TOOL. FOLLOW THESE RULES STRICTLY:

1. CALL THE TOOL INSTEAD OF DESCRIBING A SEARCH.
   - Never write things like "let's search", "we should use web_search" or raw JSON such as {"query": "..."}.
   - When you decide that web search is needed, IMMEDIATELY call the ` + "`web_search`" + ` tool.

2. HOW OFTEN TO USE IT
   - At most **one tool call per user question** (unless the user explicitly asks for more searches).
   - Do not call the tool again for the same question after you have results.

3. HOW TO WRITE THE QUERY
   - Use a short keyword query (3–6 words), not a full sentence.
   - Example good queries:
     - "Rotterdam weather now"
     - "Rotterdam hourly weather"
   - Avoid long natural language queries.

4. AFTER THE TOOL RETURNS
   - Read the provided "output" text and answer the user directly.
   - Start with a clear answer, then explain details.
   - Use citations that are already provided; do not invent new URLs.

ANSWER IN THE USER'S LANGUAGE.
`
	bias = "When files are attached, ALWAYS call the file_search tool first to retrieve the most relevant passages. Call file_search MULTIPLE times with different queries to gather comprehensive information from various sections. Use the retrieved quotes to draft your answer and include citation anchors as instructed. Provide rich citations: use multiple references per paragraph when information comes from different sources."
)

func TestArtifacts(t *testing.T) {
	system := func(mode string) string {
		return prompt.SystemMessage(prompt.Input{Agent: prompt.Agent{Instructions: "I.", Artifacts: mode}, Now: referenceNow})
	}
	def, shad := system(prompt.ArtifactsDefault), system(prompt.ArtifactsShadcnUI)
	for _, w := range []string{`:::artifact{identifier="`, `type="`, `title="`, "text/html", "image/svg+xml", "text/markdown", "application/vnd.mermaid", "application/vnd.react", "## When not to"} {
		if !strings.Contains(def, w) {
			t.Errorf("default artifacts prompt lacks %q", w)
		}
	}
	if !strings.HasPrefix(def, "I.\n\n# Artifacts\n") {
		t.Errorf("the artifacts prompt must follow the instructions after a blank line:\n%.80s", def)
	}
	if strings.Contains(def, "shadcn") || !strings.HasPrefix(shad, def+"\n\n## shadcn/ui components\n") {
		t.Errorf("shadcnui must be the default prompt plus the shadcn/ui section")
	}
	if strings.Count(shad, "# Artifacts") != 1 {
		t.Errorf("the artifacts prompt must appear once")
	}
	for _, mode := range []string{"custom", "", "unknown"} {
		if got := system(mode); got != "I." {
			t.Errorf("artifacts %q: system message = %q, want only the instructions", mode, got)
		}
	}
}

func TestMemory(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2025, 11, d, 23, 0, 0, 0, time.UTC) }
	entries := []prompt.MemoryEntry{
		{Key: "city", Value: "Lives in Rotterdam.", UpdatedAt: day(20)},
		{Key: "lang", Value: " Prefers answers in Dutch. ", UpdatedAt: day(3)},
		{Key: "job", Value: "Works as a radiation protection officer.", UpdatedAt: day(11)},
	}
	in := prompt.Input{Agent: prompt.Agent{Instructions: "I."}, Memory: entries, MemoryOn: true, Now: referenceNow, Location: mustZone(t, "Europe/Amsterdam")}
	got := prompt.SystemMessage(in)
	wantTail := "\n\n# Existing memory about the user:\n" +
		"1. [2025-11-04]. Prefers answers in Dutch.\n" +
		"2. [2025-11-12]. Works as a radiation protection officer.\n" +
		"3. [2025-11-21]. Lives in Rotterdam."
	if !strings.HasPrefix(got, "I.\n\nYou remember") || !strings.HasSuffix(got, wantTail) {
		t.Errorf("memory segment:\n%s", got)
	}
	if entries[0].Key != "city" {
		t.Errorf("Build reordered the caller's entries")
	}
	in.MemoryOn = false
	if got := prompt.SystemMessage(in); got != "I." {
		t.Errorf("memory off: %q", got)
	}
	in.MemoryOn, in.Memory = true, nil
	if got := prompt.SystemMessage(in); got != "I." {
		t.Errorf("no entries: %q", got)
	}
}

func TestSegmentOrder(t *testing.T) {
	f := prompt.File{ID: "f", Filename: "f.txt", Type: "text/plain"}
	in := prompt.Input{
		Agent:    prompt.Agent{Instructions: "INSTRUCTIONS", Artifacts: prompt.ArtifactsDefault},
		Tools:    []prompt.Tool{builtin(t, prompt.FileSearch), mcpTool("t", "s")},
		Servers:  []prompt.Server{{Name: "s", Instructions: "SERVER"}},
		Attached: []prompt.File{f},
		RAG:      &prompt.RAG{Files: []prompt.RAGFile{{File: f, Chunks: []string{"CHUNK"}}}},
		Memory:   []prompt.MemoryEntry{{Value: "MEMORY", UpdatedAt: referenceNow}},
		MemoryOn: true,
		Now:      referenceNow,
	}
	got := prompt.SystemMessage(in)
	order := []string{"- Note: Use the file_search tool", "When files are attached, ALWAYS", "The user has attached a file", "INSTRUCTIONS", "# Artifacts", "# MCP Server Instructions", "# Existing memory about the user:"}
	last := -1
	for _, s := range order {
		i := strings.Index(got, s)
		if i <= last {
			t.Fatalf("%q is not after the previous segment:\n%s", s, got)
		}
		last = i
	}
	if strings.Contains(got, "\n\n\n") || got != strings.TrimSpace(got) {
		t.Errorf("segments must be joined by exactly one blank line")
	}
}

func TestRequestBody(t *testing.T) {
	handoff := prompt.HandoffTool("agent_research", "", "", "")
	req, err := prompt.Build(prompt.Input{
		Agent: prompt.Agent{
			Model: "gpt-4o",
			ModelParameters: map[string]any{
				"top_p": 0.9, "temperature": 0.7, "max_tokens": 512, "stop": []any{"</end>"},
				"model": "overridden?", "tools": "no",
			},
		},
		Tools: []prompt.Tool{builtin(t, prompt.WebSearch), mcpTool("t", "s"), handoff, builtin(t, prompt.WebSearch)},
		Now:   referenceNow,
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Weather <in> Rotterdam & Delft?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Function: llm.FunctionCall{Name: "web_search", Arguments: `{"query":"Rotterdam weer"}`}}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "Sunny\u2028warm"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := marshal(t, req)
	if diff := cmp.Diff([]string{"model", "messages", "tools", "tool_choice", "max_tokens", "stop", "temperature", "top_p"}, topKeys(t, body)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	for _, w := range []string{
		`"content":"Weather <in> Rotterdam & Delft?"`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"Rotterdam weer\"}"}}]}`,
		`"tool_call_id":"call_1"`, `Sunny\u2028warm`,
		`"name":"lc_transfer_to_agent_research"`, `"tool_choice":"auto"`, `"max_tokens":512`, `"stop":["</end>"]`,
		`"parameters":{"properties":{},"type":"object"}`,
	} {
		if !bytes.Contains(body, []byte(w)) {
			t.Errorf("body lacks %s:\n%s", w, body)
		}
	}
	if n := bytes.Count(body, []byte(`"name":"web_search","description"`)); n != 1 {
		t.Errorf("web_search listed %d times, want once", n)
	}

	// json.Marshal escapes <, > and & again; the JSON value is the same.
	std, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(std, &b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("json.Marshal gives another value (-MarshalJSON +json.Marshal):\n%s", diff)
	}
}

func TestBuildErrors(t *testing.T) {
	bad := []prompt.Input{
		{Tools: []prompt.Tool{{Name: "x", Parameters: json.RawMessage(`{"type":`)}}},
		{Tools: []prompt.Tool{{Name: "x", Parameters: map[string]any{"n": func() {}}}}},
		{Agent: prompt.Agent{ModelParameters: map[string]any{"temperature": json.Number("0.7.1")}}},
	}
	for i, in := range bad {
		if _, err := prompt.Build(in); err == nil {
			t.Errorf("input %d: want an error", i)
		}
	}
}

func TestHandoffTool(t *testing.T) {
	tests := []struct {
		name                            string
		id, description, promptKey, pro string
		wantDesc                        string
		wantParams                      string
	}{
		{
			name: "defaults", id: "agent_b",
			wantDesc:   "Hand the conversation over to the agent agent_b when it is better placed to help. That agent continues the conversation from here and your turn ends.",
			wantParams: `{"type":"object","properties":{}}`,
		},
		{
			name: "prompt with the default key", id: "agent_b", description: "Ask the lawyer.", pro: `What the lawyer should "check"`,
			wantDesc:   "Ask the lawyer.",
			wantParams: `{"type":"object","properties":{"instructions":{"type":"string","description":"What the lawyer should \"check\""}},"required":["instructions"]}`,
		},
		{
			name: "prompt with its own key", id: "x", promptKey: "query", pro: "The question",
			wantDesc:   "Hand the conversation over to the agent x when it is better placed to help. That agent continues the conversation from here and your turn ends.",
			wantParams: `{"type":"object","properties":{"query":{"type":"string","description":"The question"}},"required":["query"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prompt.HandoffTool(tt.id, tt.description, tt.promptKey, tt.pro)
			if got.Name != "lc_transfer_to_"+tt.id || got.Kind != prompt.ToolHandoff || got.Description != tt.wantDesc {
				t.Errorf("tool = %+v", got)
			}
			if p := string(got.Parameters.(prompt.Schema).JSON()); p != tt.wantParams {
				t.Errorf("parameters = %s, want %s", p, tt.wantParams)
			}
			if id, ok := prompt.HandoffTarget(got.Name); !ok || id != tt.id {
				t.Errorf("HandoffTarget = %q, %v", id, ok)
			}
		})
	}
}

func TestBuiltinTool(t *testing.T) {
	for _, name := range []string{prompt.FileSearch, prompt.WebSearch, prompt.SetMemory, prompt.DeleteMemory} {
		tool, ok := prompt.BuiltinTool(name)
		if !ok || tool.Name != name || tool.Kind != prompt.ToolBuiltin || tool.Description == "" {
			t.Errorf("BuiltinTool(%q) = %+v, %v", name, tool, ok)
			continue
		}
		var schema struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(tool.Parameters.(prompt.Schema).JSON(), &schema); err != nil || schema.Type != "object" || len(schema.Required) == 0 {
			t.Errorf("%s: schema %s (%v)", name, tool.Parameters, err)
		}
	}
	ws, _ := prompt.BuiltinTool(prompt.WebSearch)
	want := `{"type":"object","properties":{"query":{"type":"string","description":"The search query (3-6 keywords recommended)"}},"required":["query"]}`
	if ws.Description != "Search the web for current information. Returns relevant web pages with snippets." || string(ws.Parameters.(prompt.Schema).JSON()) != want {
		t.Errorf("web_search is not LibreChat's schema (docs/prompt.md \"Exact texts\"): %+v", ws)
	}
	if _, ok := prompt.BuiltinTool("execute_code"); ok {
		t.Errorf("unknown built-in found")
	}
}

// Segments are trimmed as JavaScript's trim does (LibreChat's): a byte order
// mark goes, U+0085 stays, and so does inner white space.
func TestSegmentsTrimmedAsJavaScriptDoes(t *testing.T) {
	in := prompt.Input{
		Agent:    prompt.Agent{Instructions: "\ufeff\u00a0 You are helpful.\n\n  Be brief.\u0085"},
		Now:      referenceNow,
		Location: time.UTC,
	}
	if got, want := prompt.SystemMessage(in), "You are helpful.\n\n  Be brief.\u0085"; got != want {
		t.Errorf("system message %q, want %q", got, want)
	}
}

// Every placeholder Placeholders lists is one ReplacePlaceholders fills, so
// that the list a UI shows is the one the assembler honours.
func TestPlaceholdersListIsWhatIsReplaced(t *testing.T) {
	now := time.Date(2026, 3, 30, 5, 0, 0, 0, time.UTC)
	list := prompt.Placeholders()
	if len(list) != 4 {
		t.Errorf("%d placeholders listed, want 4", len(list))
	}
	for _, p := range list {
		if got := prompt.ReplacePlaceholders(p.Name, now, time.UTC, "Ann"); got == p.Name || strings.Contains(got, "{{") || p.Description == "" {
			t.Errorf("%s: replaced by %q, described %q", p.Name, got, p.Description)
		}
	}
}
