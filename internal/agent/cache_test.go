package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// Runs load agents through a cache: a change made through the same Service
// is seen at once, one made by another process (here: straight in the store)
// within agent.CacheTTL; what a caller does to the agent it got stays its own;
// who may use the agent is decided on every load.
func TestCachedAgents(t *testing.T) {
	ctx := context.Background()
	st, ann, bob := storeWithUsers(t)
	svc := agent.NewService(st, agent.Rules{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	agent.SetClock(svc, func() time.Time { return now })
	spec := agent.Spec{Name: "Helper", Provider: "openAI", Model: "gpt-4o", Instructions: "one",
		ModelParameters: map[string]any{"stop": []any{"x"}}, Tools: []string{"web_search"}}
	if _, err := svc.Create(ctx, ann, "helper", spec); err != nil {
		t.Fatal(err)
	}
	cached := svc.Cached()
	instructions := func(u *auth.User) string {
		t.Helper()
		a, err := cached.Get(ctx, u, "helper")
		if err != nil {
			t.Fatalf("Get as %s: %v", u.Email, err)
		}
		return a.Instructions
	}
	if got := instructions(ann); got != "one" {
		t.Fatalf("instructions %q", got)
	}

	// Changed by another process: seen once CacheTTL has passed.
	a, err := st.GetAgent(ctx, "helper")
	if err != nil {
		t.Fatal(err)
	}
	a.Instructions = "two"
	if err := st.UpdateAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	now = now.Add(agent.CacheTTL - time.Millisecond)
	if got := instructions(ann); got != "one" {
		t.Errorf("within the TTL: instructions %q, want the cached %q", got, "one")
	}
	now = now.Add(time.Millisecond)
	if got := instructions(ann); got != "two" {
		t.Errorf("after the TTL: instructions %q, want %q", got, "two")
	}

	// Changed through the Service: seen at once.
	if _, err := svc.Patch(ctx, ann, "helper", map[string]json.RawMessage{"instructions": json.RawMessage(`"three"`)}); err != nil {
		t.Fatal(err)
	}
	if got := instructions(ann); got != "three" {
		t.Errorf("after Patch: instructions %q", got)
	}

	// A caller's changes to its copy are its own.
	mine, err := cached.Get(ctx, ann, "helper")
	if err != nil {
		t.Fatal(err)
	}
	mine.Instructions = "mine"
	mine.Tools[0] = "mine"
	mine.ModelParameters["stop"].([]any)[0] = "mine"
	again, err := cached.Get(ctx, ann, "helper")
	if err != nil {
		t.Fatal(err)
	}
	if again.Instructions != "three" || again.Tools[0] != "web_search" || again.ModelParameters["stop"].([]any)[0] != "x" {
		t.Errorf("another caller's changes show: %+v", again.Spec)
	}

	// Who may use it is decided on every load, cached or not.
	if _, err := cached.Get(ctx, bob, "helper"); !fault.Is(err, fault.NotFound) {
		t.Errorf("Bob, not shared with: %v", err)
	}
	if a, err := cached.Get(ctx, ann, "helper"); err != nil || a.Permission != agent.RoleOwner {
		t.Errorf("Ann: %v %v", a, err)
	}

	// Deleted through the Service: gone at once.
	if err := svc.Delete(ctx, ann, "helper"); err != nil {
		t.Fatal(err)
	}
	if _, err := cached.Get(ctx, ann, "helper"); !fault.Is(err, fault.NotFound) {
		t.Errorf("after Delete: %v", err)
	}
}
