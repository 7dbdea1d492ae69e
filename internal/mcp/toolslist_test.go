package mcp_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

type messageArgs struct {
	Message string `json:"message"`
}

func answerOK(context.Context, *sdk.CallToolRequest, messageArgs) (*sdk.CallToolResult, any, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
}

// toolServer serves srv over websocket for the life of the test, as server "t".
func toolServer(t *testing.T, srv *sdk.Server) mcp.ServerConfig {
	hs := httptest.NewServer(mcptest.WebSocketHandler(func() *sdk.Server { return srv }))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
	})
	return server("t", mcp.TransportWebSocket, "ws"+strings.TrimPrefix(hs.URL, "http")+"/")
}

func toolNames(tools []mcp.Tool) []string {
	var names []string
	for _, x := range tools {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	return names
}

// TestToolsChangedDuringListing: a tools/list_changed that arrives while the
// tools are being listed is not lost: the listing in flight is not kept, and the
// tools are listed again at once, so that the first answer (and the server's
// tool count) already has the tool the server added. The reference server adds
// tools once initialized, during Relay's first listing.
func TestToolsChangedDuringListing(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "a"}, answerOK)
	var changed atomic.Bool
	var lists atomic.Int32
	var mgr atomic.Pointer[mcp.Manager]
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				lists.Add(1)
			}
			if method == "tools/list" && changed.CompareAndSwap(false, true) {
				// The answer holds only "a"; the notification of "b" goes
				// first, and the answer waits until the manager has noted it:
				// the client hands notifications to their handler apart from
				// answers.
				addWhileListing(&mgr, srv, "b")
			}
			return res, err
		}
	})
	m := newManager(t, mcp.Options{}, toolServer(t, srv))
	mgr.Store(m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := m.Tools(ctx, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(first); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("the first listing: %v, want [a b]", got)
	}
	if st := m.Status(nil)[0]; st.ToolCount != 2 {
		t.Errorf("status after the first listing: %+v", st)
	}
	again, err := m.Tools(ctx, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(again); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after the change the tools are %v, want [a b]", got)
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("tools/list was sent %d times, want 2 (the second listing is kept)", n)
	}
}

// TestToolsKeepChanging: a server whose tools change during every listing is
// listed a bounded number of times; the last listing is answered, not kept.
func TestToolsKeepChanging(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "a"}, answerOK)
	var lists atomic.Int32
	var mgr atomic.Pointer[mcp.Manager]
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				n := lists.Add(1)
				// As above: the notification must reach the manager first.
				addWhileListing(&mgr, srv, fmt.Sprintf("x%d", n))
			}
			return res, err
		}
	})
	m := newManager(t, mcp.Options{}, toolServer(t, srv))
	mgr.Store(m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.Tools(ctx, "t", nil); err != nil {
		t.Fatal(err)
	}
	if n := lists.Load(); n != 3 {
		t.Errorf("tools/list was sent %d times, want 3", n)
	}
	if st := m.Status(nil)[0]; st.ToolCount != 0 {
		t.Errorf("a listing that saw a change was kept: %+v", st)
	}
}

// TestCallListsAgainForAnUnknownTool: a server that adds a tool without saying
// so still has it called; the call lists the tools once more.
func TestCallListsAgainForAnUnknownTool(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "a"}, answerOK)
	var lists atomic.Int32
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	srv.AddSendingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/tools/list_changed" {
				return nil, nil // this server never tells
			}
			return next(ctx, method, req)
		}
	})
	m := newManager(t, mcp.Options{}, toolServer(t, srv))
	if _, err := call(t, m, nil, "a__mcp__t", `{"message":"x"}`); err != nil {
		t.Fatal(err)
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "b"}, answerOK)
	res, err := call(t, m, nil, "b__mcp__t", `{"message":"x"}`)
	if err != nil || text(res) != "ok" {
		t.Fatalf("calling the unannounced tool: %v %v", res, err)
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("tools/list was sent %d times, want 2", n)
	}
	if _, err := call(t, m, nil, "c__mcp__t", `{}`); err == nil || !strings.Contains(err.Error(), `no tool "c"`) {
		t.Errorf("calling a tool no server has: %v", err)
	}
}

