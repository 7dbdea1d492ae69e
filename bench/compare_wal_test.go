package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWALWatchKeepsThePeak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db-wal")
	w := watchWAL(path) // no log yet: 0
	if err := os.WriteFile(path, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	w.sample()                                       // as its ticker does
	if err := os.Truncate(path, 1<<20); err != nil { // reset, as the checkpointer does
		t.Fatal(err)
	}
	if peak := w.end(); peak != 3<<20 {
		t.Fatalf("peak %d, want %d", peak, 3<<20)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if peak := watchWAL(path).end(); peak != 0 {
		t.Fatalf("a missing log's peak is %d, want 0", peak)
	}
	var none *walWatch
	if peak := none.end(); peak != 0 {
		t.Fatalf("a nil watch's peak is %d, want 0", peak)
	}
}
