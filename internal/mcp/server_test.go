package mcp_test

import (
	"net/http"
	"net/url"
	"strings"
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
		// The username is one path segment, its "%" escaped: the server
		// decodes it back to what the user typed.
		"url":    {got.URL, "https://mcp.example/acme/$%257BOPENAI_API_KEY%257D"},
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

// TestResolveEncodesUserValuesForTheirPlace: a user's value put into a URL is
// encoded for its place, so that it stays one path segment, one query value or
// part of one host name, whatever it holds; put into a header it loses its
// line breaks and other control characters, so that it cannot add a header.
func TestResolveEncodesUserValuesForTheirPlace(t *testing.T) {
	const tricky = "a b/../c?x=1&y"
	for _, tc := range []struct {
		name, tmpl string
		u          mcp.User
		want       string
		// check says what the server sees of the URL.
		check func(t *testing.T, u *url.URL)
	}{
		{"path segment", "https://mcp.example/users/{{LIBRECHAT_USER_USERNAME}}/mcp", mcp.User{Username: tricky},
			"https://mcp.example/users/a%20b%2F..%2Fc%3Fx=1&y/mcp",
			func(t *testing.T, u *url.URL) {
				if u.Path != "/users/"+tricky+"/mcp" || u.RawQuery != "" || u.Host != "mcp.example" {
					t.Errorf("path %q query %q host %q", u.Path, u.RawQuery, u.Host)
				}
			}},
		{"query value", "https://mcp.example/mcp?user={{LIBRECHAT_USER_NAME}}&tenant=acme", mcp.User{Name: tricky},
			"https://mcp.example/mcp?user=a+b%2F..%2Fc%3Fx%3D1%26y&tenant=acme",
			func(t *testing.T, u *url.URL) {
				q := u.Query()
				if q.Get("user") != tricky || q.Get("tenant") != "acme" || len(q) != 2 || u.Path != "/mcp" {
					t.Errorf("query %v path %q", q, u.Path)
				}
			}},
		{"query with CRLF", "https://mcp.example/mcp?user={{LIBRECHAT_USER_NAME}}", mcp.User{Name: "Ann\r\nX-Admin: 1"},
			"https://mcp.example/mcp?user=Ann%0D%0AX-Admin%3A+1",
			func(t *testing.T, u *url.URL) {
				if u.Query().Get("user") != "Ann\r\nX-Admin: 1" {
					t.Errorf("query %v", u.Query())
				}
			}},
		{"host label", "https://{{LIBRECHAT_USER_USERNAME}}.tenants.example/mcp", mcp.User{Username: "evil.example/x?"},
			"https://evil.example%2Fx%3F.tenants.example/mcp", nil},
		{"host label with @", "https://{{LIBRECHAT_USER_USERNAME}}.tenants.example/mcp", mcp.User{Username: "evil.example@x"},
			"https://evil.example%40x.tenants.example/mcp", nil},
		{"fragment", "https://mcp.example/mcp#{{LIBRECHAT_USER_ID}}", mcp.User{ID: "a b#c"},
			"https://mcp.example/mcp#a+b%23c", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcp.ServerConfig{Name: "x", Scope: mcp.ScopeUser, URL: tc.tmpl}
			got := s.Resolve(&tc.u, func(string) (string, bool) { return "", false })
			if got.URL != tc.want {
				t.Errorf("url = %q, want %q", got.URL, tc.want)
			}
			u, err := url.Parse(got.URL)
			if tc.check != nil {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, u)
			} else if err == nil && !strings.HasSuffix(u.Hostname(), ".example") {
				t.Errorf("host %q", u.Hostname())
			}
		})
	}
}

func TestResolveMakesHeadersSafe(t *testing.T) {
	s := mcp.ServerConfig{Name: "x", Scope: mcp.ScopeUser, URL: "https://mcp.example/mcp",
		Headers: map[string]string{"X-User": "{{LIBRECHAT_USER_NAME}}", "X-Email": "<{{LIBRECHAT_USER_EMAIL}}>"}}
	u := &mcp.User{Name: "Ann\r\nX-Admin: 1\x00\tB", Email: "a b/../c?x=1&y\n"}
	got := s.Resolve(u, nil)
	want := map[string]string{"X-User": "AnnX-Admin: 1\tB", "X-Email": "<a b/../c?x=1&y>"}
	for k, v := range want {
		if got.Headers[k] != v {
			t.Errorf("%s = %q, want %q", k, got.Headers[k], v)
		}
	}
	// What is left is a valid header value: net/http sends it.
	req, _ := http.NewRequest("GET", "http://mcp.example/", nil)
	for k, v := range got.Headers {
		req.Header.Set(k, v)
	}
	var b strings.Builder
	if err := req.Header.Write(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "\r\n") != 2 || strings.Contains(b.String(), "\nX-Admin") {
		t.Errorf("headers written as %q", b.String())
	}
}