// TestReconnectListsTools: a reconnected server counts its tools in its status
// at once, as it does after start-up (docs/api.md "MCP tools").
func TestReconnectListsTools(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "a"}, answerOK)
	m := newManager(t, mcp.Options{}, toolServer(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	if st := m.Status(nil)[0]; st.ToolCount != 1 {
		t.Fatalf("status after start-up: %+v", st)
	}
	if err := m.Reconnect(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(nil)[0]; st.State != mcp.StateConnected || st.ToolCount != 1 {
		t.Errorf("status after reconnecting: %+v", st)
	}
}

// TestCollidingServerNamesAreStable: of two servers whose names are the same in
// tool keys ("x y" and "x_y"), the first in the config keeps the plain keys even
// when the other lists its tools first, as it may at any start, since servers
// connect in parallel.
func TestCollidingServerNamesAreStable(t *testing.T) {
	answering := func(name string) mcp.ServerConfig {
		srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
		sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(context.Context, *sdk.CallToolRequest, messageArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil, nil
		})
		cfg := toolServer(t, srv)
		cfg.Name = name
		return cfg
	}
	m := newManager(t, mcp.Options{}, answering("x y"), answering("x_y"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second, err := m.Tools(ctx, "x_y", nil) // the later server lists first
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.Tools(ctx, "x y", nil)
	if err != nil {
		t.Fatal(err)
	}
	if first[0].Key != "echo__mcp__x_y" {
		t.Errorf(`"x y", first in the config, has the key %q, want echo__mcp__x_y`, first[0].Key)
	}
	if second[0].Key == "echo__mcp__x_y" || !strings.HasPrefix(second[0].Key, "echo__mcp__x_y_") {
		t.Errorf(`"x_y" has the key %q, want echo__mcp__x_y_ and a hash`, second[0].Key)
	}
	for key, want := range map[string]string{first[0].Key: "x y", second[0].Key: "x_y"} {
		if res, err := call(t, m, nil, key, `{"message":"m"}`); err != nil || text(res) != want {
			t.Errorf("%s reached %q (%v), want %q", key, text(res), err, want)
		}
	}
}

// TestShortenedKeyCalledFirst: a shortened key (and a disambiguated one) is
// called before anything listed its server's tools in this process, as
// `relay mcp call` and a user-scoped server's first call do.
func TestShortenedKeyCalledFirst(t *testing.T) {
	named := func(name string) mcp.ServerConfig {
		srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
		sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(context.Context, *sdk.CallToolRequest, messageArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil, nil
		})
		cfg := toolServer(t, srv)
		cfg.Name = name
		return cfg
	}
	long := "a-server-name-long-enough-that-its-tool-keys-are-cut-short"
	servers := []mcp.ServerConfig{named("x y"), named("x_y"), named(long)}
	// The keys, as a manager that listed the tools hands them out.
	keys := map[string]string{}
	lister := newManager(t, mcp.Options{}, servers...)
	for _, s := range servers {
		ts, err := lister.Tools(context.Background(), s.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys[s.Name] = ts[0].Key
	}
	if len(keys[long]) != mcp.MaxKeyLen {
		t.Fatalf("the key %q is not shortened", keys[long])
	}
	for _, name := range []string{long, "x_y"} {
		m := newManager(t, mcp.Options{}, servers...) // a fresh process
		res, err := call(t, m, nil, keys[name], `{"message":"m"}`)
		if err != nil || text(res) != name {
			t.Errorf("calling %s first: %q, %v; want %q", keys[name], text(res), err, name)
		}
	}
}

// addWhileListing adds a tool to srv while it answers tools/list, and holds
// the answer until the manager (once mgr has it) has noted the change, or at
// most 5 s.
func addWhileListing(mgr *atomic.Pointer[mcp.Manager], srv *sdk.Server, name string) {
	changes := func() uint64 {
		if m := mgr.Load(); m != nil {
			return mcp.ToolsChanges(m, "t")
		}
		return 0
	}
	before := changes()
	sdk.AddTool(srv, &sdk.Tool{Name: name}, answerOK)
	for deadline := time.Now().Add(5 * time.Second); changes() == before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}
