package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// TestChatAsksOnTheTerminal: relay chat asks an MCP server's question field
// by field and answers from standard input; a server with sampling on gets
// its completion from the agent's model, within maxTokens, and one with
// sampling off is refused.
func TestChatAsksOnTheTerminal(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"who am I","hasToolResult":false},"response":{"toolCalls":[{"name":"ask__mcp__asks","arguments":"{}"}]}},
 {"match":{"userMessage":"who am I","hasToolResult":true},"response":{"content":"You told me."}},
 {"match":{"userMessage":"complete this"},"response":{"content":"forty-two"}},
 {"match":{"userMessage":"sample on","hasToolResult":false},"response":{"toolCalls":[{"name":"sample__mcp__asks","arguments":"{\"prompt\":\"complete this\",\"maxTokens\":5000}"}]}},
 {"match":{"userMessage":"sample on","hasToolResult":true},"response":{"content":"Sampled."}},
 {"match":{"userMessage":"sample off","hasToolResult":false},"response":{"toolCalls":[{"name":"sample__mcp__off","arguments":"{\"prompt\":\"complete this\"}"}]}},
 {"match":{"userMessage":"sample off","hasToolResult":true},"response":{"content":"Refused."}}]}`)
	url := mcptest.Start(t, mcp.TransportStreamableHTTP, mcptest.Options{ExtraTools: mcptest.ClientTools()})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
mcpServers:
  asks:
    type: streamable-http
    url: %s
    sampling: {enabled: true, maxTokens: 64}
  off:
    type: streamable-http
    url: %s
agents:
  - id: asker
    provider: mock
    model: gpt-4o
    tools: [ask__mcp__asks, sample__mcp__asks, sample__mcp__off]
`, filepath.Join(dir, "data"), mock, url, url))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	chat := func(stdin, text string) (string, string) {
		code, out, stderr := runCLI(t, nil, stdin, "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", "asker", text)
		if code != 0 {
			t.Fatalf("relay chat: exit %d\n%s\n%s", code, out, stderr)
		}
		return out, stderr
	}
	// accept, the color's default, the name.
	_, stderr := chat("\n\nAnn\n", "who am I")
	if !strings.Contains(stderr, "? asks asks: Who are you?") || !strings.Contains(stderr, "(default green)") {
		t.Errorf("the question was not shown:\n%s", stderr)
	}
	if !strings.Contains(stderr, "← action=accept color=green name=Ann") {
		t.Errorf("the server did not get the answer:\n%s", stderr)
	}
	// At the end of the input the question is declined.
	if _, stderr := chat("", "who am I"); !strings.Contains(stderr, "← action=decline") {
		t.Errorf("a question without input:\n%s", stderr)
	}
	if _, stderr := chat("", "sample on"); !strings.Contains(stderr, "← forty-two model=gpt-4o") {
		t.Errorf("sampling on:\n%s", stderr)
	}
	if !strings.Contains(journal(t, mock), `"max_tokens":64`) {
		t.Errorf("the sampled request was not bounded by maxTokens:\n%.3000s", journal(t, mock))
	}
	if _, stderr := chat("", "sample off"); !strings.Contains(stderr, `sampling is off for MCP server \"off\"`) && !strings.Contains(stderr, `sampling is off for MCP server "off"`) {
		t.Errorf("sampling off:\n%s", stderr)
	}
}
