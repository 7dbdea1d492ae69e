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

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestCloseLeavesNoOrphans: a stdio server that started a process of its own is
// killed with it when the manager closes.
func TestCloseLeavesNoOrphans(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	dir := t.TempDir()
	s := server("everything", mcp.TransportStdio, "")
	s.Command = "sh"
	// The shell starts a long sleep in the background (a grandchild of Relay),
	// then runs the server in its place.
	s.Args = []string{"-c", "sleep 600 & echo $! > " + filepath.Join(dir, "grandchild") + "; echo $$ > " + filepath.Join(dir, "child") + "; exec node " + everything + " stdio"}
	m := mcp.NewManager([]mcp.ServerConfig{s}, mcp.Options{})
	if _, err := call(t, m, nil, "echo__mcp__everything", `{"message":"x"}`); err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, name := range []string{"child", "grandchild"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pids[name], _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if !alive(pids[name]) {
			t.Fatalf("%s %d is not running", name, pids[name])
		}
	}
	m.Close()
	for name, pid := range pids {
		poll.Until(t, 5*time.Second, fmt.Sprintf("end of %s %d after the manager closed", name, pid), func() bool { return !alive(pid) || zombie(pid) })
	}
}

// zombie reports whether pid has exited and only waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

func TestToolListChangedRefreshes(t *testing.T) {
	var srv *sdk.Server
	url := mcptest.Start(t, "websocket", mcptest.Options{Configure: func(s *sdk.Server) { srv = s }})
	m := newManager(t, mcp.Options{}, server("live", mcp.TransportWebSocket, url))
	ctx := context.Background()
	before, err := m.Tools(ctx, "live", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.AddTool(&sdk.Tool{Name: "late-tool", Description: "added later", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil
		})
	poll.Until(t, 5*time.Second, "refresh of the tools after list_changed", func() bool {
		after, err := m.Tools(ctx, "live", nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(after) == len(before)+1
	})
	res, err := call(t, m, nil, "late-tool__mcp__live", `{}`)
	if err != nil || text(res) != "late" {
		t.Fatalf("calling the new tool: %v %v", res, err)
	}
}

func TestResolveSubstitutes(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "HOST": "mcp.example"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	s := mcp.ServerConfig{
		Scope:   mcp.ScopeUser,
		URL:     "https://${HOST}/u/{{LIBRECHAT_USER_ID}}",
		Args:    []string{"--user={{LIBRECHAT_USER_EMAIL}}", "${UNSET}"},
		Env:     map[string]string{"NAME": "{{LIBRECHAT_USER_NAME}}", "KEY": "${TOKEN}"},
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}", "X-User": "{{LIBRECHAT_USER_USERNAME}}"},
	}
	u := &mcp.User{ID: "user_1", Email: "ann@example.com", Name: "Ann", Username: "ann"}
	got := s.Resolve(u, getenv)
	want := map[string]string{
		"url": "https://mcp.example/u/user_1", "arg0": "--user=ann@example.com", "arg1": "${UNSET}",
		"NAME": "Ann", "KEY": "s3cret", "Authorization": "Bearer s3cret", "X-User": "ann",
	}
	have := map[string]string{"url": got.URL, "arg0": got.Args[0], "arg1": got.Args[1], "NAME": got.Env["NAME"], "KEY": got.Env["KEY"],
		"Authorization": got.Headers["Authorization"], "X-User": got.Headers["X-User"]}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s = %q, want %q", k, have[k], v)
		}
	}
	if s.Headers["Authorization"] != "Bearer ${TOKEN}" {
		t.Errorf("Resolve changed the original config")
	}
	// App-scoped servers never get user values.
	s.Scope = mcp.ScopeApp
	if got := s.Resolve(u, getenv); got.URL != "https://mcp.example/u/{{LIBRECHAT_USER_ID}}" {
		t.Errorf("app scope: %q", got.URL)
	}
}
