package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentsGraph(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
agents:
  - id: router
    name: Router
    provider: openAI
    model: gpt-4o
    edges:
      - {from: router, to: lawyer, edgeType: handoff, prompt: "What should the lawyer check?", promptKey: context}
      - {from: router, to: ghost, edgeType: handoff}
  - id: lawyer
    name: Lawyer
    provider: openAI
    model: gpt-4o
    agent_ids: [summariser]
    chain_type: output_passthrough
  - id: summariser
    provider: openAI
    model: gpt-4o
`, filepath.Join(dir, "data")))
	code, out, stderr := runCLI(t, nil, "", "agents", "graph", "--config", cfgPath, "router")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var g struct {
		Order []string
		Edges []struct {
			From, To  []string
			Type      string
			PromptKey string `json:"promptKey"`
		}
		Warnings []string
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(g.Order, ",") != "router,lawyer" || len(g.Warnings) != 1 || !strings.Contains(stderr, "ghost") {
		t.Errorf("graph %+v, stderr %q", g, stderr)
	}
	code, out, _ = runCLI(t, nil, "", "agents", "graph", "--config", cfgPath, "--format", "mermaid", "router")
	if code != 0 || !strings.HasPrefix(out, "flowchart") || !strings.Contains(out, "Lawyer (lawyer)") {
		t.Errorf("mermaid: %d %q", code, out)
	}
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var body map[string]any
	if code := s.call(t, testKey, "GET", "/api/agents/router/graph", "", &body); code != 200 || body["graph"] == nil {
		t.Errorf("GET graph: %d %v", code, body)
	}
	if code := s.call(t, testKey, "GET", "/api/agents/nope/graph", "", &body); code != 404 {
		t.Errorf("unknown agent: %d", code)
	}
}
