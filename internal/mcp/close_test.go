package mcp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
)

// TestClosedManagerStartsNothing: using a manager after Close fails with
// ErrClosed and starts no stdio child that nothing would stop.
func TestClosedManagerStartsNothing(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	s := server("e", mcp.TransportStdio, "")
	s.Command = "sh"
	s.Args = []string{"-c", "touch " + started + "; exec sleep 600"}
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
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(started); err == nil {
		t.Errorf("a stdio child was started after Close")
	}
}
