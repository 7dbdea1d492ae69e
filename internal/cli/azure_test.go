package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// upstreamRequest is a chat-completions request as a fake provider got it.
type upstreamRequest struct {
	Path, RawQuery string
	Header         http.Header
	Model          string
	Messages       []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
}

// lastUser returns the text of the request's last user message.
func (r upstreamRequest) lastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return fmt.Sprint(r.Messages[i].Content)
		}
	}
	return ""
}

// toolResults returns the contents of the request's tool messages.
func (r upstreamRequest) toolResults() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, fmt.Sprint(m.Content))
		}
	}
	return out
}

// upstream is a fake OpenAI-compatible provider that records every request
// and answers each with answer.
type upstream struct {
	URL string
	mu  sync.Mutex
	got []upstreamRequest
}

func startUpstream(t *testing.T, answer func(upstreamRequest, *llmtest.SSE)) *upstream {
	t.Helper()
	u := &upstream{}
	s := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := upstreamRequest{Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		u.mu.Lock()
		u.got = append(u.got, req)
		u.mu.Unlock()
		answer(req, llmtest.NewSSE(w))
	})
	u.URL = s.URL
	return u
}

func (u *upstream) requests() []upstreamRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamRequest(nil), u.got...)
}

// streamText streams text in three pieces, then the end of the answer.
func streamText(s *llmtest.SSE, text string) {
	third := len(text) / 3
	for _, piece := range []string{text[:third], text[third : 2*third], text[2*third:]} {
		s.Text(piece)
	}
	s.Finish("stop")
	s.Done()
}

