package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/storetest"
)

// TestReapAcrossProcesses reaps dead nodes through several stores opened on
// one file, as separate Relay processes would.
func TestReapAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	stores := make([]store.Store, 4)
	for i := range stores {
		stores[i] = open(t, path)
	}
	storetest.ReapRace(t, stores, 4, 10)
}

// TestReapWhileWriting races a node's writes against its reap by another
// process on the same file.
func TestReapWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	storetest.ReapWhileWriting(t, []store.Store{open(t, path), open(t, path)}, 40)
}
