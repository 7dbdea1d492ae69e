package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "relay.yaml")
	body := `database:
  url: postgres://relay:dbpass-123@localhost/relay?sslmode=disable
endpoints:
  openAI:
    apiKey: ${OPENAI_KEY}
  anthropic:
    apiKey: user_provided
  custom:
    - name: gw
      baseURL: https://gw.example/v1?api_key=query-secret-1
      apiKey: sk-custom-0001
      headers:
        X-Api-Key: header-secret-2
        X-Title: Relay
mcpServers:
  remote:
    url: https://mcp.example/mcp
    headers:
      Authorization: Bearer ${MCP_TOKEN}
      X-User: "{{LIBRECHAT_USER_EMAIL}}"
  local:
    command: npx
    args: ["server", "--api-key", "arg-secret-3"]
    env:
      GITHUB_TOKEN: env-secret-4
      LOG_LEVEL: debug
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_KEY": "sk-openai-0000", "MCP_TOKEN": "mcp-token-5"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := Load(p, getenv)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Secrets(getenv)
	slices.Sort(got)
	got = slices.Compact(got)
	want := []string{"arg-secret-3", "dbpass-123", "env-secret-4", "header-secret-2", "mcp-token-5", "query-secret-1", "sk-custom-0001", "sk-openai-0000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}