// azureConfig is a config with three Azure groups in front of up: a
// resource behind a proxy, a gateway whose URL names the deployment, and a
// serverless endpoint. The tests of internal/app's provider clients
// (models_test.go) use the same.
func azureConfig(dataDir, up string) string {
	return fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  azureOpenAI:
    titleModel: gpt-4o
    plugins: true
    groups:
      - group: west
        apiKey: ${AZURE_WEST_KEY}
        instanceName: relay-west
        baseURL: %[2]s
        version: "2024-06-01"
        additionalHeaders:
          X-Team: research
        models:
          gpt-4o:
            deploymentName: gpt-4o-prod
            version: "2024-10-21"
          gpt-4o-alias:
            deploymentName: gpt-4o-prod
            version: "2024-10-21"
          o1: true
      - group: gateway
        apiKey: sk-gateway-key-7777
        instanceName: relay-sweden
        deploymentName: gpt-4-turbo-dep
        baseURL: %[2]s/gw/${INSTANCE_NAME}/${DEPLOYMENT_NAME}
        models:
          gpt-4-turbo: true
      - group: mistral
        apiKey: sk-mistral-key-8888
        baseURL: %[2]s/v1/chat/completions
        serverless: true
        models:
          mistral-large: true
agents:
  - id: az-4o
    provider: azureOpenAI
    model: gpt-4o
  - id: az-o1
    provider: azureOpenAI
    model: o1
  - id: az-gateway
    provider: azureOpenAI
    model: gpt-4-turbo
  - id: az-serverless
    provider: azureOpenAI
    model: mistral-large
`, dataDir, up)
}

// TestAzureChatEndToEnd runs `relay chat` with agents on azureOpenAI against
// a fake Azure that checks where each request goes and how it is signed.
func TestAzureChatEndToEnd(t *testing.T) {
	up := startUpstream(t, func(r upstreamRequest, s *llmtest.SSE) { streamText(s, "Azure says hi.") })
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, azureConfig(filepath.Join(dir, "data"), up.URL))
	vars := map[string]string{"AZURE_WEST_KEY": "sk-west-key-5555"}
	if code, _, stderr := runCLI(t, vars, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	for _, tc := range []struct {
		agent, path, query, key string
	}{
		{"az-4o", "/openai/deployments/gpt-4o-prod/chat/completions", "api-version=2024-10-21", "sk-west-key-5555"},
		{"az-o1", "/openai/deployments/o1/chat/completions", "api-version=2024-06-01", "sk-west-key-5555"},
		{"az-gateway", "/gw/relay-sweden/gpt-4-turbo-dep/chat/completions", "api-version=2024-10-21", "sk-gateway-key-7777"},
		{"az-serverless", "/v1/chat/completions", "", "sk-mistral-key-8888"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			before := len(up.requests())
			code, out, stderr := runCLI(t, vars, "", "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", tc.agent, "Hello?")
			if code != 0 {
				t.Fatalf("relay chat: exit %d\n%s\n%s", code, out, stderr)
			}
			if strings.TrimSpace(out) != "Azure says hi." {
				t.Errorf("answer %q", out)
			}
			reqs := up.requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("%d requests upstream, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Path != tc.path || r.RawQuery != tc.query {
				t.Errorf("request to %s?%s, want %s?%s", r.Path, r.RawQuery, tc.path, tc.query)
			}
			if got := r.Header.Get("api-key"); got != tc.key {
				t.Errorf("api-key header %q, want %q", got, tc.key)
			}
			if a := r.Header.Get("Authorization"); a != "" {
				t.Errorf("Authorization header %q sent to Azure; the key goes in api-key", a)
			}
			if strings.HasPrefix(tc.agent, "az-4o") && r.Header.Get("X-Team") != "research" {
				t.Errorf("additionalHeaders not sent: %v", r.Header)
			}
			if r.lastUser() != "Hello?" {
				t.Errorf("user message %q", r.lastUser())
			}
		})
	}
	if r := up.requests(); len(r) == 4 && r[3].Model != "mistral-large" {
		t.Errorf("serverless body names model %q, want mistral-large", r[3].Model)
	}

	// config check shows the groups with the keys masked.
	code, out, stderr := runCLI(t, vars, "", "config", "check", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("config check: exit %d: %s", code, stderr)
	}
	for _, secret := range []string{"sk-west-key-5555", "sk-gateway-key-7777", "sk-mistral-key-8888"} {
		if strings.Contains(out+stderr, secret) {
			t.Errorf("config check shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "deploymentName: gpt-4o-prod") || !strings.Contains(out, "endpoints.azureOpenAI.plugins") {
		t.Errorf("config check lacks the groups or the ignored keys:\n%s", out)
	}
}

// TestAzureUnlistedModel: an agent created through the API on a model no
// group lists fails its run with an error that says so.
func TestAzureUnlistedModel(t *testing.T) {
	up := startUpstream(t, func(r upstreamRequest, s *llmtest.SSE) { streamText(s, "unexpected") })
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, azureConfig(filepath.Join(dir, "data"), up.URL))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey, "AZURE_WEST_KEY": "sk-west-key-5555"})
	if code := s.call(t, testKey, "POST", "/api/agents", `{"id":"stray","provider":"azureOpenAI","model":"gpt-5"}`, nil); code != 201 {
		t.Fatalf("create agent: %d", code)
	}
	resp := s.post(t, "/api/chat", `{"agent_id":"stray","text":"Hello?"}`, nil)
	defer resp.Body.Close()
	evs := readSSE(t, resp, nil)
	var msg string
	for _, e := range evs {
		if e.Type == "error" {
			msg = fmt.Sprint(e.Data["message"])
		}
	}
	if !strings.Contains(msg, `azureOpenAI: no group lists model "gpt-5"`) {
		t.Errorf("error event %q, events %+v", msg, evs)
	}
	if last := evs[len(evs)-1]; last.Type != "run.finished" || last.Data["status"] != "failed" {
		t.Errorf("last event %+v, want a failed run", last)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}

// toolLimitsServer writes a config with a fake provider that calls the
// tools the user's message asks for, the in-repo MCP server (with a "gate"
// tool that counts the calls running at once), and the given
// endpoints.agents limits, and adds a user.
func toolLimitsServer(t *testing.T, limits string, stats *mcptest.Stats, gate sdk.ToolHandler) (cfgPath string, up *upstream) {
	t.Helper()
	up = startUpstream(t, func(r upstreamRequest, s *llmtest.SSE) {
		if res := r.toolResults(); len(res) > 0 {
			streamText(s, "Tools said: "+strings.Join(res, " | "))
			return
		}
		switch {
		case strings.Contains(r.lastUser(), "slow"):
			s.ToolCall(0, "call_slow", "sleep__mcp__go", `{"ms":60000}`)
		case strings.Contains(r.lastUser(), "gates"):
			for i := range 5 {
				s.ToolCall(i, fmt.Sprintf("call_gate_%d", i), "gate__mcp__go", `{}`)
			}
		}
		s.Finish("tool_calls")
		s.Done()
	})
	goURL := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{Stats: stats, ExtraTools: []mcptest.Tool{{
		Tool:    &sdk.Tool{Name: "gate", Description: "Waits for company", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		Handler: gate,
	}}})
	dir := t.TempDir()
	cfgPath = writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: fake
      baseURL: %s/v1
  agents:
%s
mcpServers:
  go:
    type: streamable-http
    url: %s
agents:
  - id: worker
    provider: fake
    model: gpt-4o
    tools: [sleep__mcp__go, gate__mcp__go]
`, filepath.Join(dir, "data"), up.URL, limits, goURL))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	return cfgPath, up
}

