package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

func server(name, transport, url string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: name, Transport: transport, URL: url, Timeout: 10 * time.Second, InitTimeout: 10 * time.Second, Startup: true, Scope: mcp.ScopeApp, SendUserID: true}
}

func newManager(t *testing.T, opts mcp.Options, servers ...mcp.ServerConfig) *mcp.Manager {
	t.Helper()
	m := mcp.NewManager(servers, opts)
	t.Cleanup(func() { m.Close() })
	return m
}

func call(t *testing.T, m *mcp.Manager, u *mcp.User, key, args string) (*sdk.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return m.Call(ctx, u, key, json.RawMessage(args))
}

func text(res *sdk.CallToolResult) string { return mcp.Format(res, mcp.FamilyText).Text }

// stdioEverything is server-everything over stdio, behind a shell that writes the
// child's pid to a file so that a test can kill it.
func stdioEverything(t *testing.T, name string) (mcp.ServerConfig, func() int) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := server(name, mcp.TransportStdio, "")
	s.Command = "sh"
	s.Args = []string{"-c", fmt.Sprintf("echo $$ > %s; exec node %s stdio", pidFile, everything)}
	return s, func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
}

func TestResultsPerProviderFamily(t *testing.T) {
	s, _ := stdioEverything(t, "everything")
	m := newManager(t, mcp.Options{}, s)

	img, err := call(t, m, nil, "get-tiny-image__mcp__everything", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	oa := mcp.Format(img, mcp.FamilyOpenAI)
	if len(oa.Images) != 1 || oa.Images[0].MIMEType != "image/png" || !strings.HasPrefix(oa.Images[0].DataURL(), "data:image/png;base64,") {
		t.Errorf("OpenAI family: images %+v", oa.Images)
	}
	an := mcp.Format(img, mcp.FamilyAnthropic)
	var kinds []string
	for _, b := range an.Blocks {
		kinds = append(kinds, b.Type)
	}
	if !strings.Contains(strings.Join(kinds, ","), "image") || !strings.Contains(strings.Join(kinds, ","), "text") {
		t.Errorf("Anthropic family: blocks %v", kinds)
	}
	if txt := mcp.Format(img, mcp.FamilyText).Text; !strings.Contains(txt, "[image: image/png]") {
		t.Errorf("text family: %q", txt)
	}

	ref, err := call(t, m, nil, "get-resource-reference__mcp__everything", `{"resourceId": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	got := text(ref)
	for _, want := range []string{"Resource 2: This is a plaintext resource", "Resource URI: demo://resource/dynamic/text/2", "Resource MIME Type: text/plain"} {
		if !strings.Contains(got, want) {
			t.Errorf("resource reference lacks %q:\n%s", want, got)
		}
	}
}

// TestProgressRestartsTheTimeout: a call that gets progress notifications more
// often than its timeout outlives that timeout; one that gets none ends at it,
// with the timeout's error text (docs/mcp.md, timeout).
//
// The call's time limit covers waiting for a connect too, and node's start-up
// on a loaded machine can take longer than any limit short enough to test: the
// servers are connected, their tools listed, before the timed calls. The limit
// is then tested against the progress alone, with a wide margin between the
// notifications' interval and the limit.
func TestProgressRestartsTheTimeout(t *testing.T) {
	s, _ := stdioEverything(t, "everything")
	s.Timeout, s.InitTimeout = 3*time.Second, time.Minute
	m := newManager(t, mcp.Options{}, s)
	ready(t, m, "everything")
	began := time.Now()
	// Progress every half second, for twice the timeout.
	res, err := call(t, m, nil, "trigger-long-running-operation__mcp__everything", `{"duration": 6, "steps": 12}`)
	if err != nil {
		t.Fatalf("with progress every half second the call should outlive its 3 s timeout: %v", err)
	}
	if d := time.Since(began); d < 6*time.Second || !strings.Contains(text(res), "completed") {
		t.Errorf("after %s: %q", d, text(res))
	}

	// Without progress the limit ends the call at 2 s with the error text, long
	// before the server would answer. The timer cannot fire early; how late it
	// fires is up to the machine's load, so the bound above is loose, and the
	// error says which limit ended the call.
	goSrv := server("quiet", mcp.TransportWebSocket, mcptest.Start(t, "websocket", mcptest.Options{}))
	goSrv.Timeout, goSrv.InitTimeout = 2*time.Second, time.Minute
	m2 := newManager(t, mcp.Options{}, goSrv)
	ready(t, m2, "quiet")
	began = time.Now()
	_, err = call(t, m2, nil, "sleep__mcp__quiet", `{"ms": 60000}`)
	d := time.Since(began)
	if err == nil || d < 2*time.Second || d > 10*time.Second {
		t.Fatalf("no progress: err %v after %s, want a timeout at 2 s", err, d)
	}
	if msg := mcp.FailureText("sleep__mcp__quiet", err); !strings.HasPrefix(msg, `"sleep__mcp__quiet" tool call failed: `) || !strings.Contains(msg, "within 2s (timeout)") {
		t.Errorf("failure text %q", msg)
	}
}

// ready connects a server and lists its tools, allowing each try the server's
// Timeout and all of them a minute: a real server's first answers can be slow
// on a loaded machine.
func ready(t *testing.T, m *mcp.Manager, server string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	poll.Until(t, time.Minute, fmt.Sprintf("server %q ready", server), func() bool {
		_, err := m.Tools(ctx, server, nil)
		if err != nil {
			t.Logf("server %q not ready yet: %v", server, err)
		}
		return err == nil
	})
}

func TestCancelReachesTheServer(t *testing.T) {
	stats := &mcptest.Stats{}
	url := mcptest.Start(t, "websocket", mcptest.Options{Stats: stats})
	m := newManager(t, mcp.Options{}, server("go", mcp.TransportWebSocket, url))
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled once the server has the call: a call cancelled before it is
	// sent (the connection still opening on a busy machine) has nothing to
	// cancel there.
	go func() {
		defer cancel()
		wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_, _ = stats.Await(wait, func(s mcptest.Snapshot) bool { return s.Calls["sleep"] > 0 })
	}()
	if _, err := m.Call(ctx, nil, "sleep__mcp__go", json.RawMessage(`{"ms": 10000}`)); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	poll.Until(t, 5*time.Second, "notifications/cancelled seen by the server", func() bool { return stats.Cancelled() != 0 })
}

func TestStdioChildKilledMidCall(t *testing.T) {
	s, pid := stdioEverything(t, "everything")
	s.Timeout = 5 * time.Second
	m := newManager(t, mcp.Options{BackoffBase: 50 * time.Millisecond}, s)
	if _, err := call(t, m, nil, "echo__mcp__everything", `{"message":"first"}`); err != nil {
		t.Fatal(err)
	}
	victim := pid()
	time.AfterFunc(500*time.Millisecond, func() { _ = syscall.Kill(victim, syscall.SIGKILL) })
	began := time.Now()
	_, err := call(t, m, nil, "trigger-long-running-operation__mcp__everything", `{"duration": 10, "steps": 10}`)
	if err == nil {
		t.Fatal("the call survived its server being killed")
	}
	if d := time.Since(began); d > s.Timeout+time.Second {
		t.Errorf("the failed call took %s, more than its timeout", d)
	}
	t.Logf("failure text: %s", mcp.FailureText("trigger-long-running-operation__mcp__everything", err))
	res, err := call(t, m, nil, "echo__mcp__everything", `{"message":"again"}`)
	if err != nil || text(res) != "Echo: again" {
		t.Fatalf("after the crash: %v %v", res, err)
	}
	if pid() == victim {
		t.Errorf("no new child was started")
	}
}

func TestHTTPServerDownAndBack(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	port := mcptest.FreePort(t)
	env := []string{fmt.Sprintf("PORT=%d", port)}
	p := mcptest.StartProcess(t, port, env, "node", everything, "streamableHttp")
	s := server("remote", mcp.TransportStreamableHTTP, fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	s.Timeout = 3 * time.Second
	s.InitTimeout = 2 * time.Second
	m := newManager(t, mcp.Options{BackoffBase: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond, MaxAttempts: 100}, s)
	if _, err := call(t, m, nil, "echo__mcp__remote", `{"message":"up"}`); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	// The next call fails with the error text, and the state says why.
	if _, err := call(t, m, nil, "echo__mcp__remote", `{"message":"down"}`); err != nil {
		t.Logf("call while down: %v", err)
	} else {
		t.Fatal("a call to a stopped server succeeded")
	}
	poll.Until(t, 20*time.Second, "error state with a reason", func() bool {
		st := m.Status(nil)[0]
		return st.State == mcp.StateError && st.LastError != ""
	})
	st := m.Status(nil)[0]
	t.Logf("state %s: %s", st.State, st.LastError)
	mcptest.StartProcess(t, port, env, "node", everything, "streamableHttp")
	poll.Until(t, 20*time.Second, "recovery", func() bool {
		res, err := call(t, m, nil, "echo__mcp__remote", `{"message":"back"}`)
		if err != nil {
			t.Logf("call while recovering: %v", err)
		}
		return err == nil && text(res) == "Echo: back"
	})
	if st := m.Status(nil)[0]; st.State != mcp.StateConnected {
		t.Errorf("after recovery: %+v", st)
	}
}

func TestOutOfOrderAnswers(t *testing.T) {
	memory := mcptest.Peer(t, "PEER_MEMORY")
	s := server("memory", mcp.TransportStdio, "")
	s.Command = "node"
	s.Args = []string{memory}
	s.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	m := newManager(t, mcp.Options{}, s)
	var entities []map[string]any
	for i := range 40 {
		entities = append(entities, map[string]any{"name": fmt.Sprintf("entity%02d", i), "entityType": "thing", "observations": []string{fmt.Sprintf("observation %02d", i)}})
	}
	args, _ := json.Marshal(map[string]any{"entities": entities})
	if _, err := call(t, m, nil, "create_entities__mcp__memory", string(args)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			name := fmt.Sprintf("entity%02d", i)
			res, err := call(t, m, nil, "open_nodes__mcp__memory", fmt.Sprintf(`{"names": [%q]}`, name))
			if err != nil {
				errs <- err
				return
			}
			got := text(res)
			if !strings.Contains(got, name) || strings.Count(got, `"entityType"`) != 1 {
				errs <- fmt.Errorf("call for %s got %s", name, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestUserScopedConnections(t *testing.T) {
	url := mcptest.Start(t, "streamable-http", mcptest.Options{})
	s := server("per-user", mcp.TransportStreamableHTTP, url)
	s.Scope = mcp.ScopeUser
	s.Headers = map[string]string{"X-User": "{{LIBRECHAT_USER_ID}}"}
	m := newManager(t, mcp.Options{IdleTimeout: 400 * time.Millisecond}, s)
	ann, bob := &mcp.User{ID: "user_ann"}, &mcp.User{ID: "user_bob"}
	for _, u := range []*mcp.User{ann, bob, ann} {
		res, err := call(t, m, u, "whoami__mcp__per-user", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var who struct {
			UserID string `json:"userId"`
			Header string `json:"header"`
		}
		if err := json.Unmarshal([]byte(text(res)), &who); err != nil {
			t.Fatalf("whoami: %q: %v", text(res), err)
		}
		if who.UserID != u.ID || who.Header != u.ID {
			t.Errorf("%s: server saw userId %q and X-User %q", u.ID, who.UserID, who.Header)
		}
	}
	if n := m.Status(nil)[0].Connections; n != 2 {
		t.Errorf("%d connections for two users, want 2", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	poll.Until(t, 5*time.Second, "close of the idle user connections", func() bool { return m.Status(nil)[0].Connections == 0 })
}

// TestUserDetailsChanged: a user-scoped connection whose placeholders name
// the user (here their name, in X-User) is made afresh when the user's
// details change, so that the server sees the new name from the next call,
// not the one the connection was made with; a change of details the config
// does not use keeps the connection.
func TestUserDetailsChanged(t *testing.T) {
	url := mcptest.Start(t, "streamable-http", mcptest.Options{})
	s := server("per-user", mcp.TransportStreamableHTTP, url)
	s.Scope = mcp.ScopeUser
	s.Headers = map[string]string{"X-User": "{{LIBRECHAT_USER_NAME}}"}
	m := newManager(t, mcp.Options{}, s)
	header := func(u *mcp.User) string {
		t.Helper()
		res, err := call(t, m, u, "whoami__mcp__per-user", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var who struct {
			Header string `json:"header"`
		}
		if err := json.Unmarshal([]byte(text(res)), &who); err != nil {
			t.Fatalf("whoami: %q: %v", text(res), err)
		}
		return who.Header
	}
	if got := header(&mcp.User{ID: "user_ann", Name: "Ann", Email: "ann@example.com"}); got != "Ann" {
		t.Fatalf("X-User %q, want Ann", got)
	}
	since := m.Status(nil)[0].ConnectedSince
	if got := header(&mcp.User{ID: "user_ann", Name: "Ann", Email: "ann@example.org"}); got != "Ann" || m.Status(nil)[0].ConnectedSince == nil || !m.Status(nil)[0].ConnectedSince.Equal(*since) {
		t.Errorf("after a change the config does not use: X-User %q, connected since %v (was %v); want the same connection", got, m.Status(nil)[0].ConnectedSince, since)
	}
	if got := header(&mcp.User{ID: "user_ann", Name: "Annette", Email: "ann@example.org"}); got != "Annette" {
		t.Errorf("after the user's name changed the server saw X-User %q, want Annette", got)
	}
	if n := m.Status(nil)[0].Connections; n != 1 {
		t.Errorf("%d connections for one user, want 1", n)
	}
}

// crashScript is a stdio MCP server in sh with one tool, "crash", whose call
// makes it say why on stderr (quoting its TOKEN) and exit with status 3.
const crashScript = `while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
  *'"server/discover"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id" ;;
  *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"crash","version":"1"}}}\n' "$id" ;;
  *'"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"crash","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
  *'"tools/call"'*) echo "out of memory with token $TOKEN" >&2; exit 3 ;;
  esac
done`

// TestStdioServerDiesInCall: a stdio server that exits in the middle of a
// call gives the model an error that says it exited, with its status and
// its last words on stderr, not a bare EOF; the next call starts it again.
func TestStdioServerDiesInCall(t *testing.T) {
	s := server("crash", mcp.TransportStdio, "")
	s.Command, s.Args = "sh", []string{"-c", crashScript}
	s.Env = map[string]string{"TOKEN": "tok-4Hq9-secret"}
	m := newManager(t, mcp.Options{}, s)
	for range 2 {
		_, err := call(t, m, nil, "crash__mcp__crash", `{}`)
		if err == nil || !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "out of memory") ||
			strings.Contains(err.Error(), "tok-4Hq9-secret") {
			t.Errorf("call of a tool whose server dies: %v; want its exit status and last words, its env masked", err)
		}
	}
}
