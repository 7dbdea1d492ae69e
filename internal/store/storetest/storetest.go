// Package storetest is the one conformance suite of Relay's storage engines.
// Every engine runs it, so that what passes on SQLite behaves the same on
// Postgres: the same faults, the same orders, the same round trips.
package storetest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store"
)

// Run runs the suite against an engine. open must return a new, empty store each
// time it is called and close it when t ends. Subtests run in parallel, each on
// its own store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Basics", basicTests},
		{"Users", userTests},
		{"Keys", keyTests},
		{"UserAuth", userAuthTests},
		{"Sessions", sessionTests},
		{"Setup", setupTests},
		{"Identities", identityTests},
		{"Agents", agentTests},
		{"List", listTests},
		{"Sync", syncTests},
		{"Sharing", sharingTests},
		{"Memories", memoryTests},
		{"Files", fileTests},
		{"Runs", runTests},
		{"RunList", runListTests},
		{"RunBatches", runBatchTests},
		{"Schedules", scheduleTests},
		{"Nodes", nodeTests},
		{"Concurrency", concurrencyTests},
		{"Text", textTests},
		{"Vault", vaultTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tt := range g.tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					tt.run(t, open(t))
				})
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// equal is how the suite compares what it stored with what it read: an empty
// collection and a missing one are the same, as they are once encoded.
var equal = cmp.Options{cmpopts.EquateEmpty()}

func wantKind(t *testing.T, err error, kind fault.Kind, doing string) {
	t.Helper()
	if !fault.Is(err, kind) {
		t.Fatalf("%s: got error %v (kind %q), want kind %q", doing, err, fault.KindOf(err), kind)
	}
}

// wantRefused is wantKind for a write of runs' records (StartRun of a new
// conversation, WriteBatch), unless s writes them behind
// (store.DB.WriteBehind): then a refusal that needs the database comes after
// the call returned, which returns nil, and wantRefused reports true. Either
// way the refused records must not be stored, which the caller checks next.
func wantRefused(t *testing.T, s store.Store, err error, kind fault.Kind, doing string) (behind bool) {
	t.Helper()
	if writesBehind(s) && err == nil {
		return true
	}
	wantKind(t, err, kind, doing)
	return false
}

// partsKept is what a refused WriteBatch leaves of a run's events: none, or,
// when s writes behind (which then stores the batch in parts, each refused
// part alone lost), the seqs of the events of the run's own part.
func partsKept(s store.Store, own ...int64) []int64 {
	if writesBehind(s) {
		return own
	}
	return []int64{}
}

// writesBehind reports whether s writes runs' records behind
// (store.DB.WriteBehind).
func writesBehind(s store.Store) bool {
	wb, ok := s.(interface{ WritesBehind() bool })
	return ok && wb.WritesBehind()
}

func must(t *testing.T, err error, doing string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", doing, err)
	}
}

// at is a time with nanoseconds and a zone, which the store must keep as UTC
// microseconds.
func at(minute int) time.Time {
	return time.Date(2025, 3, 4, 5, minute, 7, 123456789, time.FixedZone("UTC+2", 2*3600))
}

// stored is t as a store returns it.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func wantUTC(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for _, x := range ts {
		if x.Location() != time.UTC {
			t.Errorf("%s: time %v is in %v, want UTC", what, x, x.Location())
		}
		if x.IsZero() {
			t.Errorf("%s: time is zero", what)
		}
		if x.Nanosecond()%1000 != 0 {
			t.Errorf("%s: time %v has nanoseconds; the store keeps microseconds", what, x)
		}
	}
}

var basicTests = []test{
	{"EngineAndPing", func(t *testing.T, s store.Store) {
		if e := s.Engine(); e != "sqlite" && e != "postgres" {
			t.Errorf("Engine() = %q, want sqlite or postgres", e)
		}
		must(t, s.Ping(t.Context()), "Ping")
	}},
}

func newUser(email string) *auth.User {
	return &auth.User{
		ID: auth.NewUserID(), Email: email, DisplayName: strings.Split(email, "@")[0], Role: auth.RoleUser,
		CreatedAt: at(0), UpdatedAt: at(1),
	}
}

func createUser(t *testing.T, s store.Store, email string) *auth.User {
	t.Helper()
	u := newUser(email)
	must(t, s.CreateUser(t.Context(), u), "CreateUser "+email)
	return u
}

