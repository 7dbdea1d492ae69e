// Package mcptest owns Relay's in-repo MCP test server: a server built on the
// go-sdk with the tools Relay's tests need (named and shaped like those of the
// reference server "server-everything", plus a few of Relay's own), its
// serving over websocket, streamable HTTP, SSE and stdio, counters of what it
// received, for tests of cancellation and argument checking, and helpers that
// find and start the peer programs Relay is also tested against.
//
// The server makes two things visible to tool handlers that the sdk does not
// pass on: the top-level "userId" of a request's params, which Relay adds to
// tools/call on user-scoped connections, and the HTTP header X-User. See
// [UserID] and [XUser].
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a test server. The zero value is a server named "mcptest"
// with the standard tools.
type Options struct {
	// Name is the server's name in its initialize result; empty means "mcptest".
	Name string
	// Instructions is the text the server returns in its initialize result.
	Instructions string
	// ExtraTools are added after the standard tools; one with the name of a
	// standard tool replaces it.
	ExtraTools []Tool
	// Configure, if set, is called last with the new server, to add anything
	// else (prompts, resources, typed tools) or to keep the server so as to
	// change its tools while clients are connected.
	Configure func(*sdk.Server)
	// Stats, if set, counts what the server receives.
	Stats *Stats
	// ProtocolVersions, if set, are the only protocol versions the server
	// speaks (an older one makes it send its requests to the client
	// during a call, rather than as multi-round-trip results).
	ProtocolVersions []string
}

// Tool is a tool with its handler, as [sdk.Server.AddTool] takes them.
type Tool struct {
	Tool    *sdk.Tool
	Handler sdk.ToolHandler
}

// NewServer returns a test server with the standard tools: echo, get-sum,
// get-tiny-image, trigger-long-running-operation, get-resource-reference,
// whoami, fail and sleep.
func NewServer(opts Options) *sdk.Server {
	name := opts.Name
	if name == "" {
		name = "mcptest"
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1.0.0"}, &sdk.ServerOptions{
		Instructions: opts.Instructions, SupportedProtocolVersions: opts.ProtocolVersions,
	})
	if opts.Stats != nil {
		srv.AddReceivingMiddleware(opts.Stats.middleware)
	}
	for _, t := range standardTools(opts.Stats) {
		srv.AddTool(t.Tool, t.Handler)
	}
	for _, t := range opts.ExtraTools {
		srv.AddTool(t.Tool, t.Handler)
	}
	if opts.Configure != nil {
		opts.Configure(srv)
	}
	return srv
}

// Stats counts what servers sharing it received. The zero value is ready to
// use, and a Stats is safe for concurrent use.
type Stats struct {
	mu      sync.Mutex
	snap    Snapshot
	changed chan struct{} // closed and replaced on every change
}

// Snapshot is the state of a [Stats] at one moment.
type Snapshot struct {
	// Calls counts tools/call requests by tool name, including calls of
	// unknown tools and calls whose arguments were rejected.
	Calls map[string]int
	// Cancelled counts notifications/cancelled received.
	Cancelled int
	// CancelledIDs are the request ids those notifications named, in order.
	CancelledIDs []any
	// Interrupted counts tool calls (sleep, trigger-long-running-operation)
	// that stopped early because their request was cancelled or the
	// connection ended.
	Interrupted int
}

// Snapshot returns a copy of the current counts.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyLocked()
}

// Cancelled returns how many notifications/cancelled were received.
func (s *Stats) Cancelled() int { return s.Snapshot().Cancelled }

// Calls returns how many tools/call requests named tool.
func (s *Stats) Calls(tool string) int { return s.Snapshot().Calls[tool] }

// Interrupted returns how many tool calls stopped early; see [Snapshot].
func (s *Stats) Interrupted() int { return s.Snapshot().Interrupted }

// Await waits until cond holds for the counts and returns them, or returns the
// last counts and an error when ctx ends first.
func (s *Stats) Await(ctx context.Context, cond func(Snapshot) bool) (Snapshot, error) {
	for {
		s.mu.Lock()
		snap := s.copyLocked()
		changed := s.changedLocked()
		s.mu.Unlock()
		if cond(snap) {
			return snap, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, fmt.Errorf("waiting for mcptest stats (now %+v): %w", snap, context.Cause(ctx))
		}
	}
}

func (s *Stats) copyLocked() Snapshot {
	c := s.snap
	c.Calls = maps.Clone(s.snap.Calls)
	if c.Calls == nil {
		c.Calls = map[string]int{}
	}
	c.CancelledIDs = append([]any(nil), s.snap.CancelledIDs...)
	return c
}

func (s *Stats) changedLocked() chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *Stats) update(f func(*Snapshot)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.snap)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// middleware counts tool calls and cancellations on their way in.
func (s *Stats) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/call":
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && p != nil {
				s.update(func(snap *Snapshot) {
					if snap.Calls == nil {
						snap.Calls = map[string]int{}
					}
					snap.Calls[p.Name]++
				})
			}
		case "notifications/cancelled":
			var id any
			if p, ok := req.GetParams().(*sdk.CancelledParams); ok && p != nil {
				id = p.RequestID
			}
			s.update(func(snap *Snapshot) {
				snap.Cancelled++
				snap.CancelledIDs = append(snap.CancelledIDs, id)
			})
		}
		return next(ctx, method, req)
	}
}

// Keys under which the transports of this package put, into a request's
// params._meta, what the sdk would otherwise drop.
const (
	metaUserID = "relay.test/userId"
	metaXUser  = "relay.test/xUser"
)

// UserID returns the top-level "userId" of the tools/call params, or "" if the
// request had none. It is known only to servers served by this package (or
// over a transport wrapped by [CaptureUserID]).
func UserID(req *sdk.CallToolRequest) string {
	return metaString(req, metaUserID)
}

// XUser returns the HTTP header X-User of the request that carried the call
// (the websocket handshake, for websocket), or "" if there was none.
func XUser(req *sdk.CallToolRequest) string {
	return metaString(req, metaXUser)
}

func metaString(req *sdk.CallToolRequest, key string) string {
	if req == nil || req.Params == nil {
		return ""
	}
	switch v := req.Params.Meta[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		// A number or anything else: its JSON, as the client sent it.
		b, _ := json.Marshal(v)
		return string(b)
	}
}
