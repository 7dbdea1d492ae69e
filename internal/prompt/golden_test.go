package prompt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/prompt"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// referenceNow is the moment of the reference examples (testdata/*.reference.txt):
// 2025-11-25 is a Tuesday (2).
var referenceNow = time.Date(2025, 11, 25, 14, 30, 45, 0, time.UTC)

// anvsInstructions are the serverInstructions of ANVS-IAEA-Wetten in
// testdata/anvs.reference.txt as the YAML block scalar yields them (the trailing
// space is the example's).
const anvsInstructions = `When using search tools, synthesize results into a clear answer in the user's language.

**CITE SEARCH RESULTS:**
Use EXACT anchor markers provided in results. Copy markers like \ue202turn0file0 
into your response immediately after statements from that source:
- Single source: "Statement here \ue202turn0file1."
- Multiple sources: "Statement \ue200\ue202turn0file0\ue202turn0file1\ue201."
`

// anvsSearch is the tool of the ANVS-IAEA-Wetten server that the reference
// examples name (search_anvs__mcp__ANVS-IAEA-Wetten); they do not show its
// description or schema, so these are made up.
func anvsSearch() prompt.Tool {
	return prompt.Tool{
		Name:        mcp.Key("search_anvs", "ANVS-IAEA-Wetten"),
		Description: "Search ANVS guidance, IAEA safety standards and Dutch nuclear law.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"The search query"}},"required":["query"]}`),
		Kind:        prompt.ToolMCP,
		Server:      "ANVS-IAEA-Wetten",
	}
}

func builtin(t testing.TB, name string) prompt.Tool {
	t.Helper()
	tool, ok := prompt.BuiltinTool(name)
	if !ok {
		t.Fatalf("no built-in tool %q", name)
	}
	return tool
}

func user(text string) []llm.Message {
	return []llm.Message{{Role: llm.RoleUser, Content: text}}
}

// neoInput is the input of testdata/neo.reference.txt, an MCP prompt with 6
// tools: the reference example's agent with the NEO server's six tools, listed
// from a real server through the MCP manager. fromServer selects
// serverInstructions: true instead of the configured text.
func neoInput(t *testing.T, fromServer bool) prompt.Input {
	t.Helper()
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.NEO())
	cfg := mcp.ServerConfig{
		Name: mcptest.NEOName, Transport: mcp.TransportStreamableHTTP, URL: url,
		Timeout: 10 * time.Second, InitTimeout: 10 * time.Second, Scope: mcp.ScopeApp,
	}
	if fromServer {
		cfg.InstructionsFromServer = true
	} else {
		cfg.Instructions = mcptest.NEOInstructions
	}
	m := mcp.NewManager([]mcp.ServerConfig{cfg}, mcp.Options{})
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	listed, err := m.Tools(ctx, mcptest.NEOName, nil)
	if err != nil {
		t.Fatalf("listing the NEO tools: %v", err)
	}
	instructions, err := m.Instructions(ctx, mcptest.NEOName, nil)
	if err != nil {
		t.Fatalf("resolving the NEO instructions: %v", err)
	}
	spec := agent.Spec{
		Name:     "Nuclear Regulations Expert",
		Provider: "openai",
		Model:    "gpt-4",
		// The reference example's line break after "requirements," keeps
		// its trailing space.
		Instructions:    "You are a nuclear regulations expert assistant. Current date: {{current_date}}.\n\nHelp users understand nuclear safety regulations, radiation protection requirements, \nand compliance obligations. Be precise and cite specific regulation sections.",
		ModelParameters: map[string]any{"temperature": 0.7},
	}
	var tools []prompt.Tool
	for _, lt := range listed {
		spec.Tools = append(spec.Tools, lt.Key)
		tools = append(tools, prompt.Tool{Name: lt.Key, Description: lt.Description, Parameters: lt.InputSchema, Kind: prompt.ToolMCP, Server: lt.Server})
	}
	return prompt.Input{
		AgentID:  "agent_neo",
		Agent:    fromSpec(spec),
		Tools:    tools,
		Servers:  []prompt.Server{{Name: mcptest.NEOName, Instructions: instructions}},
		Now:      referenceNow,
		Location: time.UTC,
		Messages: user("Wat zijn de eisen voor stralingsbescherming bij nucleaire installaties in Nederland?"),
	}
}

