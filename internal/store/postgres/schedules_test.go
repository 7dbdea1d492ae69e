package postgres_test

import (
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/storetest"
)

// TestClaimAcrossProcesses claims firings through several stores opened on one
// schema, each with its own pool, as separate Relay processes would.
func TestClaimAcrossProcesses(t *testing.T) {
	url := freshSchema(t)
	stores := make([]store.Store, 4)
	for i := range stores {
		stores[i] = open(t, url)
	}
	ctx := t.Context()
	u := &auth.User{ID: auth.NewUserID(), Email: "procs@example.com", DisplayName: "Procs", Role: auth.RoleUser}
	if err := stores[0].CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	next := time.Date(2025, 3, 4, 5, 0, 0, 0, time.UTC)
	sc := &schedule.Schedule{ID: "sched_procs", UserID: u.ID, AgentID: "a", Name: "n", Prompt: "p",
		Type: schedule.Recurring, Cron: "* * * * *", Timezone: "UTC", Enabled: true, NextRunAt: &next}
	if err := stores[0].CreateSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	storetest.ClaimRace(t, stores, sc.ID, 8, 10)
}
