package prompt_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
)

// benchInput is an agent with 30 MCP tools from 3 servers, web_search and
// file_search over 10 files, and 50 memory entries. The tool schemas are
// decoded maps, as MCP clients hold them.
func benchInput(b *testing.B) prompt.Input {
	in := prompt.Input{
		AgentID: "agent_bench",
		Agent: prompt.Agent{
			Model:           "gpt-4o",
			Instructions:    "You are a regulations assistant for {{current_user}}. Today is {{current_date}}.\nAnswer precisely and cite your sources.",
			Artifacts:       prompt.ArtifactsDefault,
			ModelParameters: map[string]any{"temperature": 0.7, "max_tokens": 2048},
		},
		Tools:    []prompt.Tool{builtin(b, prompt.WebSearch), builtin(b, prompt.FileSearch)},
		MemoryOn: true,
		UserName: "John Doe",
		Now:      referenceNow,
		Location: time.UTC,
		Messages: user("Wat zijn de eisen voor stralingsbescherming bij nucleaire installaties in Nederland?"),
	}
	for s := range 3 {
		server := "server-" + strconv.Itoa(s)
		in.Servers = append(in.Servers, prompt.Server{Name: server, Instructions: anvsInstructions})
		for i := range 10 {
			var schema any
			if err := json.Unmarshal([]byte(`{"type":"object","properties":{"question":{"type":"string","description":"The search query or question"},"doc_ids":{"type":"array","items":{"type":"integer"},"description":"List of document IDs to search within (from step 1 SUMMARY)"},"num_results":{"type":"integer","description":"Number of chunks to return (1-20, default: 10)"}},"required":["question","doc_ids"]}`), &schema); err != nil {
				b.Fatal(err)
			}
			name := "zoek_in_collectie_" + strconv.Itoa(i)
			in.Tools = append(in.Tools, prompt.Tool{
				Name:        mcp.Key(name, server),
				Description: "STEP 2: Search within specific documents that you've already identified. IMPORTANT: doc_ids requires actual Document ID numbers from step 1.",
				Parameters:  schema,
				Kind:        prompt.ToolMCP,
				Server:      server,
			})
		}
	}
	for i := range 10 {
		in.AgentFiles = append(in.AgentFiles, prompt.File{ID: "file_" + strconv.Itoa(i), Filename: "regulation-" + strconv.Itoa(i) + ".pdf", Type: "application/pdf"})
	}
	for i := range 50 {
		in.Memory = append(in.Memory, prompt.MemoryEntry{
			Key:       "fact_" + strconv.Itoa(i),
			Value:     "The user works on radiation protection programme number " + strconv.Itoa(i) + ".",
			UpdatedAt: referenceNow.Add(time.Duration(i-50) * time.Hour),
		})
	}
	return in
}

// BenchmarkBuild measures one build. The headline case is the one Relay
// runs: MCP schemas turned into a prompt.Schema once, when the tools were
// listed. "body" adds writing the request body; "maps" passes the decoded
// schemas instead, written anew on every build.
func BenchmarkBuild(b *testing.B) {
	maps := benchInput(b)
	prepared := benchInput(b)
	for i := range prepared.Tools {
		s, err := prompt.NewSchema(prepared.Tools[i].Parameters)
		if err != nil {
			b.Fatal(err)
		}
		prepared.Tools[i].Parameters = s
	}
	run := func(in prompt.Input, body bool) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, err := prompt.Build(in)
				if err != nil {
					b.Fatal(err)
				}
				if body {
					if _, err := req.MarshalJSON(); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	b.Run("request", run(prepared, false))
	b.Run("body", run(prepared, true))
	b.Run("maps", run(maps, false))
	b.Run("maps+body", run(maps, true))
}
