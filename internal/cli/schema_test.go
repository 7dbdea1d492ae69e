package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// TestToolSchemasReachTheModelAsPublished: server-everything's tools reach
// the model with their input schemas as the server published them, keys in
// its order — aimock's journal compared with the server's own tools/list.
func TestToolSchemasReachTheModelAsPublished(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	want := mcptest.PublishedSchemas(t, everything)
	mock := llmtest.StartAimock(t, `{"fixtures":[{"match":{"userMessage":"schemas"},"response":{"content":"ok"}}]}`)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
agents:
  - {id: all, provider: mock, model: gpt-4o, tools: [all__mcp__everything]}
`, filepath.Join(dir, "data"), mock, everything))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	if code, out, stderr := runCLI(t, nil, "", "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", "all", "show me the schemas"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("relay chat: exit %d %q\n%s", code, out, stderr)
	}
	var entries []struct {
		Body struct {
			Tools []struct {
				Function struct {
					Name       string
					Parameters json.RawMessage
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(journal(t, mock)), &entries); err != nil || len(entries) == 0 {
		t.Fatalf("journal: %v", err)
	}
	tools := entries[len(entries)-1].Body.Tools
	compared, reordered := 0, 0
	for _, tl := range tools {
		name := strings.TrimSuffix(tl.Function.Name, "__mcp__everything")
		published, ok := want[name]
		if !ok {
			continue // listed to Relay's client only (capabilities differ)
		}
		compared++
		var got bytes.Buffer
		if err := json.Compact(&got, tl.Function.Parameters); err != nil {
			t.Fatal(err)
		}
		if got.String() != published {
			t.Errorf("%s reached the model as\n%s\nthe server published\n%s", name, got.String(), published)
		}
		var v any
		json.Unmarshal([]byte(published), &v)
		if sorted, _ := json.Marshal(v); string(sorted) != published {
			reordered++
		}
	}
	if compared < 5 || reordered == 0 {
		t.Errorf("compared %d tools, %d of them not in sorted key order: the test shows too little", compared, reordered)
	}
}
