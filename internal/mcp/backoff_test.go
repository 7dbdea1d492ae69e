package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// TestCrashingServerBacksOffAndStops: a server that connects and then crashes
// every time counts each crash as a failed attempt, so that it ends in the error
// state after MaxAttempts instead of being restarted forever.
func TestCrashingServerBacksOffAndStops(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	starts := filepath.Join(t.TempDir(), "starts")
	s := server("e", mcp.TransportStdio, "")
	s.Command = "sh"
	// Each start is noted; the server then lives for one second.
	s.Args = []string{"-c", fmt.Sprintf(`echo start >> %s; exec timeout 1 node "$0" stdio`, starts), everything}
	const attempts = 3
	m := newManager(t, mcp.Options{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second, MaxAttempts: attempts}, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	if st := m.Status(nil)[0]; st.State != mcp.StateConnected {
		t.Fatalf("after start: %+v", st)
	}
	count := func() int {
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "start")
	}
	deadline := time.Now().Add(15 * time.Second)
	for m.Status(nil)[0].State != mcp.StateError || count() < attempts {
		if time.Now().After(deadline) {
			t.Fatalf("after %d starts the state is %+v", count(), m.Status(nil)[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// In the error state nothing restarts it until it is used.
	time.Sleep(2 * time.Second)
	if n, st := count(), m.Status(nil)[0]; n != attempts || st.State != mcp.StateError {
		t.Errorf("started %d times, want %d; state %+v", n, attempts, st)
	}
	if _, err := call(t, m, nil, "echo__mcp__e", `{"message":"x"}`); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("a call to a server given up on: %v", err)
	}
}
