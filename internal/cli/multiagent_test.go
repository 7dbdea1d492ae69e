package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

type journalEntry struct {
	Path      string
	Timestamp int64
	Body      struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
}

func (e journalEntry) system() string { return fmt.Sprint(e.Body.Messages[0].Content) }

func (e journalEntry) lastUser() string {
	for i := len(e.Body.Messages) - 1; i >= 0; i-- {
		if e.Body.Messages[i].Role == "user" {
			return fmt.Sprint(e.Body.Messages[i].Content)
		}
	}
	return ""
}

// TestMultiAgentEndToEnd runs with aimock and server-everything.
func TestMultiAgentEndToEnd(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"route me"},"response":{"toolCalls":[{"name":"lc_transfer_to_specialist","arguments":"{\"context\":\"please check the sum of 2 and 3\"}"}]}},
 {"match":{"userMessage":"please check the sum","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"please check the sum","hasToolResult":true},"response":{"content":"The specialist says 5."}},
 {"match":{"userMessage":"write a draft"},"response":{"content":"DRAFT-TEXT"}},
 {"match":{"userMessage":"DRAFT-TEXT"},"response":{"content":"REFINED-TEXT"}},
 {"match":{"userMessage":"REFINED-TEXT"},"response":{"content":"SUMMARY-TEXT"}},
 {"match":{"userMessage":"in parallel"},"response":{"content":"one view"},"latency":100},
 {"match":{"userMessage":"both views"},"response":{"content":"merged"}}]}`)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
agents:
  - {id: router, provider: mock, model: m, instructions: "I route.",
     edges: [{from: router, to: specialist, edgeType: handoff, prompt: "What should the specialist check?", promptKey: context}]}
  - {id: specialist, provider: mock, model: m, instructions: "I check.", tools: [get-sum__mcp__everything]}
  - {id: drafter, provider: mock, model: m, instructions: "I draft.", agent_ids: [refiner, summariser], chain_type: output_passthrough}
  - {id: refiner, provider: mock, model: m, instructions: "I refine."}
  - {id: summariser, provider: mock, model: m, instructions: "I summarise."}
  - {id: left, provider: mock, model: m, instructions: "I am left.",
     edges: [{from: [left, right], to: merger, edgeType: direct, prompt: "Combine both views: {results}"}]}
  - {id: right, provider: mock, model: m, instructions: "I am right."}
  - {id: merger, provider: mock, model: m, instructions: "I merge."}
`, filepath.Join(dir, "data"), mock, everything))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatal(stderr)
	}
	chat := func(agentID, text string) string {
		code, out, stderr := runCLI(t, nil, "", "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", agentID, text)
		if code != 0 {
			t.Fatalf("relay chat %s: exit %d\n%s", agentID, code, stderr)
		}
		return strings.TrimSpace(out)
	}
	entries := func() []journalEntry {
		var es []journalEntry
		if err := json.Unmarshal([]byte(journal(t, mock)), &es); err != nil {
			t.Fatal(err)
		}
		return es
	}

	t.Run("handoff", func(t *testing.T) {
		if out := chat("router", "route me please"); !strings.Contains(out, "The specialist says 5.") {
			t.Errorf("answer %q", out)
		}
		found := false
		for _, e := range entries() {
			if e.system() == "I check." && strings.Contains(e.lastUser(), `"router" handed this conversation over to you`) && strings.HasSuffix(e.lastUser(), "please check the sum of 2 and 3") {
				found = true
			}
		}
		if !found {
			t.Errorf("no specialist request with the preamble and the handed-over text")
		}
	})
	t.Run("output passthrough chain", func(t *testing.T) {
		if out := chat("drafter", "write a draft"); !strings.Contains(out, "SUMMARY-TEXT") {
			t.Errorf("answer %q", out)
		}
		got := map[string]string{}
		for _, e := range entries() {
			got[e.system()] = e.lastUser()
		}
		if got["I refine."] != "DRAFT-TEXT" || got["I summarise."] != "REFINED-TEXT" {
			t.Errorf("refiner got %q, summariser got %q", got["I refine."], got["I summarise."])
		}
	})
	t.Run("parallel with fan-in", func(t *testing.T) {
		if out := chat("left", "both views in parallel"); !strings.Contains(out, "merged") {
			t.Errorf("answer %q", out)
		}
		var left, right, merger *journalEntry
		es := entries()
		for i := range es {
			switch es[i].system() {
			case "I am left.":
				left = &es[i]
			case "I am right.":
				right = &es[i]
			case "I merge.":
				merger = &es[i]
			}
		}
		if left == nil || right == nil || merger == nil {
			t.Fatalf("requests missing: %v %v %v", left, right, merger)
		}
		// Both start agents asked before either could have had its 100 ms answer.
		if d := left.Timestamp - right.Timestamp; d > 90 || d < -90 {
			t.Errorf("start agents asked %d ms apart; they should run together", d)
		}
		if u := merger.lastUser(); !strings.HasPrefix(u, "Combine both views:") || strings.Count(u, "AI: one view") != 2 {
			t.Errorf("merger's prompt %q", u)
		}
	})
}
