package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// memoryConfig is a config whose agent "helper" answers with aimock's
// chat-model and whose memory agent uses aimock's memory-model.
func memoryConfig(t *testing.T, mock string) (cfgPath, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	dataDir = filepath.Join(dir, "data")
	cfgPath = writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  timezone: UTC
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-memory-test-secret
memory:
  tokenLimit: 200
  messageWindowSize: 4
  agent:
    provider: mock
    model: memory-model
agents:
  - id: helper
    provider: mock
    model: chat-model
    instructions: Be brief.
`, dataDir, mock))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	return cfgPath, dataDir
}

// cliChatTurn runs `relay chat`, which returns once its run is stored and the
// work after it (the memory agent) has settled (run.Service.Settle), and
// returns the answer, the log and the conversation's id.
func cliChatTurn(t *testing.T, cfgPath, conv, text string) (answer, stderr, convID string) {
	t.Helper()
	args := []string{"chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", "helper"}
	if conv != "" {
		args = append(args, "--conversation", conv)
	}
	code, out, stderr := runCLI(t, nil, "", append(args, text)...)
	if code != 0 {
		t.Fatalf("relay chat %q: exit %d\n%s\n%s", text, code, out, stderr)
	}
	m := regexp.MustCompile(`conversation (conv_\S+), run`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no conversation id in:\n%s", stderr)
	}
	return strings.TrimSpace(out), stderr, strings.TrimSuffix(m[1], ",")
}

// aimockRequest is one request aimock received, as its journal shows it,
// with the model it named.
type aimockRequest struct {
	Path string
	Body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
}

func aimockRequests(t *testing.T, mock string) []aimockRequest {
	t.Helper()
	var es []aimockRequest
	if err := json.Unmarshal([]byte(journal(t, mock)), &es); err != nil {
		t.Fatal(err)
	}
	return es
}

// lastUser is the text of the request's last user message.
func (e aimockRequest) userText() string {
	for i := len(e.Body.Messages) - 1; i >= 0; i-- {
		if m := e.Body.Messages[i]; m.Role == "user" {
			s, _ := m.Content.(string)
			return s
		}
	}
	return ""
}

func (e aimockRequest) systemText() string {
	if len(e.Body.Messages) > 0 && e.Body.Messages[0].Role == "system" {
		s, _ := e.Body.Messages[0].Content.(string)
		return s
	}
	return ""
}

// TestMemoryAgentEndToEnd: driven by aimock,
// it stores a fact on turn 1 that is in the memory block of turn 2's system
// prompt.
func TestMemoryAgentEndToEnd(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"model":"memory-model","userMessage":"What colour do I like?"},"response":{"content":"No changes."}},
 {"match":{"model":"memory-model","userMessage":"My favourite colour is teal.","hasToolResult":false},"response":{"toolCalls":[{"name":"set_memory","arguments":"{\"key\":\"favorite_color\",\"value\":\"The user's favourite colour is teal.\"}"}]}},
 {"match":{"model":"memory-model","hasToolResult":true},"response":{"content":"Saved."}},
 {"match":{"model":"chat-model","userMessage":"My favourite colour is teal."},"response":{"content":"Teal is a fine colour."}},
 {"match":{"model":"chat-model","userMessage":"What colour do I like?"},"response":{"content":"You like teal."}}]}`)
	cfgPath, dataDir := memoryConfig(t, mock)

	answer, stderr, conv := cliChatTurn(t, cfgPath, "", "My favourite colour is teal.")
	if answer != "Teal is a fine colour." {
		t.Fatalf("turn 1 answer %q", answer)
	}
	if !strings.Contains(stderr, "memory agent finished") || !strings.Contains(stderr, "set=1") {
		t.Errorf("turn 1 log:\n%s", stderr)
	}
	// What the memory agent read: the turn's messages and the empty memory.
	var brief string
	for _, e := range aimockRequests(t, mock) {
		if e.Body.Model == "memory-model" && brief == "" {
			brief = e.userText()
		}
	}
	if !strings.Contains(brief, "No memories yet.") || !strings.Contains(brief, "Tokens used: 0 of 200") ||
		!strings.Contains(brief, "User: My favourite colour is teal.\n\nAssistant: Teal is a fine colour.") {
		t.Errorf("memory agent's message:\n%s", brief)
	}

	answer, _, _ = cliChatTurn(t, cfgPath, conv, "What colour do I like?")
	if answer != "You like teal." {
		t.Fatalf("turn 2 answer %q", answer)
	}
	var turn2 *aimockRequest
	es := aimockRequests(t, mock)
	for i := range es {
		if es[i].Body.Model == "chat-model" && es[i].userText() == "What colour do I like?" {
			turn2 = &es[i]
		}
	}
	if turn2 == nil {
		t.Fatalf("aimock never got turn 2's request:\n%.3000s", journal(t, mock))
	}
	block := regexp.MustCompile(`# Existing memory about the user:\n1\. \[\d{4}-\d{2}-\d{2}\]\. The user's favourite colour is teal\.$`)
	if !block.MatchString(turn2.systemText()) {
		t.Errorf("turn 2's system prompt lacks the memory block:\n%s", turn2.systemText())
	}

	// The memory is stored once, under the key the memory agent chose.
	st, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	users, err := st.ListUsers(context.Background())
	if err != nil || len(users) == 0 {
		t.Fatalf("users %v %v", users, err)
	}
	var keys []string
	for _, u := range users {
		es, err := st.ListMemories(context.Background(), u.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			keys = append(keys, e.Key+"="+e.Value)
		}
	}
	if len(keys) != 1 || keys[0] != "favorite_color=The user's favourite colour is teal." {
		t.Errorf("memories %q", keys)
	}
}

// TestMemoryAgentFailureEndToEnd: the memory agent's provider answers 500;
// the user's run still succeeds with its answer stored, and the failure is
// logged without the provider's key.
func TestMemoryAgentFailureEndToEnd(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"model":"memory-model"},"response":{"error":{"message":"the memory model is down","type":"server_error"},"status":500}},
 {"match":{"model":"chat-model","userMessage":"My favourite colour is teal."},"response":{"content":"Teal is a fine colour."}}]}`)
	cfgPath, dataDir := memoryConfig(t, mock)

	answer, stderr, conv := cliChatTurn(t, cfgPath, "", "My favourite colour is teal.")
	if answer != "Teal is a fine colour." {
		t.Errorf("answer %q", answer)
	}
	if !strings.Contains(stderr, "memory agent failed") || !strings.Contains(stderr, "500") {
		t.Errorf("no failure logged:\n%s", stderr)
	}
	if strings.Contains(stderr, "sk-memory-test-secret") {
		t.Errorf("the provider's key is in the log:\n%s", stderr)
	}
	memoryCalls := 0
	for _, e := range aimockRequests(t, mock) {
		if e.Body.Model == "memory-model" {
			memoryCalls++
		}
	}
	if memoryCalls == 0 {
		t.Errorf("the memory agent never called its provider")
	}

	st, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, err := st.ListMessages(context.Background(), conv)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages %v, %v", msgs, err)
	}
	ans := msgs[1]
	if ans.Role != run.RoleAssistant || ans.Text != "Teal is a fine colour." {
		t.Errorf("stored answer %+v", ans)
	}
	r, err := st.GetRun(context.Background(), ans.RunID)
	if err != nil || r.Status != run.StatusSucceeded || r.Error != "" {
		t.Errorf("run %+v, %v", r, err)
	}
}
