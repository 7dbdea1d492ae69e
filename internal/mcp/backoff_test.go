package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

// TestCrashingServerBacksOffAndStops: a server that connects and then crashes
// every time counts each crash as a failed attempt, waits its backoff before
// each restart, and ends in the error state after MaxAttempts instead of being
// restarted forever (docs/mcp.md, States).
//
// The crashes follow the connects, not the clock: each child is killed once the
// manager reports it connected. A child that lived a fixed time instead could
// die before a slow start-up had even answered initialize, on a busy machine,
// and the test would see failed connects rather than crashes. Likewise the
// backoff is checked from below only: a restart may come late, never early.
func TestCrashingServerBacksOffAndStops(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	starts := filepath.Join(t.TempDir(), "starts")
	s := server("e", mcp.TransportStdio, "")
	s.Command = "sh"
	// Each start notes its pid, which is the server's: the shell execs it.
	s.Args = []string{"-c", fmt.Sprintf(`echo $$ >> %s; exec node "$0" stdio`, starts), everything}
	// node's start-up alone can take many seconds on a loaded machine.
	s.InitTimeout = time.Minute
	const attempts = 3
	const base = 300 * time.Millisecond
	// StableAfter and RetryAfter lie far beyond the test, so that no crash is
	// taken for the loss of a connection that had worked, and no use retries.
	m := newManager(t, mcp.Options{BackoffBase: base, BackoffMax: time.Minute, MaxAttempts: attempts, StableAfter: time.Hour, RetryAfter: time.Hour}, s)
	pids := func() []int {
		b, _ := os.ReadFile(starts)
		var out []int
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("starts file: %q", b)
			}
			out = append(out, pid)
		}
		return out
	}
	status := func() mcp.ServerStatus { return m.Status(nil)[0] }

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m.Start(ctx)
	if st := status(); st.State != mcp.StateConnected {
		t.Fatalf("after start: %+v", st)
	}
	var killedAt time.Time
	for n := 1; n <= attempts; n++ {
		// The n-th start; the pids are read before the state, so that a start
		// seen here is one the previous crash led to.
		var startedAt time.Time
		// Within a minute: node's start-up can be slow on a loaded machine, and
		// nothing asserted here depends on how long it takes.
		poll.Until(t, time.Minute, fmt.Sprintf("start %d", n), func() bool {
			if p := pids(); len(p) > n {
				t.Fatalf("start %d before crash %d", len(p), n)
			} else if len(p) < n {
				return false
			}
			if startedAt.IsZero() {
				startedAt = time.Now()
			}
			return status().State == mcp.StateConnected
		})
		if n > 1 {
			// After crash n-1, n-1 attempts have failed: the delay is base, doubled
			// for each failure after the first.
			want, got := base<<(n-2), startedAt.Sub(killedAt)
			if got < want {
				t.Errorf("start %d came %s after crash %d, before its backoff of %s", n, got, n-1, want)
			}
			t.Logf("start %d came %s after crash %d (backoff %s)", n, got, n-1, want)
		}
		pid := pids()[n-1]
		killedAt = time.Now() // before the kill: the manager can notice the crash no sooner
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing start %d (pid %d): %v", n, pid, err)
		}
	}
	poll.Until(t, time.Minute, "the error state", func() bool { return status().State == mcp.StateError })
	if st := status(); !strings.Contains(st.LastError, "connection lost") {
		t.Errorf("the last attempt did not end in a crash after connecting: %+v", st)
	}
	// In the error state nothing restarts it until it is used: wait twice the
	// backoff another attempt would have had. This sleep stays: what it shows
	// is that nothing happens, to a real child process, on the manager's real
	// clock, and only time passing can show that.
	time.Sleep(2 * (base << (attempts - 1)))
	if n, st := len(pids()), status(); n != attempts || st.State != mcp.StateError {
		t.Errorf("started %d times, want %d; state %+v", n, attempts, st)
	}
	if _, err := call(t, m, nil, "echo__mcp__e", `{"message":"x"}`); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("a call to a server given up on: %v", err)
	}
	if n := len(pids()); n != attempts {
		t.Errorf("the call started the server again: %d starts", n)
	}
}
