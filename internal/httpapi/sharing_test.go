package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// world is the whole API on SQLite (agents, groups, runs answered "ok" by a
// scripted model, schedules on a clock the test sets) with users by name:
// each has a key, and the admin is "admin".
type world struct {
	srv    *httptest.Server
	store  store.Store
	auth   *auth.Service
	agents *agent.Service
	runs   *run.Service
	sched  *schedule.Service
	keys   map[string]string
	users  map[string]*auth.User
	now    time.Time
}

func setupWorld(t *testing.T, names ...string) *world {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &world{store: st, auth: auth.NewService(st, nil), keys: map[string]string{}, users: map[string]*auth.User{},
		now: time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)}
	w.agents = agent.NewService(st, agent.Rules{Providers: []string{"openAI"}})
	model := llmtest.Func(func(req *llm.Request) llmtest.Turn {
		return llmtest.Turn{Text: []string{"ok"}, Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}}
	})
	m := mcp.NewManager(nil, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	prep := &run.Preparer{Agents: w.agents, MCP: m, Location: time.UTC}
	w.runs = &run.Service{Store: st, MCP: m, Log: slog.New(slog.DiscardHandler), Prep: prep,
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	t.Cleanup(func() { w.runs.Drain(context.Background()) })
	w.sched = &schedule.Service{Store: st, Agents: w.agents, Users: st, Runner: w.runs, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return w.now }}
	w.srv = httptest.NewServer(newAPI(t, httpapi.Options{Auth: w.auth, Agents: w.agents, Groups: auth.NewGroups(st),
		Runs: w.runs, Schedules: w.sched, Prompt: prep, MaxBodyBytes: 1 << 20}))
	t.Cleanup(w.srv.Close)
	for _, name := range append([]string{"admin"}, names...) {
		role := auth.RoleUser
		if name == "admin" {
			role = auth.RoleAdmin
		}
		u, err := w.auth.CreateUser(ctx, auth.NewUser{Email: name + "@example.com", DisplayName: strings.ToUpper(name[:1]) + name[1:], Role: role})
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := w.auth.CreateKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		w.keys[name], w.users[name] = key, u
	}
	return w
}

// do sends a request as who and decodes the JSON answer into out (when
// non-nil); it returns the status and the body.
func (w *world) do(t *testing.T, who, method, path string, body any, out any) (int, string) {
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
	req, err := http.NewRequest(method, w.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+w.keys[who])
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
	if out != nil && len(raw) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, string(raw)
}

