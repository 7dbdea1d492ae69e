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

// fiveTurns are the messages of a five-turn conversation whose first two
// turns call server-everything's get-sum, and the answers aimock gives.
var fiveTurns = []struct{ ask, answer string }{
	{"turn one: what is 2+3?", "The sum is 5."},
	{"turn two: and 4+4?", "That one is 8."},
	{"turn three: thanks", "You are welcome."},
	{"turn four: one more thing", "Go ahead."},
	{"turn five: summarise", "We added 2+3 and 4+4."},
}

const fiveTurnFixtures = `{"fixtures":[
 {"match":{"userMessage":"turn one","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"turn one","hasToolResult":true},"response":{"content":"The sum is 5."}},
 {"match":{"userMessage":"turn two","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":4,\"b\":4}"}]}},
 {"match":{"userMessage":"turn two","hasToolResult":true},"response":{"content":"That one is 8."}},
 {"match":{"userMessage":"turn three"},"response":{"content":"You are welcome."}},
 {"match":{"userMessage":"turn four"},"response":{"content":"Go ahead."}},
 {"match":{"userMessage":"turn five"},"response":{"content":"We added 2+3 and 4+4."}}]}`

// journalMessage is a message of a request in aimock's journal, which shows
// every provider's request in the OpenAI shape.
type journalMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// lastRequest is the last request aimock got on path whose last user message
// contains text.
func lastRequest(t *testing.T, mock, path, text string) []journalMessage {
	t.Helper()
	var entries []struct {
		Path string
		Body struct {
			Messages []journalMessage `json:"messages"`
		}
	}
	if err := json.Unmarshal([]byte(journal(t, mock)), &entries); err != nil {
		t.Fatal(err)
	}
	var found []journalMessage
	for _, e := range entries {
		msgs := e.Body.Messages
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				if e.Path == path && strings.Contains(fmt.Sprint(msgs[i].Content), text) {
					found = msgs
				}
				break
			}
		}
	}
	if found == nil {
		t.Fatalf("aimock got no request on %s for %q", path, text)
	}
	return found
}

// checkTurnFive checks the request of turn five: every earlier message, and
// the tool calls of turns one and two with their results, in order.
func checkTurnFive(t *testing.T, msgs []journalMessage) {
	t.Helper()
	var got []string
	ids := map[string]bool{}
	for _, m := range msgs {
		line := m.Role + ": " + strings.TrimSpace(textOf(m.Content))
		for _, c := range m.ToolCalls {
			line += fmt.Sprintf(" [call %s %s]", c.Function.Name, c.Function.Arguments)
			ids[c.ID] = true
		}
		if m.Role == "tool" {
			if !ids[m.ToolCallID] || m.ToolCallID == "" {
				t.Errorf("tool result %q answers %q, a call the request does not hold", textOf(m.Content), m.ToolCallID)
			}
		}
		got = append(got, line)
	}
	want := []string{
		"system: Use the tools.",
		"user: turn one: what is 2+3?",
		`assistant:  [call get-sum__mcp__everything {"a":2,"b":3}]`,
		"tool: The sum of 2 and 3 is 5.",
		"assistant: The sum is 5.",
		"user: turn two: and 4+4?",
		`assistant:  [call get-sum__mcp__everything {"a":4,"b":4}]`,
		"tool: The sum of 4 and 4 is 8.",
		"assistant: That one is 8.",
		"user: turn three: thanks",
		"assistant: You are welcome.",
		"user: turn four: one more thing",
		"assistant: Go ahead.",
		"user: turn five: summarise",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("turn five's request:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// textOf is a journal message's content as text: a string, or its text parts.
func textOf(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

// TestFiveTurnConversationReplaysToolHistory: after the first turn only the
// conversation id is sent, and turn five's request carries every earlier
// message and turns one and two's tool calls and results in the provider's
// format — through POST /api/chat, through relay chat --conversation, and
// through the Anthropic client.
func TestFiveTurnConversationReplaysToolHistory(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, fiveTurnFixtures)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  log_level: warn
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
  - {id: calc-openai, provider: mock, model: gpt-4o, instructions: Use the tools., tools: [get-sum__mcp__everything]}
  - {id: calc-anthropic, provider: anthropic, model: claude-sonnet-4, instructions: Use the tools., tools: [get-sum__mcp__everything]}
`, filepath.Join(dir, "data"), mock, mock, everything))

	t.Run("api", func(t *testing.T) {
		s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
		defer s.stop(t)
		conv := ""
		for i, turn := range fiveTurns {
			req := map[string]string{"agent_id": "calc-openai", "text": turn.ask}
			if conv != "" {
				req["conversation_id"] = conv
			}
			body, _ := json.Marshal(req)
			resp := s.post(t, "/api/chat", string(body), nil)
			evs := readSSE(t, resp, nil)
			resp.Body.Close()
			last := evs[len(evs)-1]
			msg, _ := last.Data["message"].(map[string]any)
			if last.Type != "run.finished" || last.Data["status"] != "succeeded" || msg["text"] != turn.answer {
				t.Fatalf("turn %d: last event %+v", i+1, last)
			}
			if conv == "" {
				conv, _ = evs[0].Data["conversation_id"].(string)
			} else if got := evs[0].Data["conversation_id"]; got != conv {
				t.Fatalf("turn %d ran in conversation %v, want %s", i+1, got, conv)
			}
		}
		checkTurnFive(t, lastRequest(t, mock, "/v1/chat/completions", "turn five"))

		// An unknown conversation is a 404, never a new conversation.
		var e struct{ Error struct{ Code string } }
		if code := s.call(t, testKey, "POST", "/api/chat", `{"agent_id":"calc-openai","text":"hello","conversation_id":"conv_unknown"}`, &e); code != 404 {
			t.Errorf("unknown conversation: HTTP %d %+v, want 404", code, e)
		}
	})

	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	for _, tc := range []struct{ agent, path string }{{"calc-openai", "/v1/chat/completions"}, {"calc-anthropic", "/v1/messages"}} {
		t.Run("cli/"+tc.agent, func(t *testing.T) {
			conv := ""
			for i, turn := range fiveTurns {
				args := []string{"chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", tc.agent}
				if conv != "" {
					args = append(args, "--conversation", conv)
				}
				code, out, stderr := runCLI(t, nil, "", append(args, turn.ask)...)
				if code != 0 || strings.TrimSpace(out) != turn.answer {
					t.Fatalf("turn %d: exit %d, answer %q\n%s", i+1, code, out, stderr)
				}
				if conv == "" {
					_, rest, _ := strings.Cut(stderr, "conversation ")
					conv, _, _ = strings.Cut(rest, ",")
				}
			}
			checkTurnFive(t, lastRequest(t, mock, tc.path, "turn five"))
		})
	}
}
