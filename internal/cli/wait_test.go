package cli

import (
	"net/http"
	"testing"
	"time"
)

// waitFor polls ok until it holds, at most d, and returns when it became
// true. What the tests wait for happens in a server, often another process,
// which gives the test nothing to block on. It polls every 50 ms: a poll of
// the API counts against the key's rate limit (600 a minute by default), and
// a minute-long wait at a faster pace would be refused with 429.
func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) time.Time {
	t.Helper()
	if ok() {
		return time.Now()
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if ok() {
				return time.Now()
			}
		case <-deadline.C:
			if ok() {
				return time.Now()
			}
			t.Fatalf("%s: not within %s", what, d)
		}
	}
}

// answersReady reports whether the server at base answers /readyz with 200.
func answersReady(base string) bool {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