var userTests = []test{
	{"CreateAndGet", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := newUser("ada@example.com")
		u.Role = auth.RoleAdmin
		u.PasswordHash = "$2a$10$abcdefghijklmnopqrstuv"
		must(t, s.CreateUser(ctx, u), "CreateUser")
		if u.CreatedAt != stored(at(0)) || u.UpdatedAt != stored(at(1)) {
			t.Errorf("CreateUser left times %v, %v; want %v, %v", u.CreatedAt, u.UpdatedAt, stored(at(0)), stored(at(1)))
		}
		got, err := s.GetUser(ctx, u.ID)
		must(t, err, "GetUser")
		if d := cmp.Diff(u, got); d != "" {
			t.Errorf("GetUser differs from what was created (-want +got):\n%s", d)
		}
		wantUTC(t, "GetUser", got.CreatedAt, got.UpdatedAt)
		got, err = s.GetUserByEmail(ctx, u.Email)
		must(t, err, "GetUserByEmail")
		if d := cmp.Diff(u, got); d != "" {
			t.Errorf("GetUserByEmail differs from what was created (-want +got):\n%s", d)
		}
	}},
	{"NoPassword", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "nopw@example.com")
		got, err := s.GetUser(t.Context(), u.ID)
		must(t, err, "GetUser")
		if got.PasswordHash != "" {
			t.Errorf("PasswordHash = %q, want empty", got.PasswordHash)
		}
	}},
	{"DuplicateEmail", func(t *testing.T, s store.Store) {
		createUser(t, s, "dup@example.com")
		err := s.CreateUser(t.Context(), newUser("dup@example.com"))
		wantKind(t, err, fault.Conflict, "CreateUser with a taken email")
		if !strings.Contains(err.Error(), "dup@example.com") {
			t.Errorf("conflict %q does not name the email", err)
		}
	}},
	{"DuplicateID", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "one@example.com")
		again := newUser("two@example.com")
		again.ID = u.ID
		wantKind(t, s.CreateUser(t.Context(), again), fault.Conflict, "CreateUser with a taken id")
	}},
	{"NotFound", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u, err := s.GetUser(ctx, "user_missing")
		wantKind(t, err, fault.NotFound, "GetUser of a missing user")
		if u != nil {
			t.Errorf("GetUser returned %+v with its error", u)
		}
		_, err = s.GetUserByEmail(ctx, "nobody@example.com")
		wantKind(t, err, fault.NotFound, "GetUserByEmail of a missing email")
		wantKind(t, s.UpdateUser(ctx, newUser("nobody@example.com")), fault.NotFound, "UpdateUser of a missing user")
	}},
	{"Update", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "old@example.com")
		u.Email, u.DisplayName, u.Role, u.PasswordHash, u.UpdatedAt = "new@example.com", "New Name", auth.RoleAdmin, "hash", at(30)
		must(t, s.UpdateUser(ctx, u), "UpdateUser")
		got, err := s.GetUser(ctx, u.ID)
		must(t, err, "GetUser")
		if d := cmp.Diff(u, got); d != "" {
			t.Errorf("GetUser after UpdateUser (-want +got):\n%s", d)
		}
		if got.CreatedAt != stored(at(0)) {
			t.Errorf("UpdateUser changed CreatedAt to %v", got.CreatedAt)
		}
		_, err = s.GetUserByEmail(ctx, "old@example.com")
		wantKind(t, err, fault.NotFound, "GetUserByEmail of the old email")
		u.PasswordHash = ""
		must(t, s.UpdateUser(ctx, u), "UpdateUser clearing the password")
		got, err = s.GetUser(ctx, u.ID)
		must(t, err, "GetUser")
		if got.PasswordHash != "" {
			t.Errorf("PasswordHash = %q after clearing it", got.PasswordHash)
		}
	}},
	{"UpdateToTakenEmail", func(t *testing.T, s store.Store) {
		createUser(t, s, "taken@example.com")
		u := createUser(t, s, "other@example.com")
		u.Email = "taken@example.com"
		err := s.UpdateUser(t.Context(), u)
		wantKind(t, err, fault.Conflict, "UpdateUser to a taken email")
		if !strings.Contains(err.Error(), "taken@example.com") {
			t.Errorf("conflict %q does not name the email", err)
		}
	}},
	{"List", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		users, err := s.ListUsers(ctx)
		must(t, err, "ListUsers")
		if users == nil || len(users) != 0 {
			t.Fatalf("ListUsers of an empty store = %#v, want an empty list", users)
		}
		var want []*auth.User
		for i, email := range []string{"c@example.com", "a@example.com", "b@example.com"} {
			u := newUser(email)
			u.CreatedAt = at(i)
			must(t, s.CreateUser(ctx, u), "CreateUser")
			want = append(want, u)
		}
		users, err = s.ListUsers(ctx)
		must(t, err, "ListUsers")
		if d := cmp.Diff(want, users); d != "" {
			t.Errorf("ListUsers, want oldest first (-want +got):\n%s", d)
		}
	}},
}

func newKey(userID, secret string) *auth.Key {
	return &auth.Key{
		ID: auth.NewKeyID(), UserID: userID, Name: "laptop", Prefix: secret[:9],
		Hash: auth.HashSecret(secret), CreatedAt: at(2),
	}
}

func createKey(t *testing.T, s store.Store, userID string) *auth.Key {
	t.Helper()
	k := newKey(userID, auth.NewSecret())
	must(t, s.CreateKey(t.Context(), k), "CreateKey")
	return k
}

func getKey(t *testing.T, s store.Store, hash string) *auth.Key {
	t.Helper()
	k, err := s.GetKeyByHash(t.Context(), hash)
	must(t, err, "GetKeyByHash")
	return k
}

