package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// A request that fails because the database cannot be reached is a 503
// that says to try again (docs/api.md "Errors"), in the shape of its route,
// never a 500 nor the database's own error.
func TestDatabaseOutageIsUnavailable(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	authSvc := auth.NewService(st, nil)
	u, err := authSvc.CreateUser(ctx, auth.NewUser{Email: "ann@example.com", Role: auth.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := authSvc.CreateKey(ctx, u.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newAPI(t, httpapi.Options{
		Auth: authSvc, Agents: agent.NewService(st, agent.Rules{Providers: []string{"openAI"}, MaxRecursionLimit: 100}),
		Ready: func(ctx context.Context) error { return st.Ping(ctx) },
	}))
	defer srv.Close()
	get := func(path string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	// The key is checked once while the database answers (and kept for a
	// while), so that what fails below is the route's own work.
	if resp, _ := get("/api/agents"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/agents with the database up: %d", resp.StatusCode)
	}
	st.Close()

	for _, path := range []string{"/api/agents", "/v1/models"} {
		resp, body := get(path)
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != http.StatusServiceUnavailable || e["code"] != "unavailable" || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("GET %s with the database gone: %d %v (Retry-After %q), want 503 unavailable, Retry-After 1",
				path, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
		if msg, _ := e["message"].(string); strings.Contains(msg, "closed") || strings.Contains(msg, "sql") {
			t.Errorf("GET %s: the message shows the database's error: %q", path, msg)
		}
	}
}
