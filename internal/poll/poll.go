// Package poll is for tests: it waits for a condition that the code under
// test gives nothing to block on (work done by a service's own goroutines,
// another process, a browser), returning as soon as it holds.
package poll

import (
	"testing"
	"time"
)

// Until polls cond every 10 ms until it holds, failing the test if it does not
// within d; what names the awaited condition in the failure.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
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