// TestToolTimeout: endpoints.agents.toolTimeout stops a slow MCP call (the
// server's own timeout is a minute) and the model reads why in the result.
func TestToolTimeout(t *testing.T) {
	stats := &mcptest.Stats{}
	open := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "open"}}}, nil
	}
	cfgPath, up := toolLimitsServer(t, "    toolTimeout: 300ms", stats, open)
	code, out, stderr := runCLI(t, nil, "", "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", "worker", "Run the slow tool.")
	if code != 0 {
		t.Fatalf("relay chat: exit %d\n%s\n%s", code, out, stderr)
	}
	const why = `"sleep__mcp__go" tool call failed: cancelled: no answer within the tool timeout (300ms)`
	if got := strings.TrimSpace(out); got != "Tools said: "+why {
		t.Errorf("answer %q, want the model to have read %q", got, why)
	}
	reqs := up.requests()
	if len(reqs) != 2 || len(reqs[1].toolResults()) != 1 || reqs[1].toolResults()[0] != why {
		t.Errorf("the model was not sent the timeout as the tool's result: %+v", reqs)
	}
	// The call was cancelled on the server, not left running.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := stats.Await(ctx, func(s mcptest.Snapshot) bool { return s.Interrupted == 1 }); err != nil {
		t.Error(err)
	}
}

// TestMaxParallelTools: five tool calls of one turn run at most
// endpoints.agents.maxParallelTools at once. Each gate call waits until a
// third one is running, or for a while, so that calls overlap as much as
// Relay lets them: the most seen at once is the limit when it holds, and
// more when it does not.
func TestMaxParallelTools(t *testing.T) {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	running, most := 0, 0
	gate := func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		mu.Lock()
		running++
		most = max(most, running)
		cond.Broadcast()
		const wait = 300 * time.Millisecond
		stop := time.AfterFunc(wait, func() { mu.Lock(); cond.Broadcast(); mu.Unlock() })
		for began := time.Now(); running < 3 && time.Since(began) < wait; {
			cond.Wait()
		}
		running--
		mu.Unlock()
		stop.Stop()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "open"}}}, nil
	}
	cfgPath, up := toolLimitsServer(t, "    maxParallelTools: 2", nil, gate)
	code, out, stderr := runCLI(t, nil, "", "chat", "--config", cfgPath, "--user", "ann@example.com", "--agent", "worker", "Open the gates.")
	if code != 0 {
		t.Fatalf("relay chat: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := strings.TrimSpace(out); got != "Tools said: open | open | open | open | open" {
		t.Errorf("answer %q", got)
	}
	if len(up.requests()) != 2 {
		t.Errorf("%d model requests, want 2", len(up.requests()))
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 2 {
		t.Errorf("%d gate calls ran at once, want maxParallelTools (2)", most)
	}
}
