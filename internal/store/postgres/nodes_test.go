package postgres_test

import (
	"testing"

	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/storetest"
)

// TestReapAcrossProcesses reaps dead nodes through several stores opened on
// one schema, each with its own pool, as separate Relay processes would.
func TestReapAcrossProcesses(t *testing.T) {
	url := freshSchema(t)
	stores := make([]store.Store, 4)
	for i := range stores {
		stores[i] = open(t, url)
	}
	storetest.ReapRace(t, stores, 4, 10)
}

// TestReapWhileWriting races a node's writes against its reap by another
// process, each with its own pool on one schema.
func TestReapWhileWriting(t *testing.T) {
	url := freshSchema(t)
	storetest.ReapWhileWriting(t, []store.Store{open(t, url), open(t, url)}, 40)
}
