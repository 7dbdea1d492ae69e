package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/prompt"
)

// neoConfig is the NEO reference example (internal/prompt/testdata/neo.md) as
// a relay.yaml: the in-repo NEO server with its serverInstructions, and an
// agent using its six tools.
func neoConfig(t *testing.T, serverURL string) string {
	t.Helper()
	instr := "    serverInstructions: |\n"
	for _, line := range strings.Split(strings.TrimRight(mcptest.NEOInstructions, "\n"), "\n") {
		instr += "      " + line + "\n"
	}
	tools := ""
	for _, name := range mcptest.NEOToolNames() {
		tools += fmt.Sprintf("      - %s__mcp__neo-search-server\n", name)
	}
	dir := t.TempDir()
	return fmt.Sprintf(`server:
  data_dir: %s
mcpServers:
  neo-search-server:
    type: streamable-http
    url: %s
    timeout: 60000
    chatMenu: true
%sagents:
  - id: neo
    name: NEO
    provider: openAI
    model: gpt-4o
    instructions: "You are a nuclear regulations expert assistant. Current date: {{current_date}}.\n\nHelp users understand nuclear safety regulations, radiation protection requirements, \nand compliance obligations. Be precise and cite specific regulation sections."
    tools:
%s`, filepath.Join(dir, "data"), serverURL, instr, tools)
}

type body struct {
	Model    string `json:"model"`
	Messages []struct {
		Role, Content string
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice string `json:"tool_choice"`
}

// TestPromptNEO is the NEO reference example end to end: `relay prompt` prints
// the reference example's system prompt exactly and all six tools.
func TestPromptNEO(t *testing.T) {
	url := mcptest.Start(t, "streamable-http", mcptest.NEO())
	cfgPath := writeConfig(t, t.TempDir(), neoConfig(t, url))
	code, out, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "neo", "--message", "Wat zegt de Kernenergiewet over vergunningen?",
		"--now", "2025-11-25T14:30:45Z", "--timezone", "UTC")
	if code != 0 {
		t.Fatalf("relay prompt: exit %d\n%s", code, stderr)
	}
	var b body
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	want, err := os.ReadFile("../prompt/testdata/neo.reference.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Messages) != 2 || b.Messages[0].Role != "system" || b.Messages[1].Role != "user" {
		t.Fatalf("messages: %+v", b.Messages)
	}
	if got := b.Messages[0].Content; got != strings.TrimRight(string(want), "\n") {
		t.Errorf("system prompt differs from the reference example's:\n--- got ---\n%s\n--- want ---\n%s", got, want)
	}
	if b.Messages[1].Content != "Wat zegt de Kernenergiewet over vergunningen?" || b.Model != "gpt-4o" || b.ToolChoice != "auto" {
		t.Errorf("body: model %q, user %q, tool_choice %q", b.Model, b.Messages[1].Content, b.ToolChoice)
	}
	var names []string
	for _, tl := range b.Tools {
		names = append(names, tl.Function.Name)
		if tl.Type != "function" || tl.Function.Description == "" || len(tl.Function.Parameters) == 0 {
			t.Errorf("tool %+v", tl)
		}
	}
	var wantNames []string
	for _, n := range mcptest.NEOToolNames() {
		wantNames = append(wantNames, n+"__mcp__neo-search-server")
	}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Errorf("tools %v, want %v", names, wantNames)
	}
}