var keyTests = []test{
	{"CreateAndGetByHash", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "k@example.com")
		k := createKey(t, s, u.ID)
		if k.CreatedAt != stored(at(2)) {
			t.Errorf("CreateKey left CreatedAt %v, want %v", k.CreatedAt, stored(at(2)))
		}
		got := getKey(t, s, k.Hash)
		if d := cmp.Diff(k, got); d != "" {
			t.Errorf("GetKeyByHash (-want +got):\n%s", d)
		}
		wantUTC(t, "GetKeyByHash", got.CreatedAt)
		if got.LastUsedAt != nil || got.RevokedAt != nil {
			t.Errorf("new key has LastUsedAt %v, RevokedAt %v; want both nil", got.LastUsedAt, got.RevokedAt)
		}
	}},
	{"NotFound", func(t *testing.T, s store.Store) {
		k, err := s.GetKeyByHash(t.Context(), auth.HashSecret(auth.NewSecret()))
		wantKind(t, err, fault.NotFound, "GetKeyByHash of an unknown hash")
		if k != nil {
			t.Errorf("GetKeyByHash returned %+v with its error", k)
		}
	}},
	{"DuplicateHash", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "k@example.com")
		k := createKey(t, s, u.ID)
		again := newKey(u.ID, auth.NewSecret())
		again.Hash = k.Hash
		wantKind(t, s.CreateKey(t.Context(), again), fault.Conflict, "CreateKey with a taken hash")
	}},
	{"MissingUser", func(t *testing.T, s store.Store) {
		err := s.CreateKey(t.Context(), newKey("user_missing", auth.NewSecret()))
		wantKind(t, err, fault.NotFound, "CreateKey for a missing user")
		if !strings.Contains(err.Error(), "user_missing") {
			t.Errorf("error %q does not name the user", err)
		}
	}},
	{"Revoke", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "k@example.com")
		k := createKey(t, s, u.ID)
		must(t, s.RevokeKey(ctx, k.ID, at(10)), "RevokeKey")
		got := getKey(t, s, k.Hash)
		if got.RevokedAt == nil || *got.RevokedAt != stored(at(10)) {
			t.Fatalf("RevokedAt = %v, want %v", got.RevokedAt, stored(at(10)))
		}
		wantUTC(t, "RevokedAt", *got.RevokedAt)
		must(t, s.RevokeKey(ctx, k.ID, at(20)), "RevokeKey again")
		if got := getKey(t, s, k.Hash); *got.RevokedAt != stored(at(10)) {
			t.Errorf("revoking again moved RevokedAt to %v; want the first revocation kept", *got.RevokedAt)
		}
		wantKind(t, s.RevokeKey(ctx, "key_missing", at(10)), fault.NotFound, "RevokeKey of a missing key")
	}},
	{"Touch", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "k@example.com")
		k := createKey(t, s, u.ID)
		must(t, s.TouchKey(ctx, k.ID, at(10)), "TouchKey")
		got := getKey(t, s, k.Hash)
		if got.LastUsedAt == nil || *got.LastUsedAt != stored(at(10)) {
			t.Fatalf("LastUsedAt = %v, want %v", got.LastUsedAt, stored(at(10)))
		}
		wantUTC(t, "LastUsedAt", *got.LastUsedAt)
		must(t, s.TouchKey(ctx, k.ID, at(5)), "TouchKey with an older time")
		if got := getKey(t, s, k.Hash); *got.LastUsedAt != stored(at(10)) {
			t.Errorf("an older touch moved LastUsedAt back to %v", *got.LastUsedAt)
		}
		must(t, s.TouchKey(ctx, k.ID, at(15)), "TouchKey later")
		if got := getKey(t, s, k.Hash); *got.LastUsedAt != stored(at(15)) {
			t.Errorf("LastUsedAt = %v, want %v", *got.LastUsedAt, stored(at(15)))
		}
		if got.RevokedAt != nil {
			t.Errorf("TouchKey revoked the key")
		}
		wantKind(t, s.TouchKey(ctx, "key_missing", at(10)), fault.NotFound, "TouchKey of a missing key")
	}},
	{"List", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		var want []*auth.Key
		for i := range 3 {
			k := newKey(alice.ID, auth.NewSecret())
			k.CreatedAt = at(10 - i) // created out of order; listed oldest first
			must(t, s.CreateKey(ctx, k), "CreateKey")
			want = append([]*auth.Key{k}, want...)
		}
		createKey(t, s, bob.ID)
		keys, err := s.ListKeys(ctx, alice.ID)
		must(t, err, "ListKeys")
		if d := cmp.Diff(want, keys); d != "" {
			t.Errorf("ListKeys (-want +got):\n%s", d)
		}
		keys, err = s.ListKeys(ctx, "user_missing")
		must(t, err, "ListKeys of an unknown user")
		if keys == nil || len(keys) != 0 {
			t.Errorf("ListKeys of an unknown user = %#v, want an empty list", keys)
		}
	}},
}

// fullSpec sets every field of agent.Spec, so that a round trip covers them all.
func fullSpec() agent.Spec {
	return agent.Spec{
		Name:         "Researcher",
		Description:  "Finds things out",
		Instructions: "Be thorough.\nCite sources: «quotes», emoji 🚀, and \"escapes\".",
		Provider:     "openai",
		Model:        "gpt-4o",
		ModelParameters: map[string]any{
			"temperature": 0.2,
			"max_tokens":  float64(4096),
			"stop":        []any{"\n\n", "END"},
			"nested":      map[string]any{"a": []any{1.5, true, nil, "x"}, "b": map[string]any{"c": "d"}},
		},
		Tools:         []string{"file_search", "web_search", "mcp__github__search"},
		Artifacts:     agent.ArtifactsShadcnUI,
		ToolResources: &agent.ToolResources{FileSearch: &agent.FileSearchResources{FileIDs: []string{"file_1", "file_2"}}},
		Edges: []agent.Edge{
			{
				From: agent.One("agent_a"), To: agent.IDs{List: []string{"agent_b", "agent_c"}},
				EdgeType: agent.EdgeHandoff, Prompt: "Pass on: {{input}}", ExcludeResults: true,
				PromptKey: "instructions", Description: "hand off research",
			},
			{From: agent.IDs{List: []string{"agent_b", "agent_c"}}, To: agent.One("agent_d"), EdgeType: agent.EdgeDirect},
			{From: agent.IDs{List: []string{"agent_x"}}, To: agent.IDs{List: []string{"agent_y"}}},
		},
		AgentIDs:              []string{"agent_b", "agent_c"},
		ChainType:             agent.ChainOutputPassthrough,
		HideSequentialOutputs: true,
		RecursionLimit:        25,
		ConversationStarters:  []string{"What is new?", "Summarise this"},
		Shared:                true,
	}
}

