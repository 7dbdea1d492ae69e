package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// relay config check and relay serve warn about what a valid config cannot
// do: providers without a key, keys naming a variable that is not set,
// user_provided keys (each user must set
// theirs), {{…}} placeholders Relay does not fill in endpoint headers, {{…}}
// user variables (and the conversation's placeholders) in MCP URLs and
// headers, and config agents naming unknown tools; none stops them, and what
// Relay fills ({{LIBRECHAT_USER_…}} in MCP servers and in endpoint headers,
// {{LIBRECHAT_BODY_…}} in endpoint headers, a key from the environment) is
// not warned about.
func TestConfigWarnings(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), `server:
  log_level: warn
  data_dir: `+t.TempDir()+`
endpoints:
  anthropic:
    apiKey: user_provided
  custom:
    - name: local
      baseURL: http://127.0.0.1:11434/v1
    - name: shared
      apiKey: user_provided
      baseURL: https://llm.example.com/v1
    - name: keyed
      apiKey: sk-x
      baseURL: https://llm.example.com/v1
      headers:
        X-User-Email: "{{LIBRECHAT_USER_EMAIL}}"
        X-Conversation-Id: "{{LIBRECHAT_BODY_CONVERSATIONID}}"
    - name: traced
      apiKey: sk-x
      baseURL: https://llm.example.com/v1
      headers:
        X-Role: "{{LIBRECHAT_USER_ROLE}}/{{LIBRECHAT_BODY_MESSAGEID}}"
    - name: groq
      apiKey: ${GROQ_KEY_NOT_SET}
      baseURL: https://api.groq.com/openai/v1
mcpServers:
  docs:
    url: https://mcp.example.com/{{LIBRECHAT_USER_ID}}/mcp
    headers:
      Authorization: "Bearer {{MY_DOCS_TOKEN}}"
      X-User: "{{LIBRECHAT_USER_EMAIL}}"
      X-Session: "{{LIBRECHAT_BODY_CONVERSATIONID}}"
      X-Role: "{{LIBRECHAT_USER_ROLE}}"
  search:
    url: https://mcp.example.com/{{TENANT}}/mcp
    customUserVars:
      TENANT: {title: Tenant}
  local:
    command: search-server
    args: ["--tenant={{TENANT}}", "--user={{LIBRECHAT_USER_ID}}", "--session={{LIBRECHAT_BODY_CONVERSATIONID}}"]
    env:
      SEARCH_TOKEN: "{{SEARCH_TOKEN}}"
      SEARCH_TENANT: "{{TENANT}}"
    customUserVars:
      TENANT: {title: Tenant}
agents:
  - {id: helper, provider: openAI, model: gpt-4o, tools: [file_search, calculator, find__mcp__docs, find__mcp__nowhere]}
`)
	want := []string{
		`endpoints.openAI: no apiKey and OPENAI_API_KEY is not set: requests go without authentication`,
		`endpoint anthropic: apiKey user_provided: each user sets their own (the Connections page, or relay endpoints key anthropic) before its agents work for them`,
		`endpoints.custom[0] (local): no apiKey: requests go without authentication`,
		`endpoint shared: apiKey user_provided: each user sets their own`,
		`endpoints.custom[3] (traced): headers.X-Role uses {{LIBRECHAT_USER_ROLE}}, which Relay does not fill: it is sent as written`,
		`mcpServers.docs.headers.X-Session uses {{LIBRECHAT_BODY_CONVERSATIONID}}: Relay fills the conversation's placeholders in endpoints' headers, not in MCP servers`,
		`endpoints.custom[4] (groq): apiKey uses ${GROQ_KEY_NOT_SET}, which is not set in Relay's environment: every run of its agents fails until it is`,
		`mcpServers.docs.headers.Authorization uses {{MY_DOCS_TOKEN}}: not in its customUserVars, so no user has a value for it; it is sent as written`,
		`mcpServers.local.env.SEARCH_TOKEN uses {{SEARCH_TOKEN}}: not in its customUserVars`,
		`mcpServers.local.args[0] uses {{TENANT}}: Relay puts no user variable into a process's arguments`,
		`mcpServers.docs.headers.X-Role uses {{LIBRECHAT_USER_ROLE}}, which Relay does not fill: it is sent as written`,
		`mcpServers.local.args[2] uses {{LIBRECHAT_BODY_CONVERSATIONID}}: Relay fills the conversation's placeholders in endpoints' headers, not in MCP servers`,
		`agents "helper": unknown tool "calculator" (built-in tools: file_search, web_search;`,
		`agents "helper": tool "find__mcp__nowhere" names MCP server "nowhere", which is not in mcpServers`,
	}
	notWanted := []string{"custom[2]", "LIBRECHAT_USER_EMAIL", "LIBRECHAT_USER_ID", "LIBRECHAT_BODY_MESSAGEID", "find__mcp__docs", `"file_search"`,
		"search.url", "SEARCH_TENANT", "args[1]"}
	check := func(t *testing.T, out string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("no warning %q in:\n%s", w, out)
			}
		}
		for _, w := range notWanted {
			if strings.Contains(out, w) {
				t.Errorf("a warning mentions %q:\n%s", w, out)
			}
		}
	}
	t.Run("config check", func(t *testing.T) {
		code, _, stderr := runCLI(t, nil, "", "config", "check", "--config", cfg)
		if code != 0 {
			t.Fatalf("config check: exit %d\n%s", code, stderr)
		}
		check(t, stderr)
	})
	t.Run("serve", func(t *testing.T) {
		s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
		s.stop(t)
		var lines []string
		for _, l := range strings.Split(s.stderr.String(), "\n") {
			if strings.Contains(l, `msg="config: `) {
				lines = append(lines, strings.ReplaceAll(l, `\"`, `"`))
			}
		}
		check(t, strings.Join(lines, "\n"))
	})
	t.Run("a key from the environment", func(t *testing.T) {
		_, _, stderr := runCLI(t, map[string]string{"OPENAI_API_KEY": "sk-env"}, "", "config", "check", "--config", cfg)
		if strings.Contains(stderr, "endpoints.openAI") {
			t.Errorf("warned about openAI with OPENAI_API_KEY set:\n%s", stderr)
		}
	})
}

