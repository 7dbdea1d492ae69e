package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// fakeEndpointKeys keeps nothing and answers one endpoint, openrouter, whose
// API key each user provides.
type fakeEndpointKeys struct{}

func (fakeEndpointKeys) List(context.Context, string) ([]httpapi.EndpointKey, error) {
	return []httpapi.EndpointKey{{Endpoint: "openrouter", Fields: []httpapi.EndpointKeyField{{Name: "apiKey"}}}}, nil
}

func (fakeEndpointKeys) Set(_ context.Context, _, endpoint string, _ map[string]string) (httpapi.EndpointKey, error) {
	now := time.Now().UTC()
	return httpapi.EndpointKey{Endpoint: endpoint, Fields: []httpapi.EndpointKeyField{{Name: "apiKey", Set: true, UpdatedAt: &now}}}, nil
}

func (fakeEndpointKeys) Clear(context.Context, string, string) error { return nil }

var eventID = regexp.MustCompile(`"id":"(eli_[^"]+)"`)

// TestOpenAPITour calls the routes the other tests leave out, with a server
// that has all its parts (an MCP server, runs whose agent asks a question,
// schedules, memory), so that their answers are checked against the
// document too (newAPI).
func TestOpenAPITour(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	as := auth.NewService(st, nil)
	agents := agent.NewService(st, agent.Rules{Providers: []string{"openAI"}})
	url := mcptest.Start(t, mcp.TransportStreamableHTTP, mcptest.Options{ExtraTools: mcptest.ClientTools()})
	m := mcp.NewManager([]mcp.ServerConfig{{Name: "test", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeApp,
		Timeout: 5 * time.Second, InitTimeout: 5 * time.Second}}, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	// "who" makes the agent call the tool that asks the user a question,
	// "draw" answer with an image, "fail" fail midway.
	model := llmtest.Func(func(req *llm.Request) llmtest.Turn {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role != llm.RoleUser:
		case strings.Contains(last.Content, "who"):
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "call_1", Type: "function", Function: llm.FunctionCall{Name: "ask__mcp__test", Arguments: "{}"}}}}
		case strings.Contains(last.Content, "draw"):
			return llmtest.Turn{Text: []string{"here"}, Images: []llm.Image{{MIMEType: "image/png", Data: "iVBORw0KGgo="}}}
		case strings.Contains(last.Content, "fail"):
			return llmtest.Turn{Text: []string{"part"}, Err: errors.New("the provider refused")}
		}
		return llmtest.Turn{Text: []string{"ok"}, Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}}
	})
	runs := &run.Service{Store: st, MCP: m, Log: slog.New(slog.DiscardHandler), Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	t.Cleanup(func() { runs.Drain(context.Background()) })
	srv := httptest.NewServer(newAPI(t, httpapi.Options{
		Auth: as, Agents: agents, Groups: auth.NewGroups(st), MCP: m, Runs: runs, Prompt: runs.Prep,
		Schedules: &schedule.Service{Store: st, Agents: agents, Users: st, Runner: runs, Log: slog.New(slog.DiscardHandler)},
		Memory:    memory.NewService(st, memory.Config{TokenLimit: 1000}, nil), EndpointKeys: fakeEndpointKeys{},
		Files:   file.NewService(file.Options{Store: st}),
		Version: "test", MaxBodyBytes: 1 << 20,
	}))
	t.Cleanup(srv.Close)
	keys := map[string]string{}
	for _, u := range []struct {
		name string
		role auth.Role
	}{{"ann", auth.RoleUser}, {"admin", auth.RoleAdmin}} {
		user, err := as.CreateUser(ctx, auth.NewUser{Email: u.name + "@example.com", Role: u.role})
		if err != nil {
			t.Fatal(err)
		}
		if _, keys[u.name], err = as.CreateKey(ctx, user.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if u.name == "ann" {
			if _, err := agents.Create(ctx, user, "helper", agent.Spec{Name: "Helper", Provider: "openAI", Model: "m", Tools: []string{"ask__mcp__test"}}); err != nil {
				t.Fatal(err)
			}
		}
	}

	send := func(who, method, path, body string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if who != "" {
			req.Header.Set("Authorization", "Bearer "+keys[who])
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp
	}
	call := func(who, method, path, body string, want int) string {
		t.Helper()
		resp := send(who, method, path, body)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
		}
		return string(raw)
	}
	field := func(body, name string) string {
		t.Helper()
		m := regexp.MustCompile(`"` + name + `":"([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s in %s", name, body)
		}
		return m[1]
	}

	// Lists with nothing in them yet.
	call("ann", "GET", "/api/runs", "", 200)
	call("ann", "GET", "/api/conversations", "", 200)
	call("ann", "GET", "/api/memories", "", 200)
	call("ann", "GET", "/api/groups", "", 200)
	call("ann", "GET", "/api/principals?q=nobody", "", 200)
	call("ann", "GET", "/api/schedules", "", 200)
	call("ann", "GET", "/api/agents/helper/shares", "", 200)
	call("ann", "GET", "/api/agents/helper/graph", "", 200)
	call("ann", "GET", "/api/export/ragas", "", 200)
	call("admin", "GET", "/api/users", "", 200)
	call("ann", "GET", "/api/files", "", 200)

	call("", "GET", "/api/auth/status", "", 200)
	call("ann", "GET", "/api/config", "", 200)
	call("ann", "GET", "/api/mcp/servers", "", 200)
	call("admin", "GET", "/api/mcp/servers", "", 200)
	call("ann", "GET", "/api/mcp/servers/test/tools", "", 200)
	call("ann", "GET", "/api/mcp/servers/none/tools", "", 404)
	call("ann", "POST", "/api/mcp/servers/test/reconnect", "", 403)
	call("admin", "POST", "/api/mcp/servers/test/reconnect", "", 200)
	call("ann", "POST", "/api/mcp/tools/get-sum__mcp__test/call", `{"arguments":{"a":2,"b":3}}`, 200)
	call("ann", "POST", "/api/mcp/tools/get-sum__mcp__test/call", `{"arguments":{"a":"two"}}`, 200)
	call("ann", "POST", "/api/mcp/tools/none__mcp__nowhere/call", `{}`, 404)
	call("ann", "GET", "/api/mcp/accounts", "", 503)
	call("ann", "GET", "/api/mcp/servers/test/account", "", 503)
	call("", "GET", "/api/mcp/oauth/callback?state=x&code=y", "", 503)
	call("ann", "GET", "/api/endpoints/keys", "", 200)
	call("ann", "PUT", "/api/endpoints/openrouter/key", `{"apiKey":"sk-or-1"}`, 200)
	call("ann", "DELETE", "/api/endpoints/openrouter/key", "", 204)
	call("ann", "PUT", "/api/memories/city", `{"value":"Utrecht"}`, 200)
	call("ann", "GET", "/api/memories", "", 200)
	group := call("admin", "POST", "/api/groups", `{"name":"Reviewers"}`, 201)
	call("ann", "GET", "/api/groups/"+field(group, "id"), "", 200)
	call("ann", "GET", "/api/principals?q=a", "", 200)
	call("ann", "POST", "/api/keys", `{"name":"laptop"}`, 201)
	call("ann", "GET", "/api/keys", "", 200)
	call("ann", "GET", "/api/agents/helper/graph?format=mermaid", "", 200)

	// A run whose agent asks a question, answered while the stream waits.
	resp := send("ann", "POST", "/api/chat", `{"agent_id":"helper","text":"who am I"}`)
	runID := resp.Header.Get("Relay-Run-Id")
	stream := bufio.NewReader(resp.Body)
	var asked string
	for asked == "" {
		line, err := stream.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the question: %v", err)
		}
		if m := eventID.FindStringSubmatch(line); m != nil && strings.Contains(line, `"mode"`) {
			asked = m[1]
		}
	}
	call("ann", "POST", "/api/runs/"+runID+"/elicitations/"+asked, `{"action":"accept","content":{"name":"Ann"}}`, 200)
	rest, _ := io.ReadAll(stream)
	resp.Body.Close()
	if !strings.Contains(string(rest), "elicitation.answered") || !strings.Contains(string(rest), "run.finished") {
		t.Errorf("the stream after the answer:\n%s", rest)
	}
	call("ann", "POST", "/api/runs/"+runID+"/elicitations/"+asked, `{"action":"decline"}`, 409)
	events := send("ann", "GET", "/api/runs/"+runID+"/events", "", "Last-Event-ID", "2")
	io.Copy(io.Discard, events.Body)
	events.Body.Close()
	call("ann", "GET", "/api/runs/"+runID, "", 200)
	call("ann", "POST", "/api/runs/"+runID+"/abort", "", 200)
	conv := field(call("ann", "GET", "/api/conversations", "", 200), "id")
	call("ann", "POST", "/api/agents/helper/prompt", `{"text":"and now?","conversation_id":"`+conv+`"}`, 200)
	call("ann", "DELETE", "/api/conversations/"+conv, "", 204)

	// An answer with an image, and a run that fails.
	call("ann", "POST", "/api/chat", `{"agent_id":"helper","text":"draw a dot"}`, 200)
	if out := call("ann", "POST", "/api/chat", `{"agent_id":"helper","text":"fail now"}`, 200); !strings.Contains(out, "event: error") {
		t.Errorf("a failed run's stream:\n%s", out)
	}

	// The OpenAI-compatible endpoints.
	for _, text := range []string{"hi", "draw a dot"} {
		call("ann", "POST", "/v1/chat/completions", `{"model":"helper","messages":[{"role":"user","content":"`+text+`"}]}`, 200)
		call("ann", "POST", "/v1/chat/completions", `{"model":"helper","stream":true,"messages":[{"role":"user","content":"`+text+`"}]}`, 200)
	}
	call("ann", "POST", "/v1/chat/completions", `{"model":"helper","messages":[{"role":"user","content":"fail now"}]}`, 502)
	call("ann", "POST", "/v1/chat/completions", `{"model":"helper","stream":true,"messages":[{"role":"user","content":"fail now"}]}`, 200)
	call("ann", "GET", "/v1/models/helper", "", 200)
	call("ann", "GET", "/v1/models/none", "", 404)
	call("ann", "GET", "/v1/embeddings", "", 404)
	call("ann", "GET", "/api/nothing", "", 404)
	call("ann", "POST", "/v1/chat/completions", `{"model":"helper","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, 200)
	call("ann", "POST", "/v1/chat/completions", `{"model":"helper","messages":[{"role":"user","content":"hi"}],"logprobs":true}`, 400)

	// A schedule, fired by hand.
	sc := field(call("ann", "POST", "/api/schedules", `{"agent_id":"helper","name":"daily","prompt":"hi","cron":"0 9 * * *","timezone":"Europe/Amsterdam"}`, 201), "id")
	call("ann", "GET", "/api/schedules/"+sc, "", 200)
	call("ann", "POST", "/api/schedules/"+sc+"/run", "", 202)
	call("ann", "GET", "/api/schedules/"+sc+"/runs", "", 200)
	call("ann", "DELETE", "/api/schedules/"+sc, "", 204)
}