func spec(name string) agent.Spec {
	return agent.Spec{Name: name, Provider: "openai", Model: "gpt-4o-mini"}
}

func createAgent(t *testing.T, s store.Store, author string, shared bool) *agent.Agent {
	t.Helper()
	a := &agent.Agent{ID: agent.NewID(), Spec: spec("a"), Author: author}
	a.Shared = shared
	must(t, s.CreateAgent(t.Context(), a), "CreateAgent")
	return a
}

func getAgent(t *testing.T, s store.Store, id string) *agent.Agent {
	t.Helper()
	a, err := s.GetAgent(t.Context(), id)
	must(t, err, "GetAgent "+id)
	return a
}

func versions(t *testing.T, s store.Store, id string) []agent.Version {
	t.Helper()
	vs, err := s.AgentVersions(t.Context(), id)
	must(t, err, "AgentVersions "+id)
	return vs
}

// nonZeroFields fails t for each field of struct v that is zero, but those
// named in except.
func nonZeroFields(t *testing.T, what string, v any, except ...string) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() && !slices.Contains(except, rv.Type().Field(i).Name) {
			t.Errorf("%s leaves %s zero; set it so the round trip covers it", what, rv.Type().Field(i).Name)
		}
	}
}

var agentTests = []test{
	{"RoundTrip", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		sp := fullSpec()
		nonZeroFields(t, "fullSpec", sp)
		nonZeroFields(t, "fullSpec's first edge", sp.Edges[0])
		u := createUser(t, s, "author@example.com")
		a := &agent.Agent{ID: agent.NewID(), Spec: sp, Author: u.ID}
		before := time.Now()
		must(t, s.CreateAgent(ctx, a), "CreateAgent")
		if a.Version != 1 {
			t.Errorf("CreateAgent set Version %d, want 1", a.Version)
		}
		wantUTC(t, "CreateAgent", a.CreatedAt, a.UpdatedAt)
		if !a.CreatedAt.Equal(a.UpdatedAt) || a.CreatedAt.Before(before.Add(-time.Second)) {
			t.Errorf("CreateAgent set CreatedAt %v, UpdatedAt %v; want both now", a.CreatedAt, a.UpdatedAt)
		}
		got := getAgent(t, s, a.ID)
		if d := cmp.Diff(a, got, equal); d != "" {
			t.Errorf("GetAgent differs from what was created (-want +got):\n%s", d)
		}
		if !got.Edges[0].From.Single || got.Edges[0].To.Single || !got.Edges[1].To.Single || got.Edges[2].From.Single {
			t.Errorf("edges lost whether ids were one string or a list: %+v", got.Edges)
		}
		vs := versions(t, s, a.ID)
		want := []agent.Version{{AgentID: a.ID, Version: 1, Spec: sp, CreatedAt: a.CreatedAt}}
		if d := cmp.Diff(want, vs, equal); d != "" {
			t.Errorf("AgentVersions after CreateAgent (-want +got):\n%s", d)
		}
	}},
	{"ConfigAgent", func(t *testing.T, s store.Store) {
		a := &agent.Agent{ID: agent.NewID(), Spec: spec("config"), Managed: true}
		must(t, s.CreateAgent(t.Context(), a), "CreateAgent")
		got := getAgent(t, s, a.ID)
		if got.Author != "" || !got.Managed || got.Shared {
			t.Errorf("got Author %q, Managed %v, Shared %v; want \"\", true, false", got.Author, got.Managed, got.Shared)
		}
	}},
	{"UnknownAuthor", func(t *testing.T, s store.Store) {
		a := &agent.Agent{ID: agent.NewID(), Spec: spec("x"), Author: "user_missing"}
		wantKind(t, s.CreateAgent(t.Context(), a), fault.NotFound, "CreateAgent by a missing user")
	}},
	{"DuplicateID", func(t *testing.T, s store.Store) {
		a := createAgent(t, s, "", false)
		err := s.CreateAgent(t.Context(), &agent.Agent{ID: a.ID, Spec: spec("again")})
		wantKind(t, err, fault.Conflict, "CreateAgent with a taken id")
		if !strings.Contains(err.Error(), a.ID) {
			t.Errorf("conflict %q does not name the agent", err)
		}
		if got := getAgent(t, s, a.ID); got.Name != "a" || got.Version != 1 {
			t.Errorf("failed create changed the agent: %+v", got)
		}
	}},
	{"MissingID", func(t *testing.T, s store.Store) {
		wantKind(t, s.CreateAgent(t.Context(), &agent.Agent{Spec: spec("x")}), fault.Invalid, "CreateAgent without id")
	}},
	{"NotFound", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a, err := s.GetAgent(ctx, "agent_missing")
		wantKind(t, err, fault.NotFound, "GetAgent of a missing agent")
		if a != nil {
			t.Errorf("GetAgent returned %+v with its error", a)
		}
		if !strings.Contains(err.Error(), `"agent_missing"`) {
			t.Errorf("error %q does not name the agent", err)
		}
		vs, err := s.AgentVersions(ctx, "agent_missing")
		wantKind(t, err, fault.NotFound, "AgentVersions of a missing agent")
		if vs != nil {
			t.Errorf("AgentVersions returned %v with its error", vs)
		}
		wantKind(t, s.UpdateAgent(ctx, &agent.Agent{ID: "agent_missing", Version: 1, Spec: spec("x")}), fault.NotFound, "UpdateAgent of a missing agent")
		wantKind(t, s.DeleteAgent(ctx, "agent_missing"), fault.NotFound, "DeleteAgent of a missing agent")
	}},
	{"UpdateKeepsVersions", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createAgent(t, s, "", false)
		created := a.CreatedAt
		specs := []agent.Spec{a.Spec}
		for i, name := range []string{"second", "third"} {
			a.Spec = fullSpec()
			a.Name = name
			a.Shared = i == 0
			prev := a.UpdatedAt
			must(t, s.UpdateAgent(ctx, a), "UpdateAgent")
			specs = append(specs, a.Spec)
			if a.Version != i+2 {
				t.Errorf("after update %d Version = %d, want %d", i+1, a.Version, i+2)
			}
			if a.UpdatedAt.Before(prev) {
				t.Errorf("UpdatedAt went back from %v to %v", prev, a.UpdatedAt)
			}
			wantUTC(t, "UpdateAgent", a.UpdatedAt)
		}
		got := getAgent(t, s, a.ID)
		if d := cmp.Diff(a, got, equal); d != "" {
			t.Errorf("GetAgent after updates (-want +got):\n%s", d)
		}
		if got.CreatedAt != created {
			t.Errorf("UpdateAgent changed CreatedAt from %v to %v", created, got.CreatedAt)
		}
		vs := versions(t, s, a.ID)
		if len(vs) != 3 {
			t.Fatalf("AgentVersions returned %d versions, want 3", len(vs))
		}
		for i, v := range vs {
			if v.AgentID != a.ID || v.Version != i+1 {
				t.Errorf("version %d is %s v%d", i+1, v.AgentID, v.Version)
			}
			if d := cmp.Diff(specs[i], v.Spec, equal); d != "" {
				t.Errorf("spec of version %d (-want +got):\n%s", i+1, d)
			}
			wantUTC(t, "version", v.CreatedAt)
		}
		if vs[0].CreatedAt != created || vs[2].CreatedAt != a.UpdatedAt {
			t.Errorf("version times %v, %v; want creation %v and last update %v", vs[0].CreatedAt, vs[2].CreatedAt, created, a.UpdatedAt)
		}
	}},
	{"UpdateKeepsAuthorAndManaged", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "author@example.com")
		a := createAgent(t, s, u.ID, false)
		edit := *a
		edit.Author, edit.Managed = "", true
		must(t, s.UpdateAgent(t.Context(), &edit), "UpdateAgent")
		if got := getAgent(t, s, a.ID); got.Author != u.ID || got.Managed {
			t.Errorf("UpdateAgent changed Author to %q and Managed to %v", got.Author, got.Managed)
		}
	}},
	{"StaleUpdate", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createAgent(t, s, "", false)
		first, second := *a, *a
		first.Name = "first"
		must(t, s.UpdateAgent(ctx, &first), "UpdateAgent")
		second.Name = "second"
		err := s.UpdateAgent(ctx, &second)
		wantKind(t, err, fault.Conflict, "UpdateAgent from a stale version")
		if second.Version != 1 {
			t.Errorf("a failed update changed Version to %d", second.Version)
		}
		got := getAgent(t, s, a.ID)
		if got.Name != "first" || got.Version != 2 {
			t.Errorf("after a stale update the agent is %q v%d, want \"first\" v2", got.Name, got.Version)
		}
		if n := len(versions(t, s, a.ID)); n != 2 {
			t.Errorf("a stale update left %d versions, want 2", n)
		}
	}},
	{"Delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createAgent(t, s, "", false)
		keep := createAgent(t, s, "", false)
		a.Name = "v2"
		must(t, s.UpdateAgent(ctx, a), "UpdateAgent")
		must(t, s.DeleteAgent(ctx, a.ID), "DeleteAgent")
		_, err := s.GetAgent(ctx, a.ID)
		wantKind(t, err, fault.NotFound, "GetAgent after DeleteAgent")
		_, err = s.AgentVersions(ctx, a.ID)
		wantKind(t, err, fault.NotFound, "AgentVersions after DeleteAgent")
		wantKind(t, s.DeleteAgent(ctx, a.ID), fault.NotFound, "DeleteAgent twice")
		getAgent(t, s, keep.ID)
		if n := len(versions(t, s, keep.ID)); n != 1 {
			t.Errorf("deleting another agent left %d versions of this one, want 1", n)
		}
		// A new agent under the old id starts again at version 1.
		again := &agent.Agent{ID: a.ID, Spec: spec("again")}
		must(t, s.CreateAgent(ctx, again), "CreateAgent with a deleted agent's id")
		if vs := versions(t, s, a.ID); len(vs) != 1 || vs[0].Spec.Name != "again" {
			t.Errorf("versions of the new agent: %+v", vs)
		}
	}},
}

