package postgres_test

import (
	"testing"

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
	storetest.ClaimRace(t, stores, storetest.DueSchedule(t, stores[0]), 8, 10)
}

// TestRunNowAcrossProcesses runs one schedule now, and claims its due firing,
// through several stores opened on one schema at once, as replicas would: one
// firing is queued.
func TestRunNowAcrossProcesses(t *testing.T) {
	url := freshSchema(t)
	stores := make([]store.Store, 4)
	for i := range stores {
		stores[i] = open(t, url)
	}
	storetest.RunNowRace(t, stores, storetest.DueSchedule(t, stores[0]), 4)
}
