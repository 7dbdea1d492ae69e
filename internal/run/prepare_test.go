package run_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
)

// barrierServers is an MCP manager whose servers answer for their tools only
// once every one of them has been asked: asked one after another, the first
// never answers (until the context ends).
type barrierServers struct {
	names []string
	mu    sync.Mutex
	asked int
	all   chan struct{} // closed when every server has been asked
}

func (s *barrierServers) Servers() []mcp.ServerConfig {
	var out []mcp.ServerConfig
	for _, n := range s.names {
		out = append(out, mcp.ServerConfig{Name: n})
	}
	return out
}

func (s *barrierServers) Tools(ctx context.Context, server string, _ *mcp.User) ([]mcp.Tool, error) {
	s.mu.Lock()
	if s.asked++; s.asked == len(s.names) {
		close(s.all)
	}
	s.mu.Unlock()
	select {
	case <-s.all:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if server == "down" {
		return nil, errors.New("no answer to initialize within initTimeout (30s)")
	}
	return []mcp.Tool{{Key: mcp.Key("t", server), Server: server, Name: "t"}}, nil
}

func (s *barrierServers) Instructions(context.Context, string, *mcp.User) (string, error) {
	return "", nil
}

// The MCP servers of an agent are asked for their tools at once, so that a
// run waits for the slowest (an unreachable one may take its initTimeout to
// fail), not for the sum of them.
func TestPrepareAsksServersAtOnce(t *testing.T) {
	srv := &barrierServers{names: []string{"down", "a", "b"}, all: make(chan struct{})}
	prep := &run.Preparer{MCP: srv, Location: time.UTC}
	a := &agent.Agent{ID: "x", Spec: agent.Spec{Tools: []string{"all__mcp__down", "t__mcp__a", "all__mcp__b", "all__mcp__a"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := prep.Prepare(ctx, &auth.User{ID: "u"}, run.Request{AgentID: "x", Agent: a, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Unreachable) != 1 || out.Unreachable[0].Server != "down" {
		t.Errorf("unreachable: %+v, want only down", out.Unreachable)
	}
	var names []string
	for _, ft := range out.Request.Tools {
		names = append(names, ft.Function.Name)
	}
	if !slices.Equal(names, []string{"t__mcp__a", "t__mcp__b"}) {
		t.Errorf("tools %v, want [t__mcp__a t__mcp__b]", names)
	}
}