// listAll pages through every agent visible to user with page size limit.
func listAll(t *testing.T, s store.Store, user string, limit int) []*agent.Agent {
	t.Helper()
	var all []*agent.Agent
	cursor := ""
	for page := 0; ; page++ {
		p, err := s.ListAgents(t.Context(), agent.ListOptions{VisibleTo: user, Limit: limit, Cursor: cursor})
		must(t, err, fmt.Sprintf("ListAgents page %d", page))
		if len(p.Agents) > limit {
			t.Fatalf("page %d has %d agents, limit %d", page, len(p.Agents), limit)
		}
		if p.NextCursor != "" && len(p.Agents) < limit {
			t.Fatalf("page %d has %d agents but a next cursor", page, len(p.Agents))
		}
		all = append(all, p.Agents...)
		if p.NextCursor == "" {
			return all
		}
		if page > 1000 {
			t.Fatal("ListAgents never ended")
		}
		cursor = p.NextCursor
	}
}

func ids(as []*agent.Agent) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// listOrder sorts agents as ListAgents does: by creation time, then id.
func listOrder(as []*agent.Agent) {
	slices.SortFunc(as, func(a, b *agent.Agent) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

var listTests = []test{
	{"Empty", func(t *testing.T, s store.Store) {
		p, err := s.ListAgents(t.Context(), agent.ListOptions{})
		must(t, err, "ListAgents")
		if p == nil || p.Agents == nil || len(p.Agents) != 0 || p.NextCursor != "" {
			t.Errorf("ListAgents of an empty store = %#v, want an empty page", p)
		}
	}},
	{"Visibility", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		alicePrivate := createAgent(t, s, alice.ID, false)
		aliceShared := createAgent(t, s, alice.ID, true)
		bobPrivate := createAgent(t, s, bob.ID, false)
		bobShared := createAgent(t, s, bob.ID, true)
		configShared := &agent.Agent{ID: agent.NewID(), Spec: spec("cs"), Managed: true}
		configShared.Shared = true
		must(t, s.CreateAgent(ctx, configShared), "CreateAgent")
		configPrivate := &agent.Agent{ID: agent.NewID(), Spec: spec("cp"), Managed: true}
		must(t, s.CreateAgent(ctx, configPrivate), "CreateAgent")

		all := []*agent.Agent{alicePrivate, aliceShared, bobPrivate, bobShared, configShared, configPrivate}
		listOrder(all)
		for _, tc := range []struct {
			user string
			want []*agent.Agent
		}{
			{"", all},
			{alice.ID, []*agent.Agent{alicePrivate, aliceShared, bobShared, configShared}},
			{bob.ID, []*agent.Agent{aliceShared, bobPrivate, bobShared, configShared}},
			{"user_stranger", []*agent.Agent{aliceShared, bobShared, configShared}},
		} {
			listOrder(tc.want)
			got := listAll(t, s, tc.user, 2)
			if d := cmp.Diff(tc.want, got, equal); d != "" {
				t.Errorf("agents visible to %q (-want +got):\n%s", tc.user, d)
			}
		}
		// Changing Shared through an update changes who sees the agent.
		bobShared.Shared = false
		must(t, s.UpdateAgent(ctx, bobShared), "UpdateAgent")
		if got := ids(listAll(t, s, alice.ID, 100)); slices.Contains(got, bobShared.ID) {
			t.Errorf("alice still sees bob's agent after bob unshared it")
		}
	}},
	{"Pagination", func(t *testing.T, s store.Store) {
		var want []*agent.Agent
		for range 250 {
			want = append(want, createAgent(t, s, "", false))
		}
		listOrder(want)
		var pages [][]*agent.Agent
		cursor := ""
		for {
			p, err := s.ListAgents(t.Context(), agent.ListOptions{Limit: 100, Cursor: cursor})
			must(t, err, "ListAgents")
			pages = append(pages, p.Agents)
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		var sizes []int
		var got []*agent.Agent
		for _, p := range pages {
			sizes = append(sizes, len(p))
			got = append(got, p...)
		}
		if d := cmp.Diff([]int{100, 100, 50}, sizes); d != "" {
			t.Errorf("page sizes (-want +got):\n%s", d)
		}
		if d := cmp.Diff(ids(want), ids(got)); d != "" {
			t.Errorf("agents over all pages, want each once, oldest first (-want +got):\n%s", d)
		}
		if d := cmp.Diff(want, got, equal); d != "" {
			t.Errorf("listed agents differ from created ones (-want +got):\n%s", d)
		}
	}},
	{"PaginationWithTies", func(t *testing.T, s store.Store) {
		// One sync creates every agent with the same time: the id alone orders them.
		var as []*agent.Agent
		for i := range 30 {
			as = append(as, &agent.Agent{ID: fmt.Sprintf("tie-%02d-%s", (i*7)%30, agent.NewID()), Spec: spec("t")})
		}
		_, err := s.SyncManagedAgents(t.Context(), as)
		must(t, err, "SyncManagedAgents")
		listOrder(as)
		for _, limit := range []int{1, 7, 30} {
			if d := cmp.Diff(ids(as), ids(listAll(t, s, "", limit))); d != "" {
				t.Errorf("pages of %d (-want +got):\n%s", limit, d)
			}
		}
	}},
	{"DefaultAndMaxLimit", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		var as []*agent.Agent
		for i := range store.MaxListLimit + 1 {
			as = append(as, &agent.Agent{ID: fmt.Sprintf("agent_%04d", i), Spec: spec("n")})
		}
		_, err := s.SyncManagedAgents(ctx, as)
		must(t, err, "SyncManagedAgents")
		for _, tc := range []struct{ limit, want int }{{0, 100}, {-5, 100}, {1, 1}, {5000, 1000}} {
			p, err := s.ListAgents(ctx, agent.ListOptions{Limit: tc.limit})
			must(t, err, "ListAgents")
			if len(p.Agents) != tc.want || p.NextCursor == "" {
				t.Errorf("Limit %d: got %d agents (next cursor %q), want %d and a next cursor", tc.limit, len(p.Agents), p.NextCursor, tc.want)
			}
		}
	}},
	{"BadCursor", func(t *testing.T, s store.Store) {
		createAgent(t, s, "", false)
		b64 := base64.RawURLEncoding.EncodeToString
		for _, c := range []string{
			"not a cursor!",
			b64([]byte("garbage")),
			b64([]byte("2025-01-02T03:04:05.000000Z")), // a time without an id
			b64([]byte("2025-01-02T03:04:05.000000Z ")),
			b64([]byte("yesterday agent_x")),
		} {
			p, err := s.ListAgents(t.Context(), agent.ListOptions{Cursor: c})
			wantKind(t, err, fault.Invalid, fmt.Sprintf("ListAgents with cursor %q", c))
			if p != nil {
				t.Errorf("ListAgents returned a page with its error")
			}
		}
	}},
}

func managed(id, name string) *agent.Agent {
	return &agent.Agent{ID: id, Spec: spec(name)}
}

var syncTests = []test{
	{"Lifecycle", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		doSync := func(want agent.SyncResult, as ...*agent.Agent) {
			t.Helper()
			got, err := s.SyncManagedAgents(ctx, as)
			must(t, err, "SyncManagedAgents")
			if got != want {
				t.Errorf("SyncManagedAgents = %+v, want %+v", got, want)
			}
		}
		a, b := managed("cfg-a", "a"), managed("cfg-b", "b")
		doSync(agent.SyncResult{Created: 2}, a, b)
		if a.Version != 1 || !a.Managed || a.CreatedAt.IsZero() {
			t.Errorf("sync did not fill in the created agent: %+v", a)
		}
		for _, id := range []string{"cfg-a", "cfg-b"} {
			got := getAgent(t, s, id)
			if !got.Managed || got.Author != "" || got.Version != 1 {
				t.Errorf("%s after creating sync: Managed %v, Author %q, Version %d", id, got.Managed, got.Author, got.Version)
			}
		}

		b2, c := managed("cfg-b", "b changed"), managed("cfg-c", "c")
		doSync(agent.SyncResult{Created: 1, Updated: 1, Unchanged: 1}, managed("cfg-a", "a"), b2, c)
		if got := getAgent(t, s, "cfg-b"); got.Name != "b changed" || got.Version != 2 || b2.Version != 2 {
			t.Errorf("cfg-b after update: %q v%d (given agent v%d), want \"b changed\" v2", got.Name, got.Version, b2.Version)
		}
		if vs := versions(t, s, "cfg-b"); len(vs) != 2 || vs[0].Spec.Name != "b" {
			t.Errorf("cfg-b versions: %+v", vs)
		}
		if got := getAgent(t, s, "cfg-a"); got.Version != 1 {
			t.Errorf("unchanged cfg-a moved to version %d", got.Version)
		}

		doSync(agent.SyncResult{Unchanged: 1, Released: 2}, managed("cfg-a", "a"))
		for _, id := range []string{"cfg-b", "cfg-c"} {
			got := getAgent(t, s, id)
			if got.Managed {
				t.Errorf("%s is still managed after leaving the config", id)
			}
		}
		if got := getAgent(t, s, "cfg-b"); got.Name != "b changed" || got.Version != 2 {
			t.Errorf("releasing changed cfg-b: %q v%d", got.Name, got.Version)
		}

		// A released agent that comes back is managed again.
		doSync(agent.SyncResult{Updated: 1, Released: 1}, managed("cfg-b", "b changed"))
		if got := getAgent(t, s, "cfg-b"); !got.Managed || got.Version != 2 {
			t.Errorf("cfg-b back in the config: Managed %v, Version %d; want true, 2", got.Managed, got.Version)
		}

		doSync(agent.SyncResult{Released: 1})
		p, err := s.ListAgents(ctx, agent.ListOptions{})
		must(t, err, "ListAgents")
		for _, a := range p.Agents {
			if a.Managed {
				t.Errorf("%s is managed after syncing an empty config", a.ID)
			}
		}
		if len(p.Agents) != 3 {
			t.Errorf("%d agents after syncing an empty config, want all 3 kept", len(p.Agents))
		}
	}},
	{"CanonicalCompare", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		// As read from YAML: ints, and empty lists.
		first := managed("cfg", "n")
		first.ModelParameters = map[string]any{"max_tokens": 100, "temperature": 1, "stop": []any{"x"}}
		first.Tools = []string{}
		_, err := s.SyncManagedAgents(ctx, []*agent.Agent{first})
		must(t, err, "SyncManagedAgents")
		// The same, as read back from JSON.
		same := managed("cfg", "n")
		same.ModelParameters = map[string]any{"temperature": 1.0, "stop": []any{"x"}, "max_tokens": 100.0}
		res, err := s.SyncManagedAgents(ctx, []*agent.Agent{same})
		must(t, err, "SyncManagedAgents")
		if res != (agent.SyncResult{Unchanged: 1}) {
			t.Errorf("syncing an equal spec = %+v, want Unchanged 1", res)
		}
		changed := managed("cfg", "n")
		changed.ModelParameters = map[string]any{"temperature": 1.5, "stop": []any{"x"}, "max_tokens": 100}
		res, err = s.SyncManagedAgents(ctx, []*agent.Agent{changed})
		must(t, err, "SyncManagedAgents")
		if res != (agent.SyncResult{Updated: 1}) {
			t.Errorf("syncing a changed parameter = %+v, want Updated 1", res)
		}
	}},
	{"FullSpec", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := &agent.Agent{ID: "cfg-full", Spec: fullSpec()}
		_, err := s.SyncManagedAgents(ctx, []*agent.Agent{a})
		must(t, err, "SyncManagedAgents")
		if d := cmp.Diff(a, getAgent(t, s, a.ID), equal); d != "" {
			t.Errorf("GetAgent after sync (-want +got):\n%s", d)
		}
		res, err := s.SyncManagedAgents(ctx, []*agent.Agent{{ID: "cfg-full", Spec: fullSpec()}})
		must(t, err, "SyncManagedAgents")
		if res != (agent.SyncResult{Unchanged: 1}) {
			t.Errorf("syncing the same full spec = %+v, want Unchanged 1", res)
		}
	}},
	{"ConflictWithAPIAgent", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "api@example.com")
		api := &agent.Agent{ID: "taken", Spec: spec("api"), Author: u.ID}
		must(t, s.CreateAgent(ctx, api), "CreateAgent")
		_, err := s.SyncManagedAgents(ctx, []*agent.Agent{managed("cfg-new", "n")})
		must(t, err, "SyncManagedAgents")

		_, err = s.SyncManagedAgents(ctx, []*agent.Agent{managed("cfg-other", "o"), managed("taken", "config")})
		wantKind(t, err, fault.Conflict, "SyncManagedAgents over an API agent")
		if !strings.Contains(err.Error(), `"taken"`) {
			t.Errorf("conflict %q does not name the agent", err)
		}
		// The failed sync changed nothing.
		_, err = s.GetAgent(ctx, "cfg-other")
		wantKind(t, err, fault.NotFound, "GetAgent of an agent from a failed sync")
		if got := getAgent(t, s, "cfg-new"); !got.Managed {
			t.Errorf("a failed sync released cfg-new")
		}
		if got := getAgent(t, s, "taken"); got.Managed || got.Author != u.ID || got.Name != "api" || got.Version != 1 {
			t.Errorf("a failed sync changed the API agent: %+v", got)
		}
	}},
	{"InvalidList", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		_, err := s.SyncManagedAgents(ctx, []*agent.Agent{managed("twice", "1"), managed("twice", "2")})
		wantKind(t, err, fault.Invalid, "SyncManagedAgents with an id twice")
		_, err = s.SyncManagedAgents(ctx, []*agent.Agent{{Spec: spec("x")}})
		wantKind(t, err, fault.Invalid, "SyncManagedAgents without an id")
	}},
}

