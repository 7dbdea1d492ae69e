package schedule_test

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds and returns as soon as it does, failing
// the test if it does not within d: the firings and heartbeats it waits for
// are written by the nodes' own goroutines.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			if cond() {
				return
			}
			t.Fatalf("no %s within %s", what, d)
		}
	}
}
