package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// An agent's file_search may only be given files its author may read, so that
// nobody can make an agent read someone else's files; files an agent already
// has stay when someone else edits it.
func TestAgentFilesMustBeTheAuthors(t *testing.T) {
	ctx := context.Background()
	st, ann, bob := storeWithUsers(t)
	owners := map[string]string{"file_ann": "ann", "file_bob": "bob"}
	var asked [][]string
	svc := agent.NewService(st, agent.Rules{Files: func(_ context.Context, u *auth.User, ids []string) ([]string, error) {
		asked = append(asked, ids)
		var bad []string
		for _, id := range ids {
			if owners[id] != u.ID && !u.IsAdmin() {
				bad = append(bad, id)
			}
		}
		return bad, nil
	}})
	owners["file_ann"], owners["file_bob"] = ann.ID, bob.ID
	spec := func(ids ...string) agent.Spec {
		return agent.Spec{Name: "Reader", Provider: "openAI", Model: "gpt-4o", Tools: []string{"file_search"}, Shared: true,
			ToolResources: &agent.ToolResources{FileSearch: &agent.FileSearchResources{FileIDs: ids}}}
	}

	_, err := svc.Create(ctx, ann, "stealer", spec("file_ann", "file_bob"))
	var fe *fault.Error
	if !fault.Is(err, fault.Invalid) || !errorsAs(err, &fe) || len(fe.Fields) != 1 || fe.Fields[0].Field != "tool_resources.file_search.file_ids[1]" || !strings.Contains(fe.Fields[0].Message, "file_bob") {
		t.Fatalf("Create with Bob's file as Ann: %v", err)
	}
	if _, err := svc.Create(ctx, ann, "reader", spec("file_ann")); err != nil {
		t.Fatalf("Create with Ann's own file: %v", err)
	}
	// Adding Bob's file by patch is refused too.
	if _, err := svc.Patch(ctx, ann, "reader", map[string]json.RawMessage{"tool_resources": json.RawMessage(`{"file_search":{"file_ids":["file_ann","file_bob"]}}`)}); !fault.Is(err, fault.Invalid) {
		t.Fatalf("Patch adding Bob's file: %v", err)
	}
	// A patch that leaves the files alone does not ask about them.
	asked = nil
	if _, err := svc.Patch(ctx, ann, "reader", map[string]json.RawMessage{"name": json.RawMessage(`"Reader 2"`)}); err != nil || len(asked) != 0 {
		t.Fatalf("Patch of the name: %v, files asked %v", err, asked)
	}
	// An admin may edit Ann's agent and add their own file; Ann's stays.
	admin := &auth.User{ID: "admin", Role: auth.RoleAdmin}
	owners["file_admin"] = "admin"
	if _, err := svc.Patch(ctx, admin, "reader", map[string]json.RawMessage{"tool_resources": json.RawMessage(`{"file_search":{"file_ids":["file_ann","file_admin"]}}`)}); err != nil {
		t.Fatalf("admin patch: %v", err)
	}
	if last := asked[len(asked)-1]; !slices.Equal(last, []string{"file_admin"}) {
		t.Errorf("the admin's patch asked about %v, want only the added file", last)
	}
}

func errorsAs(err error, target **fault.Error) bool {
	fe, ok := err.(*fault.Error)
	if ok {
		*target = fe
	}
	return ok
}

// storeWithUsers opens a SQLite store, closed when the test ends, with two
// users, Ann and Bob.
func storeWithUsers(t *testing.T) (st *store.DB, ann, bob *auth.User) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	users := auth.NewService(st, nil)
	if ann, err = users.CreateUser(t.Context(), auth.NewUser{Email: "ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	if bob, err = users.CreateUser(t.Context(), auth.NewUser{Email: "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	return st, ann, bob
}
