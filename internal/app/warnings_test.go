package app

import (
	"strings"
	"testing"
)

// relay config check and relay serve warn about what a valid config cannot
// do: providers without a key, user_provided keys, {{…}} user variables in
// MCP URLs and headers, and config agents naming unknown tools; none stops
// them, and what Relay fills ({{LIBRECHAT_USER_…}}, a key from the
// environment) is not warned about.
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
mcpServers:
  docs:
    url: https://mcp.example.com/{{LIBRECHAT_USER_ID}}/mcp
    headers:
      Authorization: "Bearer {{MY_DOCS_TOKEN}}"
      X-User: "{{LIBRECHAT_USER_EMAIL}}"
  search:
    url: https://mcp.example.com/{{TENANT}}/mcp
agents:
  - {id: helper, provider: openAI, model: gpt-4o, tools: [file_search, calculator, find__mcp__docs, find__mcp__nowhere]}
`)
	want := []string{
		`endpoints.openAI: no apiKey and OPENAI_API_KEY is not set: requests go without authentication`,
		`endpoints.anthropic: apiKey is user_provided: each user would enter their own; Relay cannot fill per-user values yet`,
		`endpoints.custom[0] (local): no apiKey: requests go without authentication`,
		`endpoints.custom[1] (shared): apiKey is user_provided`,
		`mcpServers.docs.headers.Authorization uses {{MY_DOCS_TOKEN}}: each user would enter their own; Relay cannot fill per-user values yet (they come with per-user variables and MCP OAuth)`,
		`mcpServers.search.url uses {{TENANT}}`,
		`agents "helper": unknown tool "calculator" (built-in tools: file_search, web_search;`,
		`agents "helper": tool "find__mcp__nowhere" names MCP server "nowhere", which is not in mcpServers`,
	}
	notWanted := []string{"custom[2]", "LIBRECHAT_USER", "find__mcp__docs", `"file_search"`}
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