func TestPromptFailures(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
mcpServers:
  down:
    type: streamable-http
    url: http://%s/mcp
    initTimeout: 1000
agents:
  - id: lonely
    provider: openAI
    model: gpt-4o
    instructions: Hello {{current_user}}.
    tools: [echo__mcp__down, file_search]
`, filepath.Join(dir, "data"), freeAddr(t)))
	code, out, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "lonely", "--message", "hi", "--user-name", "Ann")
	if code != 3 || !strings.Contains(stderr, `"down"`) {
		t.Fatalf("unreachable server: exit %d, stderr %q", code, stderr)
	}
	var b body
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("no prompt printed: %v %q", err, out)
	}
	if len(b.Tools) != 1 || b.Tools[0].Function.Name != "file_search" || !strings.Contains(b.Messages[0].Content, "Hello Ann.") {
		t.Errorf("prompt without the server's tools: %+v", b)
	}
	if code, _, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "nope"); code != 2 || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown agent: exit %d, %q", code, stderr)
	}
	if code, _, _ := runCLI(t, nil, "", "prompt", "--config", cfgPath); code != 2 {
		t.Errorf("missing --agent: exit %d", code)
	}
	if code, _, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "lonely", "--timezone", "Mars/Base"); code != 1 || !strings.Contains(stderr, "Mars/Base") {
		t.Errorf("bad timezone: exit %d, %q", code, stderr)
	}
}

func TestPromptPreviewAPI(t *testing.T) {
	url := mcptest.Start(t, "streamable-http", mcptest.NEO())
	cfgPath := writeConfig(t, t.TempDir(), neoConfig(t, url))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var b body
	code := s.call(t, testKey, "POST", "/api/agents/neo/prompt", `{"text":"hoi","timezone":"UTC","attachments":[{"name":"report.pdf","mime_type":"application/pdf"}]}`, &b)
	if code != 200 || len(b.Tools) != 6 || b.Messages[1].Content != "hoi" {
		t.Fatalf("preview: %d %+v", code, b)
	}
	// The user's memory goes into the system prompt.
	if code := s.call(t, testKey, "PUT", "/api/memories/preferences", `{"value":"Answers in Dutch, briefly."}`, nil); code != 200 {
		t.Fatalf("PUT memory: %d", code)
	}
	s.call(t, testKey, "POST", "/api/agents/neo/prompt", `{"text":"hoi"}`, &b)
	if sys := b.Messages[0].Content; !strings.Contains(sys, "# Existing memory about the user:\n1. [") || !strings.HasSuffix(sys, "]. Answers in Dutch, briefly.") {
		t.Errorf("memory segment missing:\n%s", sys)
	}
	var e map[string]any
	if code := s.call(t, testKey, "POST", "/api/agents/nope/prompt", `{"text":"x"}`, &e); code != 404 {
		t.Errorf("unknown agent: %d", code)
	}
	if code := s.call(t, testKey, "POST", "/api/agents/neo/prompt", `{"text":"x","attachments":[3]}`, &e); code != 400 {
		t.Errorf("bad attachment: %d %v", code, e)
	}
	if code := s.call(t, testKey, "POST", "/api/agents/neo/prompt", `{"text":"x","attachments":["file_nope"]}`, &e); code != 404 {
		t.Errorf("unknown file id: %d %v", code, e)
	}
}

// `relay prompt` prints the body the agent's provider client would send: with
// the stream parameters and the endpoint's addParams and dropParams for an
// OpenAI-compatible endpoint, and in Anthropic's own format for Anthropic.
func TestPromptIsTheProvidersBody(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: local
      baseURL: http://127.0.0.1:1/v1
      apiKey: sk-local
      addParams: {seed: 7}
      dropParams: [tool_choice]
agents:
  - {id: tuned, provider: local, model: llama3.1, instructions: Be brief., tools: [file_search]}
  - {id: claude, provider: anthropic, model: claude-sonnet-4-5, instructions: Be brief.}
`, filepath.Join(dir, "data")))
	code, out, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "tuned", "--message", "hi")
	if code != 0 {
		t.Fatalf("relay prompt: exit %d\n%s", code, stderr)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if string(got["seed"]) != "7" || string(got["stream"]) != "true" || got["stream_options"] == nil || got["tool_choice"] != nil || got["tools"] == nil {
		t.Errorf("the custom endpoint's body: %s", out)
	}
	// file_search with no file to search: the system prompt says so, as LibreChat's does.
	var tuned body
	if err := json.Unmarshal([]byte(out), &tuned); err != nil || len(tuned.Messages) == 0 || tuned.Messages[0].Role != "system" ||
		!strings.HasPrefix(tuned.Messages[0].Content, prompt.NoFilesNote) {
		t.Errorf("the system prompt of an agent with file_search and no files lacks the note %q: %s", prompt.NoFilesNote, out)
	}

	code, out, stderr = runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "claude", "--message", "hi")
	if code != 0 {
		t.Fatalf("relay prompt: exit %d\n%s", code, stderr)
	}
	var claude struct {
		Model     string          `json:"model"`
		System    json.RawMessage `json:"system"`
		MaxTokens int             `json:"max_tokens"`
		Stream    bool            `json:"stream"`
		Messages  []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &claude); err != nil || claude.Model != "claude-sonnet-4-5" || !strings.Contains(string(claude.System), "Be brief.") ||
		claude.MaxTokens == 0 || !claude.Stream || len(claude.Messages) != 1 || claude.Messages[0].Role != "user" {
		t.Errorf("Anthropic's body: %v\n%s", err, out)
	}
}

// A file attached twice to a preview (`relay prompt --file X --file X`, or
// the same id twice in POST /api/agents/{id}/prompt's attachments) is the one
// file, as a chat message's `files` are: not a 404 saying it is not the
// caller's.
func TestPromptFileAttachedTwice(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - {name: local, baseURL: "http://127.0.0.1:1/v1", apiKey: sk-local}
agents:
  - {id: reader, provider: local, model: llama3.1, instructions: Be brief.}
`, filepath.Join(dir, "data")))
	notes := filepath.Join(dir, "gdpr.txt")
	if err := os.WriteFile(notes, []byte("Article 6(1) of Regulation 2016/679: processing shall be lawful only if consent is given."), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: exit %d\n%s", code, stderr)
	}
	code, out, stderr := runCLI(t, nil, "", "files", "add", "--config", cfgPath, "--user", "ann@example.com", "--wait", notes)
	if code != 0 {
		t.Fatalf("files add: exit %d\n%s", code, stderr)
	}
	id := strings.Fields(out)[0]
	code, out, stderr = runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "reader", "--user", "ann@example.com",
		"--message", "lawful processing", "--file", id, "--file", id)
	if code != 0 {
		t.Fatalf("relay prompt with a file attached twice: exit %d\n%s", code, stderr)
	}
	var b body
	if err := json.Unmarshal([]byte(out), &b); err != nil || len(b.Messages) == 0 {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if sys := b.Messages[0].Content; !strings.Contains(sys, "The user has attached a file to the conversation:") ||
		strings.Count(sys, "<filename>gdpr.txt</filename>") != 2 || !strings.Contains(sys, "Article 6(1)") {
		t.Errorf("system prompt of a file attached twice, want it once with its passage:\n%s", sys)
	}
}
