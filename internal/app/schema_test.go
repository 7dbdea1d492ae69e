package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// serverSchemas asks server-everything over stdio for its tools by hand and
// returns each tool's input schema as it wrote it, compacted.
func serverSchemas(t *testing.T, everything string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", everything, "stdio")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var resp struct {
			ID     int
			Result struct {
				Tools []struct {
					Name        string
					InputSchema json.RawMessage
				}
			}
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID != 2 {
			continue
		}
		schemas := map[string]string{}
		for _, tl := range resp.Result.Tools {
			var b bytes.Buffer
			if err := json.Compact(&b, tl.InputSchema); err != nil {
				t.Fatal(err)
			}
			schemas[tl.Name] = b.String()
		}
		return schemas
	}
	t.Fatalf("server-everything never answered tools/list: %v", sc.Err())
	return nil
}

// TestToolSchemasReachTheModelAsPublished: server-everything's tools reach
// the model with their input schemas as the server published them, keys in
// its order — aimock's journal compared with the server's own tools/list.
func TestToolSchemasReachTheModelAsPublished(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	want := serverSchemas(t, everything)
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
