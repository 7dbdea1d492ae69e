package mcp_test

import (
	"testing"

	"github.com/relay-ai/relay/internal/mcp"
)

// TestResolveInsertsUserValuesVerbatim: a user's own fields may hold text that
// looks like a placeholder; it reaches the server as typed, never expanded.
func TestResolveInsertsUserValuesVerbatim(t *testing.T) {
	getenv := func(k string) (string, bool) {
		switch k {
		case "OPENAI_API_KEY":
			return "sk-relay-secret", true
		case "TENANT":
			return "acme", true
		}
		return "", false
	}
	s := mcp.ServerConfig{
		Name: "x", Scope: mcp.ScopeUser, URL: "https://mcp.example/${TENANT}/{{LIBRECHAT_USER_USERNAME}}",
		Args:    []string{"--email={{LIBRECHAT_USER_EMAIL}}"},
		Env:     map[string]string{"WHO": "{{LIBRECHAT_USER_NAME}}"},
		Headers: map[string]string{"X-User": "{{LIBRECHAT_USER_NAME}}", "X-Id": "${TENANT}:{{LIBRECHAT_USER_ID}}"},
	}
	u := &mcp.User{ID: "{{LIBRECHAT_USER_EMAIL}}", Email: "${OPENAI_API_KEY}@x.example", Name: "${OPENAI_API_KEY}", Username: "$%7BOPENAI_API_KEY%7D"}
	got := s.Resolve(u, getenv)
	for field, c := range map[string]struct{ have, want string }{
		"url":    {got.URL, "https://mcp.example/acme/$%7BOPENAI_API_KEY%7D"},
		"arg":    {got.Args[0], "--email=${OPENAI_API_KEY}@x.example"},
		"env":    {got.Env["WHO"], "${OPENAI_API_KEY}"},
		"X-User": {got.Headers["X-User"], "${OPENAI_API_KEY}"},
		// The id is inserted once; the placeholder it looks like stays as typed.
		"X-Id": {got.Headers["X-Id"], "acme:{{LIBRECHAT_USER_EMAIL}}"},
	} {
		if c.have != c.want {
			t.Errorf("%s = %q, want %q", field, c.have, c.want)
		}
	}
}
