package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/poll"
)

// TestClosedManagerStartsNothing: using a manager after Close fails with
// ErrClosed and starts no stdio child that nothing would stop.
func TestClosedManagerStartsNothing(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	s := server("e", mcp.TransportStdio, "")
	s.Command = "sh"
	s.Args = []string{"-c", "touch " + started + "; exec sleep 600"}
	before := goroutinesIn()
	m := mcp.NewManager([]mcp.ServerConfig{s}, mcp.Options{})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.Start(ctx)
	if _, err := m.Call(ctx, nil, "echo__mcp__e", []byte(`{"message":"after close"}`)); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}
	if _, err := m.Tools(ctx, "e", nil); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("Tools after Close: %v, want ErrClosed", err)
	}
	if err := m.Reconnect(ctx, "e"); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("Reconnect after Close: %v, want ErrClosed", err)
	}
	// A child is started by a goroutine of the manager's; once none is left,
	// any child it started exists: a shell not yet past touch, or the file.
	poll.Until(t, 5*time.Second, "end of the manager's goroutines", func() bool { return goroutinesIn() <= before })
	if _, err := os.Stat(started); err == nil {
		t.Errorf("a stdio child was started after Close")
	}
	if pid := processWith(started); pid != 0 {
		t.Errorf("a stdio child (pid %d) was started after Close", pid)
	}
}

// processWith returns the pid of a process whose command line holds s, or 0.
func processWith(s string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}