// agentAs creates an agent authored by who from spec (provider and model
// filled in).
func (w *world) agentAs(t *testing.T, who, id string, spec agent.Spec) *agent.Agent {
	t.Helper()
	spec.Provider, spec.Model = "openAI", "gpt-4o"
	a, err := w.agents.Create(context.Background(), w.users[who], id, spec)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// share replaces an agent's shares as the admin.
func (w *world) share(t *testing.T, id string, shares ...map[string]string) {
	t.Helper()
	if shares == nil {
		shares = []map[string]string{}
	}
	if code, body := w.do(t, "admin", "PUT", "/api/agents/"+id+"/shares", map[string]any{"shares": shares}, nil); code != 200 {
		t.Fatalf("sharing %s: %d %s", id, code, body)
	}
}

func (w *world) userShare(name, role string) map[string]string {
	return map[string]string{"principal_type": "user", "principal_id": w.users[name].ID, "role": role}
}

// group creates a group as the admin and returns its id.
func (w *world) group(t *testing.T, name string, members ...string) string {
	t.Helper()
	ids := []string{}
	for _, m := range members {
		ids = append(ids, w.users[m].ID)
	}
	var g struct{ ID string }
	if code, body := w.do(t, "admin", "POST", "/api/groups", map[string]any{"name": name, "member_ids": ids}, &g); code != 201 {
		t.Fatalf("creating group %s: %d %s", name, code, body)
	}
	return g.ID
}

// chat sends a message to an agent as who and returns the status and the
// whole answer (the event stream, or an error).
func (w *world) chat(t *testing.T, who, agentID, text string) (int, string) {
	t.Helper()
	return w.do(t, who, "POST", "/api/chat", map[string]string{"agent_id": agentID, "text": text}, nil)
}

// The permission matrix of docs/api.md "Sharing": what the author, an admin,
// an owner, an editor (directly or through a group), a viewer and a user the
// agent is not shared with may do, and the permission each is told.
func TestSharingPermissionMatrix(t *testing.T) {
	w := setupWorld(t, "ann", "olly", "ed", "gus", "vic", "nobody")
	files := &agent.ToolResources{FileSearch: &agent.FileSearchResources{FileIDs: []string{"file_secret"}}}
	w.agentAs(t, "ann", "doc", agent.Spec{Name: "Docs", ToolResources: files})
	if code, body := w.do(t, "ann", "PATCH", "/api/agents/doc", `{"name":"Docs 2"}`, nil); code != 200 {
		t.Fatalf("ann renames her agent: %d %s", code, body)
	}
	editors := w.group(t, "editors", "gus")
	shares := []map[string]string{
		w.userShare("olly", "owner"), w.userShare("ed", "editor"), w.userShare("vic", "viewer"),
		{"principal_type": "group", "principal_id": editors, "role": "editor"},
	}
	w.share(t, "doc", shares...)

	type want struct {
		get, patch, readShares, writeShares, restore, chat int
		permission                                         string
		files                                              bool
	}
	owner := want{200, 200, 200, 200, 200, 200, "owner", true}
	editor := want{200, 200, 200, 403, 200, 200, "editor", true}
	viewer := want{200, 403, 403, 403, 403, 200, "viewer", false}
	none := want{404, 404, 404, 404, 404, 404, "", false}
	for _, tc := range []struct {
		who  string
		want want
	}{
		{"ann", owner}, {"admin", owner}, {"olly", owner},
		{"ed", editor}, {"gus", editor},
		{"vic", viewer}, {"nobody", none},
	} {
		t.Run(tc.who, func(t *testing.T) {
			var got map[string]any
			code, body := w.do(t, tc.who, "GET", "/api/agents/doc", nil, &got)
			if code != tc.want.get {
				t.Fatalf("GET: %d %s, want %d", code, body, tc.want.get)
			}
			if code == 200 {
				if got["permission"] != tc.want.permission {
					t.Errorf("GET permission %v, want %s", got["permission"], tc.want.permission)
				}
				if seen := strings.Contains(body, "file_secret"); seen != tc.want.files {
					t.Errorf("GET shows the file ids: %v, want %v: %s", seen, tc.want.files, body)
				}
				_, vbody := w.do(t, tc.who, "GET", "/api/agents/doc/versions", nil, nil)
				if seen := strings.Contains(vbody, "file_secret"); seen != tc.want.files {
					t.Errorf("versions show the file ids: %v, want %v: %s", seen, tc.want.files, vbody)
				}
			}
			var page struct{ Data []map[string]any }
			w.do(t, tc.who, "GET", "/api/agents", nil, &page)
			i := slices.IndexFunc(page.Data, func(a map[string]any) bool { return a["id"] == "doc" })
			switch {
			case (i >= 0) != (tc.want.get == 200):
				t.Errorf("the list has the agent: %v, want %v", i >= 0, tc.want.get == 200)
			case i >= 0 && page.Data[i]["permission"] != tc.want.permission:
				t.Errorf("list permission %v, want %s", page.Data[i]["permission"], tc.want.permission)
			case i >= 0 && strings.Contains(mustJSON(t, page.Data[i]), "file_secret") != tc.want.files:
				t.Errorf("the list shows the file ids to %s: %v", tc.who, page.Data[i])
			}
			if code, body := w.do(t, tc.who, "PATCH", "/api/agents/doc", `{"description":"by `+tc.who+`"}`, nil); code != tc.want.patch {
				t.Errorf("PATCH: %d %s, want %d", code, body, tc.want.patch)
			}
			if code, body := w.do(t, tc.who, "GET", "/api/agents/doc/shares", nil, nil); code != tc.want.readShares {
				t.Errorf("GET shares: %d %s, want %d", code, body, tc.want.readShares)
			}
			if code, body := w.do(t, tc.who, "PUT", "/api/agents/doc/shares", map[string]any{"shares": shares}, nil); code != tc.want.writeShares {
				t.Errorf("PUT shares: %d %s, want %d", code, body, tc.want.writeShares)
			}
			if code, body := w.do(t, tc.who, "POST", "/api/agents/doc/versions/1/restore", nil, nil); code != tc.want.restore {
				t.Errorf("restore: %d %s, want %d", code, body, tc.want.restore)
			}
			code, body = w.chat(t, tc.who, "doc", "hello")
			if code != tc.want.chat || (code == 200 && !strings.Contains(body, `"status":"succeeded"`)) {
				t.Errorf("chat: %d %s, want %d", code, body, tc.want.chat)
			}
			var models struct{ Data []struct{ ID string } }
			w.do(t, tc.who, "GET", "/v1/models", nil, &models)
			listed := slices.ContainsFunc(models.Data, func(m struct{ ID string }) bool { return m.ID == "doc" })
			if listed != (tc.want.chat == 200) {
				t.Errorf("/v1/models lists the agent: %v", listed)
			}
			sched := map[string]any{"agent_id": "doc", "name": "daily " + tc.who, "prompt": "hi", "cron": "0 9 * * *"}
			wantSched := 201
			if tc.want.chat != 200 {
				wantSched = 400
			}
			if code, body := w.do(t, tc.who, "POST", "/api/schedules", sched, nil); code != wantSched {
				t.Errorf("schedule: %d %s, want %d", code, body, wantSched)
			}
			if code, body := w.do(t, tc.who, "POST", "/api/agents/doc/prompt", `{"text":"hi"}`, nil); code != tc.want.chat {
				t.Errorf("prompt preview: %d %s, want %d", code, body, tc.want.chat)
			}
			if code, body := w.do(t, tc.who, "GET", "/api/agents/doc/graph", nil, nil); code != tc.want.get {
				t.Errorf("graph: %d %s, want %d", code, body, tc.want.get)
			}
		})
	}

	// Only owners delete: the viewer and the editors are refused, an owner by
	// share may.
	for who, want := range map[string]int{"vic": 403, "ed": 403, "gus": 403, "nobody": 404} {
		if code, body := w.do(t, who, "DELETE", "/api/agents/doc", nil, nil); code != want {
			t.Errorf("DELETE by %s: %d %s, want %d", who, code, body, want)
		}
	}
	if code, body := w.do(t, "olly", "DELETE", "/api/agents/doc", nil, nil); code != 204 {
		t.Errorf("DELETE by the owner by share: %d %s", code, body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shared: true makes every user a viewer; a share that grants more wins; only
// an owner may change shared, and a viewer who edits gets 403.
func TestSharingSharedFlagAndHigherRoles(t *testing.T) {
	w := setupWorld(t, "ann", "ed", "bob")
	w.agentAs(t, "ann", "pub", agent.Spec{Name: "Public", Shared: true})
	w.share(t, "pub", w.userShare("ed", "editor"))
	for who, want := range map[string]string{"bob": "viewer", "ed": "editor"} {
		var a map[string]any
		if code, body := w.do(t, who, "GET", "/api/agents/pub", nil, &a); code != 200 || a["permission"] != want {
			t.Errorf("%s: %d %s, want permission %s", who, code, body, want)
		}
	}
	if code, body := w.do(t, "ed", "PATCH", "/api/agents/pub", `{"shared":false}`, nil); code != 403 || !strings.Contains(body, "only an owner") {
		t.Errorf("an editor unsharing: %d %s", code, body)
	}
	if code, body := w.do(t, "ed", "PATCH", "/api/agents/pub", `{"shared":true,"name":"Still public"}`, nil); code != 200 {
		t.Errorf("an editor patching with shared unchanged: %d %s", code, body)
	}
	if code, _ := w.do(t, "ann", "PATCH", "/api/agents/pub", `{"shared":false}`, nil); code != 200 {
		t.Errorf("the author unsharing: %d", code)
	}
	if code, _ := w.do(t, "bob", "GET", "/api/agents/pub", nil, nil); code != 404 {
		t.Errorf("bob after the agent was unshared: %d, want 404", code)
	}
	if code, _ := w.do(t, "ed", "GET", "/api/agents/pub", nil, nil); code != 200 {
		t.Errorf("ed keeps his share after shared was turned off: %d", code)
	}
}

// A group grants its members access; removing a member or deleting the
// group takes it away. Writes to groups are the admins'; everyone sees the
// groups' names, only admins their members.
func TestGroupsGrantAccess(t *testing.T) {
	w := setupWorld(t, "ann", "gus", "hal")
	w.agentAs(t, "ann", "doc", agent.Spec{Name: "Docs"})
	team := w.group(t, "team", "gus", "hal")
	w.share(t, "doc", map[string]string{"principal_type": "group", "principal_id": team, "role": "viewer"})
	for _, who := range []string{"gus", "hal"} {
		if code, _ := w.do(t, who, "GET", "/api/agents/doc", nil, nil); code != 200 {
			t.Errorf("%s, in the group: %d", who, code)
		}
	}
	var shares struct{ Data []map[string]any }
	w.do(t, "ann", "GET", "/api/agents/doc/shares", nil, &shares)
	if len(shares.Data) != 1 || shares.Data[0]["name"] != "team" || shares.Data[0]["principal_type"] != "group" || shares.Data[0]["role"] != "viewer" {
		t.Errorf("shares: %+v", shares.Data)
	}

	// Non-admins see names only, and may not write.
	var list struct{ Data []map[string]any }
	w.do(t, "gus", "GET", "/api/groups", nil, &list)
	if len(list.Data) != 1 || list.Data[0]["name"] != "team" || list.Data[0]["member_ids"] != nil || list.Data[0]["members"] != nil {
		t.Errorf("a user's group list: %+v", list.Data)
	}
	if code, _ := w.do(t, "gus", "GET", "/api/groups/"+team, nil, nil); code != 200 {
		t.Errorf("a user reading a group: %d", code)
	}
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/api/groups", `{"name":"mine"}`},
		{"PATCH", "/api/groups/" + team, `{"member_ids":[]}`},
		{"DELETE", "/api/groups/" + team, ""},
	} {
		if code, body := w.do(t, "gus", req.method, req.path, req.body, nil); code != 403 {
			t.Errorf("a user's %s %s: %d %s, want 403", req.method, req.path, code, body)
		}
	}
	var g struct {
		ID        string
		Name      string
		MemberIDs []string `json:"member_ids"`
		Members   []struct {
			ID, Email   string
			DisplayName string `json:"display_name"`
		}
	}
	w.do(t, "admin", "GET", "/api/groups/"+team, nil, &g)
	if len(g.MemberIDs) != 2 || len(g.Members) != 2 || g.Members[0].Email == "" {
		t.Errorf("the admin's view of the group: %+v", g)
	}

	// Bad input names the field; a taken name is a conflict.
	var e apiError
	code, body := w.do(t, "admin", "POST", "/api/groups", `{"name":"x","member_ids":["user_nobody"]}`, nil)
	_ = json.Unmarshal([]byte(body), &e)
	if code != 400 || len(e.Error.Fields) != 1 || e.Error.Fields[0].Field != "member_ids[0]" {
		t.Errorf("a group with an unknown member: %d %s", code, body)
	}
	if code, body := w.do(t, "admin", "POST", "/api/groups", `{"name":"team"}`, nil); code != 409 {
		t.Errorf("a taken group name: %d %s", code, body)
	}
	if code, body := w.do(t, "admin", "POST", "/api/groups", `{"member_ids":[]}`, nil); code != 400 || !strings.Contains(body, `"name"`) {
		t.Errorf("a group without a name: %d %s", code, body)
	}

	// Out of the group, out of the agent.
	if code, body := w.do(t, "admin", "PATCH", "/api/groups/"+team, map[string]any{"member_ids": []string{w.users["hal"].ID}}, nil); code != 200 {
		t.Fatalf("removing gus: %d %s", code, body)
	}
	if code, _ := w.do(t, "gus", "GET", "/api/agents/doc", nil, nil); code != 404 {
		t.Errorf("gus after leaving the group: %d, want 404", code)
	}
	if code, _ := w.do(t, "admin", "DELETE", "/api/groups/"+team, nil, nil); code != 204 {
		t.Errorf("deleting the group: %d", code)
	}
	if code, _ := w.do(t, "hal", "GET", "/api/agents/doc", nil, nil); code != 404 {
		t.Errorf("hal after the group was deleted: %d, want 404", code)
	}
	w.do(t, "ann", "GET", "/api/agents/doc/shares", nil, &shares)
	if len(shares.Data) != 0 {
		t.Errorf("shares after the group was deleted: %+v", shares.Data)
	}
}

// PUT shares checks every entry and names each bad one; the author cannot be
// given a role; nothing is stored when one is bad.
func TestSetSharesValidation(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	w.agentAs(t, "ann", "doc", agent.Spec{Name: "Docs"})
	body := map[string]any{"shares": []map[string]string{
		w.userShare("bob", "viewer"),
		{"principal_type": "user", "principal_id": "user_ghost", "role": "viewer"},
		{"principal_type": "group", "principal_id": "group_ghost", "role": "editor"},
		{"principal_type": "team", "principal_id": "x", "role": "viewer"},
		w.userShare("bob", "admin"),
		w.userShare("ann", "owner"),
	}}
	code, raw := w.do(t, "ann", "PUT", "/api/agents/doc/shares", body, nil)
	var e apiError
	_ = json.Unmarshal([]byte(raw), &e)
	var fields []string
	for _, f := range e.Error.Fields {
		fields = append(fields, f.Field+": "+f.Message)
	}
	want := []string{
		`shares[1].principal_id: no user "user_ghost"`,
		`shares[2].principal_id: no group "group_ghost"`,
		`shares[3].principal_type: must be user or group`,
		`shares[4].role: must be viewer, editor or owner`,
		`shares[4].principal_id: user "` + w.users["bob"].ID + `" is named twice`,
		`shares[5].principal_id: user "` + w.users["ann"].ID + `" is the agent's author, always its owner`,
	}
	if code != 400 || !slices.Equal(fields, want) {
		t.Errorf("PUT with bad shares: %d\n got %q\nwant %q", code, fields, want)
	}
	var shares struct{ Data []any }
	w.do(t, "ann", "GET", "/api/agents/doc/shares", nil, &shares)
	if len(shares.Data) != 0 {
		t.Errorf("a refused list stored shares: %+v", shares.Data)
	}
	if code, raw := w.do(t, "ann", "PUT", "/api/agents/doc/shares", `{}`, nil); code != 400 || !strings.Contains(raw, `"shares"`) {
		t.Errorf("PUT without shares: %d %s", code, raw)
	}
	if code, raw := w.do(t, "ann", "PUT", "/api/agents/doc/shares", `{"shares":[]}`, nil); code != 200 || !strings.Contains(raw, `"data":[]`) {
		t.Errorf("PUT of no shares: %d %s", code, raw)
	}
}

// The share dialog's search finds users by name or email and groups by name,
// for any signed-in user, at most 20 in all.
func TestPrincipalsSearch(t *testing.T) {
	w := setupWorld(t, "ann", "joanna", "bob")
	w.group(t, "Planning")
	w.group(t, "Annual report")
	var got struct {
		Users  []map[string]string
		Groups []map[string]string
	}
	if code, body := w.do(t, "bob", "GET", "/api/principals?q=ANN", nil, &got); code != 200 {
		t.Fatalf("search: %d %s", code, body)
	}
	var users, groups []string
	for _, u := range got.Users {
		users = append(users, u["email"])
		if u["id"] == "" || u["display_name"] == "" {
			t.Errorf("a user lacks its id or name: %v", u)
		}
	}
	for _, g := range got.Groups {
		groups = append(groups, g["name"])
	}
	if !slices.Equal(users, []string{"ann@example.com", "joanna@example.com"}) || !slices.Equal(groups, []string{"Annual report", "Planning"}) {
		t.Errorf("search for ANN: users %v, groups %v", users, groups)
	}
	for i := range 25 {
		if _, err := w.auth.CreateUser(context.Background(), auth.NewUser{Email: "many" + string(rune('a'+i)) + "@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	w.do(t, "bob", "GET", "/api/principals?q=", nil, &got)
	if n := len(got.Users) + len(got.Groups); n != 20 || len(got.Groups) != 2 {
		t.Errorf("an empty search gave %d users and %d groups, want 20 in all with both groups", len(got.Users), len(got.Groups))
	}
	if code, _ := w.do(t, "", "GET", "/api/principals?q=ann", nil, nil); code != 401 {
		t.Errorf("a search without a key: %d", code)
	}
}

// A restore stores the version's spec as a new version, keeps the history
// and the current sharing; an unknown version is 404.
func TestRestoreVersion(t *testing.T) {
	w := setupWorld(t, "ann", "ed")
	w.agentAs(t, "ann", "doc", agent.Spec{Name: "First", Instructions: "one"})
	w.do(t, "ann", "PATCH", "/api/agents/doc", `{"name":"Second","instructions":"two"}`, nil)
	w.do(t, "ann", "PATCH", "/api/agents/doc", `{"shared":true}`, nil)
	w.share(t, "doc", w.userShare("ed", "editor"))
	var a map[string]any
	if code, body := w.do(t, "ed", "POST", "/api/agents/doc/versions/1/restore", nil, &a); code != 200 {
		t.Fatalf("restore: %d %s", code, body)
	}
	if a["name"] != "First" || a["instructions"] != "one" || a["version"] != float64(4) || a["shared"] != true || a["permission"] != "editor" {
		t.Errorf("restored agent: %v", a)
	}
	var vs struct {
		Data []struct {
			Version int
			Spec    agent.Spec
		}
	}
	w.do(t, "ann", "GET", "/api/agents/doc/versions", nil, &vs)
	var names []string
	for _, v := range vs.Data {
		names = append(names, v.Spec.Name)
	}
	if !slices.Equal(names, []string{"First", "Second", "Second", "First"}) {
		t.Errorf("versions after the restore: %v", names)
	}
	// Restoring what the agent is already changes nothing.
	w.do(t, "ed", "POST", "/api/agents/doc/versions/4/restore", nil, &a)
	if a["version"] != float64(4) {
		t.Errorf("restoring the current version made version %v", a["version"])
	}
	for _, v := range []string{"9", "0", "x"} {
		if code, body := w.do(t, "ed", "POST", "/api/agents/doc/versions/"+v+"/restore", nil, nil); code != 404 {
			t.Errorf("restore of version %s: %d %s", v, code, body)
		}
	}
}
