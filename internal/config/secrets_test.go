package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
auth:
  oidc:
    issuer: https://idp.example.com
    client_id: relay
    client_secret: oidc-secret-6
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
	want := []string{"arg-secret-3", "dbpass-123", "env-secret-4", "header-secret-2", "mcp-token-5", "oidc-secret-6", "query-secret-1", "sk-custom-0001", "sk-openai-0000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

// The OIDC client secret is masked in the dump, its client id and issuer are not.
func TestOIDCSecretMasked(t *testing.T) {
	p := filepath.Join(t.TempDir(), "relay.yaml")
	body := "server:\n  public_url: https://relay.example.com/\nauth:\n  oidc:\n    issuer: https://idp.example.com\n    client_id: relay-client\n    client_secret: oidc-literal-secret-7\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := c.WriteMasked(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "oidc-literal-secret-7") || !strings.Contains(out, "client_secret: '****'") || !strings.Contains(out, "client_id: relay-client") {
		t.Errorf("dump:\n%s", out)
	}
	if c.Auth.OIDC.ClientSecret != "oidc-literal-secret-7" {
		t.Errorf("masking changed the config itself")
	}
	if got, want := c.OIDCRedirectURL(), "https://relay.example.com/api/auth/oidc/callback"; got != want {
		t.Errorf("OIDCRedirectURL() = %q, want %q", got, want)
	}
	if !*c.Auth.OIDC.AutoCreate || c.Auth.OIDC.Label != "Single sign-on" || !slices.Equal(c.Auth.OIDC.Scopes, []string{"openid", "email", "profile"}) {
		t.Errorf("OIDC defaults: %+v", c.Auth.OIDC)
	}
}

func TestPublicURLDefault(t *testing.T) {
	for addr, want := range map[string]string{"127.0.0.1:3080": "http://127.0.0.1:3080", ":8080": "http://127.0.0.1:8080", "[::]:80": "http://127.0.0.1:80", "relay.internal:3080": "http://relay.internal:3080"} {
		c := Default()
		c.Server.Addr = addr
		if got := c.PublicURL(); got != want {
			t.Errorf("PublicURL() with addr %q = %q, want %q", addr, got, want)
		}
	}
}

// An MCP server's oauth.client_secret is masked in the dump and is a known
// secret of the logs, its client id is not; ${VAR} in it contributes the
// variable's value.
func TestMCPOAuthClientSecretMasked(t *testing.T) {
	p := filepath.Join(t.TempDir(), "relay.yaml")
	body := `mcpServers:
  lit:
    type: streamable-http
    url: https://mcp.example.com/mcp
    oauth:
      client_id: relay-client
      client_secret: mcp-oauth-literal-secret-8
  ref:
    type: streamable-http
    url: https://mcp2.example.com/mcp
    oauth:
      client_id: relay-client-2
      client_secret: ${MCP_CLIENT_SECRET}
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) {
		if k == "MCP_CLIENT_SECRET" {
			return "mcp-oauth-env-secret-9", true
		}
		return "", false
	}
	c, err := Load(p, getenv)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := c.WriteMasked(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "mcp-oauth-literal-secret-8") || !strings.Contains(out, "client_secret: '****'") ||
		!strings.Contains(out, "client_secret: ${MCP_CLIENT_SECRET}") || !strings.Contains(out, "client_id: relay-client") {
		t.Errorf("dump:\n%s", out)
	}
	if c.MCPServers["lit"].OAuth.ClientSecret != "mcp-oauth-literal-secret-8" {
		t.Errorf("masking changed the config itself")
	}
	got := c.Secrets(getenv)
	for _, s := range []string{"mcp-oauth-literal-secret-8", "mcp-oauth-env-secret-9"} {
		if !slices.Contains(got, s) {
			t.Errorf("Secrets() lacks %q: %q", s, got)
		}
	}
}
