package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// aimock starts the fake LLM server with fixtures where the model calls
// get-sum__mcp__everything for "2+3" and answers from the result.
func aimock(t *testing.T) string {
	t.Helper()
	return llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"2+3","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"2+3","hasToolResult":true},"response":{"content":"The sum is 5."}}]}`)
}

func journal(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/__aimock/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestChatEndToEnd: aimock as the model (once
// through the OpenAI-compatible client, once through the Anthropic one) and
// server-everything over stdio as the tool.
func TestChatEndToEnd(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := aimock(t)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  anthropic:
    apiKey: sk-ant-test
    baseURL: %s
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
agents:
  - id: calc-openai
    provider: mock
    model: gpt-4o
    instructions: Use the tools.
    tools: [get-sum__mcp__everything]
  - id: calc-anthropic
    provider: anthropic
    model: claude-sonnet-4
    instructions: Use the tools.
    tools: [get-sum__mcp__everything]
`, filepath.Join(dir, "data"), mock, mock, everything))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	for _, agentID := range []string{"calc-openai", "calc-anthropic"} {
		t.Run(agentID, func(t *testing.T) {
			code, out, stderr := runCLI(t, nil, "", "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", agentID, "What is 2+3?")
			if code != 0 {
				t.Fatalf("relay chat: exit %d\n%s\n%s", code, out, stderr)
			}
			if strings.TrimSpace(out) != "The sum is 5." {
				t.Errorf("answer %q", out)
			}
			if !strings.Contains(stderr, "→ get-sum__mcp__everything") || !strings.Contains(stderr, "The sum of 2 and 3 is 5.") {
				t.Errorf("tool call not shown:\n%s", stderr)
			}
		})
	}
	j := journal(t, mock)
	// OpenAI format: a tool message with the result and the call's id.
	if !strings.Contains(j, `"role":"tool"`) || !strings.Contains(j, `The sum of 2 and 3 is 5.`) {
		t.Errorf("journal lacks the OpenAI tool message:\n%.2000s", j)
	}
	// Anthropic: aimock's journal shows Anthropic requests converted to the
	// OpenAI shape, so the tool_result block appears as a tool message answering
	// the tool_use id ("toolu_…") that came from the Anthropic stream.
	var entries []struct {
		Path string
		Body struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
	}
	if err := json.Unmarshal([]byte(j), &entries); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		for _, m := range e.Body.Messages {
			if e.Path == "/v1/messages" && m.Role == "tool" && strings.HasPrefix(m.ToolCallID, "toolu_") && m.Content == "The sum of 2 and 3 is 5." {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("aimock never got the tool result of the Anthropic tool_use:\n%.3000s", j)
	}
	// The run is stored with its tool call, and exports to Ragas.
	code, out, _ := runCLI(t, nil, "", "export", "ragas", "--config", cfgPath, "--agent", "calc-openai", "--multi-turn")
	var row struct {
		UserInput []map[string]any `json:"user_input"`
	}
	if err := json.Unmarshal([]byte(out), &row); code != 0 || err != nil || len(row.UserInput) != 4 || row.UserInput[2]["content"] != "The sum of 2 and 3 is 5." {
		t.Errorf("ragas export: exit %d, %q, %v", code, out, err)
	}
}

// A message of nothing but spaces is no message, whether it is given as an
// argument or on standard input: a usage error, before any run.
func TestChatWithoutMessageIsAUsageError(t *testing.T) {
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"argument", "", []string{"  \t "}},
		{"standard input", " \n\t\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, nil, c.stdin, append([]string{"chat", "--agent", "calc"}, c.args...)...)
			if code != 2 || !strings.Contains(stderr, "no message: give one as an argument or on standard input") {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
		})
	}
}