// goldenCase is one reference example (testdata/<name>.reference.txt). Its system
// message must contain every line of the example except those in notInGolden, each of
// which testdata/<name>.md explains; exact cases must equal the example
// without those lines.
type goldenCase struct {
	name        string
	input       func(t *testing.T) prompt.Input
	exact       bool
	notInGolden []string
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{
			// One MCP server's instructions; how the golden differs and why: testdata/anvs.md.
			name:  "anvs",
			exact: true,
			input: func(t *testing.T) prompt.Input {
				return prompt.Input{
					Agent: fromSpec(agent.Spec{
						Provider: "openai", Model: "gpt-4",
						Instructions: "You are a helpful assistant specialized in nuclear regulations.",
						Tools:        []string{"search_anvs__mcp__ANVS-IAEA-Wetten"},
					}),
					Tools:    []prompt.Tool{anvsSearch()},
					Servers:  []prompt.Server{{Name: "ANVS-IAEA-Wetten", Instructions: anvsInstructions}},
					Now:      referenceNow,
					Messages: user("Welke dosislimieten gelden voor werknemers?"),
				}
			},
			notInGolden: []string{"[Agent Instructions]"},
		},
		{
			// The NEO server's six tools: system prompt, tools array and request;
			// how the goldens differ and why: testdata/neo.md.
			name:  "neo",
			exact: true,
			input: func(t *testing.T) prompt.Input { return neoInput(t, false) },
		},
		{
			// An agent made in the UI; how the golden differs and why: testdata/ui_agent.md.
			name: "ui_agent",
			input: func(t *testing.T) prompt.Input {
				return prompt.Input{
					AgentID: "agent_abc123",
					Agent: fromSpec(agent.Spec{
						Name:         "Nuclear Regulations Expert",
						Description:  "Expert on ANVS, IAEA, and Dutch nuclear law",
						Instructions: "You are an expert on nuclear regulations. Current date: {{current_date}}.\n\nWhen answering questions:\n1. Always cite specific regulation sections\n2. Distinguish between Dutch (ANVS) and international (IAEA) standards\n3. Use formal, precise language",
						Provider:     "openai",
						Model:        "gpt-4",
						Tools:        []string{"file_search", "search_anvs__mcp__ANVS-IAEA-Wetten"},
						Artifacts:    agent.ArtifactsShadcnUI,
						ToolResources: &agent.ToolResources{FileSearch: &agent.FileSearchResources{
							FileIDs: []string{"file_123", "file_456"},
						}},
					}),
					Tools:   []prompt.Tool{builtin(t, prompt.FileSearch), anvsSearch()},
					Servers: []prompt.Server{{Name: "ANVS-IAEA-Wetten", Instructions: anvsInstructions}},
					AgentFiles: []prompt.File{
						{ID: "file_123", Filename: "anvs-regulations.pdf", Type: "application/pdf"},
						{ID: "file_456", Filename: "iaea-safety-standards.pdf", Type: "application/pdf"},
					},
					Now:      referenceNow,
					Messages: user("Wat zegt de ANVS over dosislimieten voor werknemers?"),
				}
			},
			notInGolden: []string{
				"[Tool Contexts]",
				"[Agent Instructions - with placeholders replaced]",
				"When using search tools, synthesize results into a clear answer...",
				"[Artifacts Prompt - if enabled]",
				"The assistant can create and reference artifacts during conversations...",
			},
		},
		{
			// Files attached; how the golden differs and why: testdata/files.md.
			name: "files",
			input: func(t *testing.T) prompt.Input {
				report := prompt.File{ID: "file_report", Filename: "report.pdf", Type: "application/pdf"}
				data := prompt.File{ID: "file_data", Filename: "data.xlsx", Type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
				return prompt.Input{
					Agent: fromSpec(agent.Spec{
						Provider: "openai", Model: "gpt-4o",
						Instructions:  "You are an energy market analyst. Answer from the documents the user provides.",
						Tools:         []string{"file_search"},
						ToolResources: &agent.ToolResources{FileSearch: &agent.FileSearchResources{FileIDs: []string{"file_report"}}},
					}),
					Tools:      []prompt.Tool{builtin(t, prompt.FileSearch)},
					AgentFiles: []prompt.File{report},
					Attached:   []prompt.File{report, data},
					RAG: &prompt.RAG{Files: []prompt.RAGFile{
						{File: report, Chunks: []string{
							"The analysis shows that renewable energy adoption increased by 15% in 2024...",
							"Key factors include government subsidies and falling solar panel costs...",
						}},
						{File: data},
					}},
					Now:      referenceNow,
					Messages: user("What drove the growth in renewable energy adoption?"),
				}
			},
			notInGolden: []string{"[Agent Instructions Here]"},
		},
		{
			// Web search; how the golden differs and why: testdata/web_search.md.
			name: "web_search",
			input: func(t *testing.T) prompt.Input {
				return prompt.Input{
					Agent: fromSpec(agent.Spec{
						Provider: "openai", Model: "gpt-4o",
						Instructions: "You are a helpful assistant.",
						Tools:        []string{"web_search"},
					}),
					Tools:    []prompt.Tool{builtin(t, prompt.WebSearch)},
					Now:      referenceNow,
					Messages: user("Wat voor weer wordt het vanmiddag in Rotterdam?"),
				}
			},
			notInGolden: []string{"[Agent Instructions]"},
		},
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input(t)
			req, err := prompt.Build(in)
			if err != nil {
				t.Fatal(err)
			}
			body, err := req.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, body, "", "  "); err != nil {
				t.Fatalf("the body is not valid JSON: %v\n%s", err, body)
			}
			indented.WriteByte('\n')
			system := prompt.SystemMessage(in)
			checkGolden(t, tc.name+".request.golden", indented.Bytes())
			checkGolden(t, tc.name+".system.golden", []byte(system))

			if req.Messages[0].Role != llm.RoleSystem || req.Messages[0].Content != system {
				t.Errorf("the first message is not the system message")
			}
			if _, err := os.Stat(filepath.Join("testdata", tc.name+".md")); err != nil {
				t.Errorf("golden %s has no note: %v", tc.name, err)
			}
			checkReference(t, tc, system)
		})
	}
}

