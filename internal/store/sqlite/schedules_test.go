package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/storetest"
)

// TestClaimAcrossProcesses claims firings through several stores opened on one
// file, each with its own connections, as separate Relay processes would.
func TestClaimAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	stores := make([]store.Store, 4)
	for i := range stores {
		stores[i] = open(t, path)
	}
	storetest.ClaimRace(t, stores, storetest.DueSchedule(t, stores[0]), 8, 10)
}

// TestRunNowAcrossProcesses runs one schedule now, and claims its due firing,
// through several stores opened on one file at once: one firing is queued.
func TestRunNowAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	stores := make([]store.Store, 4)
	for i := range stores {
		stores[i] = open(t, path)
	}
	storetest.RunNowRace(t, stores, storetest.DueSchedule(t, stores[0]), 4)
}