// POST and PATCH /api/agents refuse tool names that no built-in tool or MCP
// server provides, with the known names; a tool of a server that cannot be
// reached now is accepted.
func TestAgentUnknownToolsRefused(t *testing.T) {
	ws := mcptest.Start(t, "websocket", mcptest.Options{})
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`server:
  log_level: warn
  data_dir: %s
endpoints:
  custom:
    - {name: mock, apiKey: x, baseURL: http://127.0.0.1:1/v1}
mcpServers:
  gows:
    url: %s
  down:
    type: streamable-http
    url: http://%s/mcp
    initTimeout: 500
`, t.TempDir(), ws, freeAddr(t)))
	s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	defer s.stop(t)
	tests := []struct {
		name  string
		tools string
		want  int
	}{
		{"built-in and MCP tools", `["file_search", "echo__mcp__gows", "echo_mcp_gows"]`, 201},
		{"every tool of a server", `["all__mcp__gows"]`, 201},
		{"a tool of a server that is down now", `["anything__mcp__down"]`, 201},
		{"a tool the server does not have", `["nope__mcp__gows"]`, 400},
		{"a server that is not configured", `["echo__mcp__nowhere"]`, 400},
		{"no such built-in", `["calculator"]`, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e struct {
				Error struct {
					Fields []struct{ Field, Message string }
				}
			}
			code := s.call(t, testKey, "POST", "/api/agents", `{"provider":"mock","model":"m","tools":`+tc.tools+`}`, &e)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %+v", code, tc.want, e)
			}
			if tc.want == 400 {
				if len(e.Error.Fields) != 1 || e.Error.Fields[0].Field != "tools[0]" ||
					!strings.Contains(e.Error.Fields[0].Message, "unknown tool") ||
					!strings.Contains(e.Error.Fields[0].Message, "echo__mcp__gows") || !strings.Contains(e.Error.Fields[0].Message, "file_search") {
					t.Errorf("answer %+v; want tools[0] unknown, with the known tools", e)
				}
			}
		})
	}
	var a struct{ ID string }
	if code := s.call(t, testKey, "POST", "/api/agents", `{"provider":"mock","model":"m","tools":["echo__mcp__gows"]}`, &a); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := s.call(t, testKey, "PATCH", "/api/agents/"+a.ID, `{"tools":["echo__mcp__gows","made_up"]}`, nil); code != 400 {
		t.Errorf("PATCH adding an unknown tool: %d, want 400", code)
	}
}