// checkReference compares a system message with its reference example.
func checkReference(t *testing.T, tc goldenCase, system string) {
	t.Helper()
	ref := readFile(t, tc.name+".reference.txt")
	skip := map[string]bool{}
	for _, l := range tc.notInGolden {
		skip[l] = true
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(system, "\n") {
		lines[l] = true
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(ref), "\n") {
		if skip[l] {
			if lines[l] {
				t.Errorf("reference line %q is listed as left out but is in the system message", l)
			}
			delete(skip, l)
			continue
		}
		kept = append(kept, l)
		if !lines[l] {
			t.Errorf("reference line %q is not in the system message", l)
		}
	}
	for l := range skip {
		t.Errorf("notInGolden line %q is not in the reference example", l)
	}
	if tc.exact {
		if diff := cmp.Diff(strings.TrimSpace(strings.Join(kept, "\n")), system); diff != "" {
			t.Errorf("system message differs from the reference example (-reference +got):\n%s", diff)
		}
	}
}

func TestNEORequest(t *testing.T) {
	req, err := prompt.Build(neoInput(t, false))
	if err != nil {
		t.Fatal(err)
	}
	body, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model      string        `json:"model"`
		Messages   []llm.Message `json:"messages"`
		Tools      any           `json:"tools"`
		ToolChoice string        `json:"tool_choice"`
		Temp       float64       `json:"temperature"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var refTools any
	if err := json.Unmarshal([]byte(readFile(t, "neo_tools.reference.json")), &refTools); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refTools, got.Tools); diff != "" {
		t.Errorf("tools differ from the reference tools array (-reference +got):\n%s", diff)
	}
	if got.Model != "gpt-4" || got.ToolChoice != "auto" || got.Temp != 0.7 || len(got.Messages) != 2 ||
		got.Messages[1].Content != "Wat zijn de eisen voor stralingsbescherming bij nucleaire installaties in Nederland?" {
		t.Errorf("request = %+v", got)
	}
	wantKeys := []string{"model", "messages", "tools", "tool_choice", "temperature"}
	if diff := cmp.Diff(wantKeys, topKeys(t, body)); diff != "" {
		t.Errorf("key order (-want +got):\n%s", diff)
	}
}

// TestNEOInstructionsFromServer checks that serverInstructions: true gives the
// reference example's prompt too, the NEO server sending the same text.
func TestNEOInstructionsFromServer(t *testing.T) {
	got := prompt.SystemMessage(neoInput(t, true))
	if want := readFile(t, "neo.system.golden"); got != want {
		t.Errorf("with serverInstructions: true the system message differs:\n%s", cmp.Diff(want, got))
	}
}

// topKeys returns the top-level keys of a JSON object in order.
func topKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkGolden compares got with testdata/name, rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-golden +got); run go test -update if the change is right:\n%s", name, diff)
	}
}

// fromSpec is what the run path takes from an agent's definition.
func fromSpec(s agent.Spec) prompt.Agent {
	return prompt.Agent{Model: s.Model, Instructions: s.Instructions, Artifacts: string(s.Artifacts), ModelParameters: s.ModelParameters}
}