var concurrencyTests = []test{
	{"Writers", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		const writers, each = 8, 50
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			errs  []error
			start = make(chan struct{})
		)
		for w := range writers {
			wg.Go(func() {
				<-start
				for i := range each {
					a := &agent.Agent{ID: fmt.Sprintf("w%d-%03d", w, i), Spec: spec("new")}
					err := s.CreateAgent(ctx, a)
					if err == nil {
						a.Description = "updated by " + a.ID
						err = s.UpdateAgent(ctx, a)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("writer %d, agent %d: %w", w, i, err))
						mu.Unlock()
					}
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs[:min(len(errs), 10)] {
			t.Error(err)
		}
		if len(errs) > 0 {
			t.Fatalf("%d of %d writes failed", len(errs), 2*writers*each)
		}
		all := listAll(t, s, "", store.MaxListLimit)
		if len(all) != writers*each {
			t.Fatalf("%d agents stored, want %d", len(all), writers*each)
		}
		for _, a := range all {
			if a.Version != 2 || a.Description != "updated by "+a.ID {
				t.Errorf("%s: version %d, description %q; an update was lost", a.ID, a.Version, a.Description)
			}
			if n := len(versions(t, s, a.ID)); n != 2 {
				t.Errorf("%s has %d versions, want 2", a.ID, n)
			}
		}
	}},
	{"CompareAndSet", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createAgent(t, s, "", false)
		const n = 8
		results := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			edit := *a
			edit.Name = fmt.Sprintf("edit %d", i)
			wg.Go(func() {
				<-start
				results[i] = s.UpdateAgent(ctx, &edit)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case !fault.Is(err, fault.Conflict):
				t.Errorf("update %d: %v, want success or a conflict", i, err)
			}
		}
		if won != 1 {
			t.Errorf("%d concurrent updates from version 1 succeeded, want exactly 1", won)
		}
		if got := getAgent(t, s, a.ID); got.Version != 2 {
			t.Errorf("version %d after the race, want 2", got.Version)
		}
		if vs := versions(t, s, a.ID); len(vs) != 2 {
			t.Errorf("%d versions after the race, want 2", len(vs))
		}
	}},
	{"ReadsDuringWrites", func(t *testing.T, s store.Store) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		u := createUser(t, s, "reader@example.com")
		var wg sync.WaitGroup
		var readErr error
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := s.ListAgents(ctx, agent.ListOptions{VisibleTo: u.ID}); err != nil && ctx.Err() == nil {
					readErr = err
					return
				}
			}
		})
		for range 100 {
			createAgent(t, s, u.ID, false)
		}
		cancel()
		wg.Wait()
		if readErr != nil && !errors.Is(readErr, context.Canceled) {
			t.Errorf("reading while writing: %v", readErr)
		}
	}},
}

// atOnce makes n calls of do at once, each with its number, and returns how
// many succeeded and the errors that refused does not take for an expected
// refusal.
func atOnce(n int, do func(i int) error, refused func(error) bool) (ok int, unexpected []error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			err := do(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case !refused(err):
				unexpected = append(unexpected, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return ok, unexpected
}
