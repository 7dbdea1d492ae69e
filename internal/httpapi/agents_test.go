package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
)

// bundle is what a test gets from setup: a running API and keys for two users.
type bundle struct {
	srv      *httptest.Server
	auth     *auth.Service
	agents   *agent.Service
	adminKey string
	annKey   string // a plain user
	bobKey   string // another plain user
	annID    string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{
		auth:   auth.NewService(st, nil),
		agents: agent.NewService(st, agent.Rules{Providers: []string{"openAI", "anthropic", "ollama"}, MaxRecursionLimit: 100}),
	}
	b.srv = httptest.NewServer(newAPI(t, httpapi.Options{
		Auth: b.auth, Agents: b.agents, MaxBodyBytes: 64 << 10,
		Ready: func(ctx context.Context) error { return st.Ping(ctx) },
	}))
	t.Cleanup(b.srv.Close)
	newKey := func(email string, role auth.Role) (string, string) {
		u, err := b.auth.CreateUser(ctx, auth.NewUser{Email: email, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		_, secret, err := b.auth.CreateKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		return secret, u.ID
	}
	b.adminKey, _ = newKey("root@example.com", auth.RoleAdmin)
	b.annKey, b.annID = newKey("ann@example.com", auth.RoleUser)
	b.bobKey, _ = newKey("bob@example.com", auth.RoleUser)
	return b
}

// do sends a request and decodes the JSON answer into out (when non-nil).
func (b *bundle) do(t *testing.T, key, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Fields  []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"fields"`
	} `json:"error"`
}

// fullAgent sets every writable field.
const fullAgent = `{
  "name": "Nuclear Regulations Expert",
  "description": "Expert on ANVS, IAEA, and Dutch nuclear law",
  "instructions": "You are an expert on nuclear regulations. Current date: {{current_date}}...",
  "provider": "openAI",
  "model": "gpt-4",
  "model_parameters": {"temperature": 0.2, "max_tokens": 1024, "stop": ["\n\n"], "nested": {"a": [1, 2]}},
  "tools": ["file_search", "search_anvs__mcp__ANVS-IAEA-Wetten", "all__mcp__neo"],
  "artifacts": "shadcnui",
  "tool_resources": {"file_search": {"file_ids": ["file_123", "file_456"]}},
  "edges": [
    {"from": "router", "to": "specialist", "edgeType": "handoff", "prompt": "What should the specialist do?", "promptKey": "context", "description": "Hand to the specialist"},
    {"from": ["a", "b"], "to": ["c"], "edgeType": "direct", "prompt": "Combine: {results}", "excludeResults": true}
  ],
  "agent_ids": ["agent_two", "agent_three"],
  "chain_type": "output_passthrough",
  "hide_sequential_outputs": true,
  "recursion_limit": 30,
  "conversation_starters": ["What does article 15 say?"],
  "shared": true
}`

func TestAgentRoundTripsEveryField(t *testing.T) {
	b := setup(t)
	var created map[string]any
	if code := b.do(t, b.annKey, "POST", "/api/agents", fullAgent, &created); code != http.StatusCreated {
		t.Fatalf("create: status %d: %v", code, created)
	}
	id, _ := created["id"].(string)
	if !strings.HasPrefix(id, "agent_") || len(id) != len("agent_")+21 {
		t.Errorf("generated id %q, want agent_ + 21 characters", id)
	}
	var got map[string]any
	if code := b.do(t, b.annKey, "GET", "/api/agents/"+id, nil, &got); code != http.StatusOK {
		t.Fatalf("get: status %d", code)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(fullAgent), &want); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "author", "managed", "version", "created_at", "updated_at"} {
		if _, ok := got[k]; !ok {
			t.Errorf("GET lacks %q", k)
		}
	}
	if got["author"] != b.annID || got["version"] != float64(1) || got["managed"] != false {
		t.Errorf("author/version/managed = %v/%v/%v", got["author"], got["version"], got["managed"])
	}
	for k := range want {
		if diff := cmp.Diff(want[k], got[k]); diff != "" {
			t.Errorf("field %s (-sent +got):\n%s", k, diff)
		}
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("POST answer differs from GET (-post +get):\n%s", diff)
	}
}

// An agent's file_search without files lists none as [], as OpenAI's API does,
// not null, in every answer that holds the agent or its versions: POST, GET,
// the list, PATCH (of another field, and of file_search to {} or a null
// file_ids) and restore.
func TestAgentFileSearchWithoutFiles(t *testing.T) {
	b := setup(t)
	answers := map[string]any{}
	call := func(name, method, path string, body any, want int) map[string]any {
		t.Helper()
		var got map[string]any
		if code := b.do(t, b.annKey, method, path, body, &got); code != want {
			t.Fatalf("%s: status %d, want %d: %v", name, code, want, got)
		}
		answers[name] = got
		return got
	}
	created := call("POST", "POST", "/api/agents",
		`{"name":"No files","provider":"openai","model":"gpt-4o","tools":["file_search"],"tool_resources":{"file_search":{}}}`, http.StatusCreated)
	path := "/api/agents/" + created["id"].(string)
	call("GET", "GET", path, nil, http.StatusOK)
	call("PATCH of the name", "PATCH", path, `{"name":"Still no files"}`, http.StatusOK)
	call("PATCH to file_search {}", "PATCH", path, `{"tool_resources":{"file_search":{}},"description":"v3"}`, http.StatusOK)
	call("PATCH to null file_ids", "PATCH", path, `{"tool_resources":{"file_search":{"file_ids":null}},"description":"v4"}`, http.StatusOK)
	call("restore", "POST", path+"/versions/1/restore", nil, http.StatusOK)
	want := map[string]any{"file_search": map[string]any{"file_ids": []any{}}}
	for name, a := range answers {
		if diff := cmp.Diff(want, a.(map[string]any)["tool_resources"]); diff != "" {
			t.Errorf("%s answers tool_resources (-want +got):\n%s", name, diff)
		}
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if code := b.do(t, b.annKey, "GET", "/api/agents", nil, &list); code != http.StatusOK || len(list.Data) != 1 {
		t.Fatalf("list: status %d, %d agents, want 200 and 1", code, len(list.Data))
	}
	if diff := cmp.Diff(want, list.Data[0]["tool_resources"]); diff != "" {
		t.Errorf("the list answers tool_resources (-want +got):\n%s", diff)
	}
	var versions struct {
		Data []struct {
			Version int            `json:"version"`
			Spec    map[string]any `json:"spec"`
		} `json:"data"`
	}
	if code := b.do(t, b.annKey, "GET", path+"/versions", nil, &versions); code != http.StatusOK || len(versions.Data) != 5 {
		t.Fatalf("versions: status %d, %d versions, want 200 and 5", code, len(versions.Data))
	}
	for _, v := range versions.Data {
		if diff := cmp.Diff(want, v.Spec["tool_resources"]); diff != "" {
			t.Errorf("version %d has tool_resources (-want +got):\n%s", v.Version, diff)
		}
	}
}

func TestAgentVisibility(t *testing.T) {
	b := setup(t)
	var private, shared agent.Agent
	b.do(t, b.annKey, "POST", "/api/agents", map[string]any{"name": "mine", "provider": "openAI", "model": "m"}, &private)
	b.do(t, b.annKey, "POST", "/api/agents", map[string]any{"name": "ours", "provider": "openAI", "model": "m", "shared": true}, &shared)

	tests := []struct {
		name, key, method, path string
		body                    any
		want                    int
	}{
		{"bob cannot read ann's private agent", b.bobKey, "GET", "/api/agents/" + private.ID, nil, 404},
		{"bob cannot patch ann's private agent", b.bobKey, "PATCH", "/api/agents/" + private.ID, `{"name":"x"}`, 404},
		{"bob cannot delete ann's private agent", b.bobKey, "DELETE", "/api/agents/" + private.ID, nil, 404},
		{"bob can read ann's shared agent", b.bobKey, "GET", "/api/agents/" + shared.ID, nil, 200},
		{"bob cannot patch ann's shared agent", b.bobKey, "PATCH", "/api/agents/" + shared.ID, `{"name":"x"}`, 403},
		{"bob cannot delete ann's shared agent", b.bobKey, "DELETE", "/api/agents/" + shared.ID, nil, 403},
		{"an admin reads any agent", b.adminKey, "GET", "/api/agents/" + private.ID, nil, 200},
		{"ann reads her own", b.annKey, "GET", "/api/agents/" + private.ID, nil, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code := b.do(t, tc.key, tc.method, tc.path, tc.body, nil); code != tc.want {
				t.Errorf("status %d, want %d", code, tc.want)
			}
		})
	}

	var page struct {
		Data []agent.Agent `json:"data"`
	}
	b.do(t, b.bobKey, "GET", "/api/agents", nil, &page)
	if len(page.Data) != 1 || page.Data[0].ID != shared.ID {
		t.Errorf("bob's list = %+v, want only the shared agent", page.Data)
	}
	b.do(t, b.adminKey, "GET", "/api/agents", nil, &page)
	if len(page.Data) != 2 {
		t.Errorf("admin's list has %d agents, want 2", len(page.Data))
	}
}

// A request whose client went away while it was authenticated is no server
// error: recorded as 499, not logged as a failure.
func TestClientGoneBeforeAuthenticated(t *testing.T) {
	b := setup(t)
	var logged bytes.Buffer
	api := httpapi.New(httpapi.Options{Auth: b.auth, Agents: b.agents,
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, path := range []string{"/api/agents", "/v1/models"} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the connection closed: net/http ends the request's context
		req := httptest.NewRequestWithContext(ctx, "GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+b.annKey)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != 499 {
			t.Errorf("GET %s: status %d, want 499", path, rec.Code)
		}
	}
	if strings.Contains(logged.String(), "level=ERROR") || !strings.Contains(logged.String(), "client went away") {
		t.Errorf("log:\n%s", logged.String())
	}
}

// A client that goes away while it sends its request's body is no server
// error and no malformed request either: the request is recorded as 499 and
// logged as the client having gone, not as a 400 or a 500. A body that is
// merely malformed, from a client still there, stays a 400.
func TestClientGoneWhileSendingBody(t *testing.T) {
	b := setup(t)
	var logged syncBuffer
	tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: telemetrytest.Env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httpapi.New(httpapi.Options{Auth: b.auth, Agents: b.agents, Telemetry: tel,
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	// A connection is closed once the server is done with its request.
	closed := make(chan struct{}, 8)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()

	paths := []string{"/api/agents", "/v1/chat/completions", "/api/auth/login"}
	for _, path := range paths {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// Headers and the start of a 100-byte body, then the connection closes.
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":", path, b.annKey)
		c.Close()
		<-closed
	}
	log := logged.String()
	if strings.Contains(log, "level=ERROR") || strings.Count(log, "client went away") != len(paths) || strings.Contains(log, "status=400") {
		t.Errorf("log, want each request logged as the client having gone:\n%s", log)
	}
	metrics := scrape(t, tel)
	for _, path := range paths {
		if want := fmt.Sprintf(`relay_http_requests_total{code="499",method="POST",route="%s"} 1`, path); !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}

	// The same truncated body from a client that waits for its answer.
	resp, err := http.Post(srv.URL+"/api/auth/login", "application/json", strings.NewReader(`{"email":`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed body: status %d, want 400", resp.StatusCode)
	}
}

// scrape returns the metrics of tel in Prometheus's text format.
func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestAgentAuthentication(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	u, err := b.auth.FindUser(ctx, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	k, revoked, err := b.auth.CreateKey(ctx, u.ID, "soon revoked")
	if err != nil {
		t.Fatal(err)
	}
	if code := b.do(t, revoked, "GET", "/api/agents", nil, nil); code != 200 {
		t.Fatalf("fresh key: status %d", code)
	}
	if err := b.auth.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]string{
		"none":      "",
		"malformed": "hello",
		"unknown":   auth.NewSecret(),
		"revoked":   revoked,
	} {
		t.Run(name, func(t *testing.T) {
			var e apiError
			if code := b.do(t, key, "GET", "/api/agents", nil, &e); code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", code)
			}
			if e.Error.Code != "unauthorized" || strings.Contains(e.Error.Message, key[min(len(key), 3):]) && key != "" {
				t.Errorf("error %+v", e.Error)
			}
		})
	}
	// The answers for an unknown and a revoked key are the same: nothing leaks.
	var e1, e2 apiError
	b.do(t, auth.NewSecret(), "GET", "/api/agents", nil, &e1)
	b.do(t, revoked, "GET", "/api/agents", nil, &e2)
	if !cmp.Equal(e1, e2) {
		t.Errorf("unknown key: %+v; revoked key: %+v", e1, e2)
	}
	// Probes need no key.
	if code := b.do(t, "", "GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code := b.do(t, "", "GET", "/readyz", nil, nil); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
}

func TestAgentBadInput(t *testing.T) {
	b := setup(t)
	tests := []struct {
		name   string
		body   string
		status int
		code   string
		fields map[string]string // field → substring of its message
	}{
		{"provider and model required", `{"name":"x"}`, 400, "invalid", map[string]string{"provider": "required", "model": "required"}},
		{"unknown provider", `{"provider":"nope","model":"m"}`, 400, "invalid", map[string]string{"provider": "unknown provider"}},
		{"unknown field is named", `{"provider":"openAI","model":"m","temprature":1}`, 400, "invalid", map[string]string{"temprature": "unknown field"}},
		{"read-only field", `{"provider":"openAI","model":"m","version":7}`, 400, "invalid", map[string]string{"version": "read-only"}},
		{"every read-only and unknown field", `{"provider":"openAI","model":"m","version":3,"author":"me","colour":"red","permission":"owner"}`, 400, "invalid",
			map[string]string{"version": "read-only", "author": "read-only", "colour": "unknown field", "permission": "read-only"}},
		{"tools must be strings", `{"provider":"openAI","model":"m","tools":["a",3]}`, 400, "invalid", map[string]string{"tools": "expected string"}},
		{"edge without target", `{"provider":"openAI","model":"m","edges":[{"from":"a","edgeType":"direct"}]}`, 400, "invalid", map[string]string{"edges[0].to": "required"}},
		{"edge with a bad type", `{"provider":"openAI","model":"m","edges":[{"from":"a","to":"b","edgeType":"sideways"}]}`, 400, "invalid", map[string]string{"edges[0].edgeType": "handoff or direct"}},
		{"edge with a bad id", `{"provider":"openAI","model":"m","edges":[{"from":"a","to":["b c"]}]}`, 400, "invalid", map[string]string{"edges[0].to[0]": "not an agent id"}},
		{"bad id", `{"id":"has space","provider":"openAI","model":"m"}`, 400, "invalid", map[string]string{"id": "letters"}},
		{"recursion limit over the cap", `{"provider":"openAI","model":"m","recursion_limit":101}`, 400, "invalid", map[string]string{"recursion_limit": "at most 100"}},
		{"recursion limit not whole", `{"provider":"openAI","model":"m","recursion_limit":1.5}`, 400, "invalid", map[string]string{"recursion_limit": "expected integer, got number 1.5"}},
		{"bad artifacts", `{"provider":"openAI","model":"m","artifacts":"fancy"}`, 400, "invalid", map[string]string{"artifacts": "one of"}},
		{"malformed JSON", `{"provider":`, 400, "invalid", nil},
		{"not an object", `[1,2]`, 400, "invalid", nil},
		{"empty body", ``, 400, "invalid", nil},
		{"two values", `{"provider":"openAI","model":"m"} {}`, 400, "invalid", nil},
		{"over the cap", `{"name":"` + strings.Repeat("x", 70<<10) + `","provider":"openAI","model":"m"}`, 413, "too_large", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e apiError
			if code := b.do(t, b.annKey, "POST", "/api/agents", tc.body, &e); code != tc.status {
				t.Fatalf("status %d, want %d (%+v)", code, tc.status, e)
			}
			if e.Error.Code != tc.code || e.Error.Message == "" {
				t.Errorf("error %+v, want code %s", e.Error, tc.code)
			}
			got := map[string]string{}
			for _, f := range e.Error.Fields {
				got[f.Field] = f.Message
			}
			for f, sub := range tc.fields {
				if !strings.Contains(got[f], sub) {
					t.Errorf("field %s: message %q, want it to contain %q (all: %v)", f, got[f], sub, got)
				}
			}
		})
	}
	// A chunked body over the cap (no Content-Length) is refused too.
	req, _ := http.NewRequest("POST", b.srv.URL+"/api/agents", io.MultiReader(strings.NewReader(`{"name":"`), strings.NewReader(strings.Repeat("y", 70<<10))))
	req.Header.Set("Authorization", "Bearer "+b.annKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize body: status %d, want 413", resp.StatusCode)
	}
}

func TestAgentPatchVersionsDelete(t *testing.T) {
	b := setup(t)
	var a agent.Agent
	b.do(t, b.annKey, "POST", "/api/agents", map[string]any{"name": "v1", "provider": "openAI", "model": "m", "tools": []string{"file_search"}, "description": "d"}, &a)

	var patched agent.Agent
	if code := b.do(t, b.annKey, "PATCH", "/api/agents/"+a.ID, `{"name":"v2","description":null}`, &patched); code != 200 {
		t.Fatalf("patch: %d", code)
	}
	if patched.Name != "v2" || patched.Description != "" || patched.Version != 2 || !cmp.Equal(patched.Tools, []string{"file_search"}) {
		t.Errorf("after patch: %+v", patched)
	}
	// A patch that changes nothing keeps the version.
	b.do(t, b.annKey, "PATCH", "/api/agents/"+a.ID, `{"name":"v2"}`, &patched)
	if patched.Version != 2 {
		t.Errorf("no-op patch bumped the version to %d", patched.Version)
	}
	// Invalid results are refused and nothing changes.
	var e apiError
	if code := b.do(t, b.annKey, "PATCH", "/api/agents/"+a.ID, `{"model":null}`, &e); code != 400 || e.Error.Fields[0].Field != "model" {
		t.Errorf("clearing model: %d %+v", code, e)
	}
	if code := b.do(t, b.annKey, "PATCH", "/api/agents/"+a.ID, `{"version":9}`, &e); code != 400 {
		t.Errorf("patching version: %d", code)
	}
	if code := b.do(t, b.annKey, "PATCH", "/api/agents/"+a.ID, `{"nmae":"x"}`, &e); code != 400 || e.Error.Fields[0].Field != "nmae" {
		t.Errorf("unknown field: %d %+v", code, e)
	}
	var versions struct {
		Data []agent.Version `json:"data"`
	}
	b.do(t, b.annKey, "GET", "/api/agents/"+a.ID+"/versions", nil, &versions)
	if len(versions.Data) != 2 || versions.Data[0].Spec.Name != "v1" || versions.Data[1].Spec.Name != "v2" {
		t.Errorf("versions: %+v", versions.Data)
	}
	if code := b.do(t, b.annKey, "DELETE", "/api/agents/"+a.ID, nil, nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code := b.do(t, b.annKey, "GET", "/api/agents/"+a.ID, nil, nil); code != 404 {
		t.Errorf("get after delete: %d", code)
	}
}

func TestManagedAgentsAreReadOnly(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	if _, err := b.agents.SyncConfig(ctx, []*agent.Agent{{ID: "regulations", Spec: agent.Spec{Name: "R", Provider: "ollama", Model: "llama3", Shared: true}}}); err != nil {
		t.Fatal(err)
	}
	var got agent.Agent
	if code := b.do(t, b.annKey, "GET", "/api/agents/regulations", nil, &got); code != 200 || !got.Managed {
		t.Fatalf("get config agent: %d %+v", code, got)
	}
	for _, method := range []string{"PATCH", "DELETE"} {
		var e apiError
		if code := b.do(t, b.adminKey, method, "/api/agents/regulations", `{"name":"x"}`, &e); code != http.StatusConflict || !strings.Contains(e.Error.Message, "config") {
			t.Errorf("%s: %d %+v", method, code, e)
		}
	}
	// Creating an agent with a taken id is a conflict.
	if code := b.do(t, b.annKey, "POST", "/api/agents", `{"id":"regulations","provider":"openAI","model":"m"}`, nil); code != http.StatusConflict {
		t.Errorf("duplicate id: %d", code)
	}
}

func TestAgentPagination(t *testing.T) {
	b := setup(t)
	want := map[string]bool{}
	for i := range 25 {
		var a agent.Agent
		b.do(t, b.annKey, "POST", "/api/agents", map[string]any{"name": fmt.Sprint(i), "provider": "openAI", "model": "m"}, &a)
		want[a.ID] = true
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		var page struct {
			Data       []agent.Agent `json:"data"`
			NextCursor string        `json:"next_cursor"`
		}
		if code := b.do(t, b.annKey, "GET", "/api/agents?limit=10&cursor="+cursor, nil, &page); code != 200 {
			t.Fatalf("page %d: %d", pages, code)
		}
		for _, a := range page.Data {
			if seen[a.ID] {
				t.Errorf("agent %s on two pages", a.ID)
			}
			seen[a.ID] = true
		}
		if page.NextCursor == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		cursor = page.NextCursor
	}
	if !cmp.Equal(seen, want) {
		t.Errorf("listed %d agents, want %d", len(seen), len(want))
	}
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "cursor=%21%21"} {
		if code := b.do(t, b.annKey, "GET", "/api/agents?"+bad, nil, nil); code != 400 {
			t.Errorf("%s: status %d, want 400", bad, code)
		}
	}
}

func TestUnknownRouteIsJSON(t *testing.T) {
	b := setup(t)
	var e apiError
	if code := b.do(t, b.annKey, "GET", "/api/nothing", nil, &e); code != 404 || e.Error.Code != "not_found" {
		t.Errorf("%d %+v", code, e)
	}
}

// Creating an agent whose id is taken tells a user who may read that agent
// that it exists (409); a user who cannot see it gets only that the id is not
// available, as an invalid id is answered, whatever the agent is.
func TestAgentIDTakenDoesNotRevealInvisibleAgents(t *testing.T) {
	b := setup(t)
	for _, body := range []string{
		`{"id":"ann_private","provider":"openAI","model":"m"}`,
		`{"id":"ann_shared","provider":"openAI","model":"m","shared":true}`,
	} {
		if code := b.do(t, b.annKey, "POST", "/api/agents", body, nil); code != http.StatusCreated {
			t.Fatalf("create %s: %d", body, code)
		}
	}
	tests := []struct {
		name, key, id string
		want          int
		exists        bool // the answer says the agent exists
	}{
		{"bob, ann's private id", b.bobKey, "ann_private", http.StatusBadRequest, false},
		{"bob, ann's shared id", b.bobKey, "ann_shared", http.StatusConflict, true},
		{"ann, her own id", b.annKey, "ann_private", http.StatusConflict, true},
		{"an admin, ann's private id", b.adminKey, "ann_private", http.StatusConflict, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e apiError
			code := b.do(t, tc.key, "POST", "/api/agents", `{"id":"`+tc.id+`","provider":"openAI","model":"m"}`, &e)
			raw, _ := json.Marshal(e)
			if code != tc.want || strings.Contains(string(raw), "exists") != tc.exists {
				t.Errorf("status %d, answer %s; want %d, saying it exists: %v", code, raw, tc.want, tc.exists)
			}
			if !tc.exists && (len(e.Error.Fields) != 1 || e.Error.Fields[0].Field != "id" || strings.Contains(string(raw), "ann")) {
				t.Errorf("answer %s; want a field error on id naming nobody", raw)
			}
		})
	}
	// Ann's agent is unchanged.
	var got agent.Agent
	if code := b.do(t, b.annKey, "GET", "/api/agents/ann_private", nil, &got); code != 200 || got.Author != b.annID || got.Version != 1 {
		t.Errorf("ann's agent after bob's attempt: %d %+v", code, got)
	}
}
