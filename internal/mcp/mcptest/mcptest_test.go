package mcptest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// connect runs a client session over t and closes it at cleanup.
func connect(t *testing.T, tr sdk.Transport) *sdk.ClientSession {
	t.Helper()
	// Not a context that ends when Connect returns: the sdk's SSE client
	// transport ties its event stream to the context given to Connect.
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcptest-test", Version: "0"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// inMemory connects a client to a server from opts over in-memory transports.
func inMemory(t *testing.T, opts mcptest.Options) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := mcptest.NewServer(opts).Connect(t.Context(), mcptest.CaptureUserID(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return connect(t, withUserID(ct, "user_1"))
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// withUserID adds a top-level userId to the params of outgoing tools/call
// requests, as Relay does on user-scoped connections.
func withUserID(tr sdk.Transport, userID string) sdk.Transport {
	return userIDTransport{tr, userID}
}

type userIDTransport struct {
	sdk.Transport
	userID string
}

func (t userIDTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return userIDConn{c, t.userID}, err
}

type userIDConn struct {
	sdk.Connection
	userID string
}

func (c userIDConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		var p map[string]any
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return err
		}
		p["userId"] = c.userID
		req.Params, _ = json.Marshal(p)
	}
	return c.Connection.Write(ctx, msg)
}

func TestTools(t *testing.T) {
	cs := inMemory(t, mcptest.Options{})
	for _, tc := range []struct {
		tool string
		args any
		want string // the result as JSON
	}{
		{"echo", map[string]any{"message": "hi"}, `{"content":[{"type":"text","text":"Echo: hi"}]}`},
		{"echo", map[string]any{}, `{"content":[{"type":"text","text":"invalid arguments for echo: message is required"}],"isError":true}`},
		{"get-sum", map[string]any{"a": 2, "b": 3}, `{"content":[{"type":"text","text":"The sum of 2 and 3 is 5."}]}`},
		{"get-sum", map[string]any{"a": 1.5, "b": -4}, `{"content":[{"type":"text","text":"The sum of 1.5 and -4 is -2.5."}]}`},
		{"get-resource-reference", map[string]any{"resourceId": 2}, `{"content":[
			{"type":"text","text":"Returning resource reference for Resource 2:"},
			{"type":"resource","resource":{"uri":"demo://resource/dynamic/text/2","mimeType":"text/plain","text":"Resource 2: This is a plaintext resource"}},
			{"type":"text","text":"You can access this resource using the URI: demo://resource/dynamic/text/2"}]}`},
		{"get-resource-reference", map[string]any{"resourceId": 0}, `{"content":[{"type":"text","text":"Invalid resourceId: 0. Must be a finite positive integer."}],"isError":true}`},
		{"trigger-long-running-operation", map[string]any{"duration": 0.1, "steps": 2}, `{"content":[{"type":"text","text":"Long running operation completed. Duration: 0.1 seconds, Steps: 2."}]}`},
		{"whoami", map[string]any{}, `{"content":[{"type":"text","text":"{\"userId\":\"user_1\",\"header\":\"\"}"}]}`},
		{"fail", nil, `{"content":[{"type":"text","text":"it failed"}],"isError":true}`},
		{"sleep", map[string]any{"ms": 1}, `{"content":[{"type":"text","text":"slept"}]}`},
	} {
		res := call(t, cs, tc.tool, tc.args)
		// Only what the reference server's results have too: newer protocol
		// versions add _meta and resultType.
		got, err := json.Marshal(struct {
			Content []sdk.Content `json:"content"`
			IsError bool          `json:"isError,omitempty"`
		}{res.Content, res.IsError})
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
			t.Fatalf("%s: bad want: %v", tc.tool, err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s %v (-want +got):\n%s", tc.tool, tc.args, diff)
		}
	}
}

func TestTinyImage(t *testing.T) {
	res := call(t, inMemory(t, mcptest.Options{}), "get-tiny-image", nil)
	if len(res.Content) != 3 {
		t.Fatalf("%d parts, want text, image, text", len(res.Content))
	}
	img, ok := res.Content[1].(*sdk.ImageContent)
	if !ok || img.MIMEType != "image/png" {
		t.Fatalf("second part %#v", res.Content[1])
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil || cfg.Width != 4 || cfg.Height != 4 {
		t.Errorf("image: %+v %v", cfg, err)
	}
	if got := text(res); got != "Here's the image you requested:\nThe image above is a tiny test image." {
		t.Errorf("texts %q", got)
	}
}

func TestOptions(t *testing.T) {
	var kept *sdk.Server
	stats := &mcptest.Stats{}
	cs := inMemory(t, mcptest.Options{
		Name:         "neo",
		Instructions: "Use the NEO tools.",
		ExtraTools: []mcptest.Tool{{
			Tool: &sdk.Tool{Name: "neo-count", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "42"}}}, nil
			},
		}},
		Configure: func(s *sdk.Server) { kept = s },
		Stats:     stats,
	})
	ini := cs.InitializeResult()
	if ini.ServerInfo.Name != "neo" || ini.Instructions != "Use the NEO tools." {
		t.Errorf("initialize: %+v %q", ini.ServerInfo, ini.Instructions)
	}
	if kept == nil {
		t.Fatal("Configure was not called")
	}
	if got := text(call(t, cs, "neo-count", nil)); got != "42" {
		t.Errorf("extra tool: %q", got)
	}
	call(t, cs, "echo", map[string]any{"message": "a"})
	call(t, cs, "echo", map[string]any{"message": "b"})
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "no-such-tool"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
	snap := stats.Snapshot()
	want := map[string]int{"neo-count": 1, "echo": 2, "no-such-tool": 1}
	if diff := cmp.Diff(want, snap.Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if stats.Calls("echo") != 2 || stats.Cancelled() != 0 || stats.Interrupted() != 0 {
		t.Errorf("stats %+v", snap)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := stats.Await(ctx, func(s mcptest.Snapshot) bool { return s.Cancelled > 0 }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("await that cannot hold: %v", err)
	}
}

// header adds a header to every request.
type header struct{ key, value string }

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func TestStartHTTP(t *testing.T) {
	hc := &http.Client{Transport: header{"X-User", "ann"}}
	for _, tc := range []struct {
		transport string
		suffix    string
		client    func(url string) sdk.Transport
	}{
		{mcptest.TransportStreamableHTTP, "/mcp", func(url string) sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}
		}},
		{mcptest.TransportSSE, "/sse", func(url string) sdk.Transport {
			return &sdk.SSEClientTransport{Endpoint: url, HTTPClient: hc}
		}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			url := mcptest.Start(t, tc.transport, mcptest.Options{Instructions: "hello"})
			if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, tc.suffix) {
				t.Errorf("URL %q", url)
			}
			cs := connect(t, withUserID(tc.client(url), "user_ann"))
			if got := cs.InitializeResult().Instructions; got != "hello" {
				t.Errorf("instructions %q", got)
			}
			if got := text(call(t, cs, "echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
				t.Errorf("echo: %q", got)
			}
			if got := text(call(t, cs, "whoami", nil)); got != `{"userId":"user_ann","header":"ann"}` {
				t.Errorf("whoami: %s", got)
			}
		})
	}
}

// TestStartWebSocket talks to the websocket endpoint by hand, so that the
// server is checked apart from Relay's client.
func TestStartWebSocket(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportWebSocket, mcptest.Options{Instructions: "hello"})
	if !strings.HasPrefix(url, "ws://127.0.0.1:") || !strings.HasSuffix(url, "/") {
		t.Errorf("URL %q", url)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{"mcp"},
		HTTPHeader:   http.Header{"X-User": {"bob"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if ws.Subprotocol() != "mcp" {
		t.Errorf("subprotocol %q", ws.Subprotocol())
	}
	exchange := func(req string) map[string]any {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(req, `"id"`) {
			return nil
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var resp map[string]any
		if err := json.Unmarshal(data, &resp); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return resp
	}
	ini := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if got, _ := ini["result"].(map[string]any)["instructions"].(string); got != "hello" {
		t.Errorf("initialize: %v", ini)
	}
	exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	echo := exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	if diff := cmp.Diff(map[string]any{"jsonrpc": "2.0", "id": 2.0, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Echo: hi"}}}}, echo); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}
	who := exchange(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{},"userId":"user_bob"}}`)
	if got := who["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; got != `{"userId":"user_bob","header":"bob"}` {
		t.Errorf("whoami: %v", who)
	}
	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestStartUnknownTransport(t *testing.T) {
	if _, err := mcptest.Endpoint("http://127.0.0.1:1", "carrier-pigeon"); err == nil {
		t.Error("no error for an unknown transport")
	}
}

// buildCommand builds cmd/mcptestserver once per test binary run.
func buildCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/mcptestserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := buildCommand(t)

	t.Run("stdio", func(t *testing.T) {
		cs := connect(t, withUserID(&sdk.CommandTransport{Command: exec.Command(bin, "-instructions", "from the command line")}, "user_cli"))
		if got := cs.InitializeResult().Instructions; got != "from the command line" {
			t.Errorf("instructions %q", got)
		}
		if got := text(call(t, cs, "echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
			t.Errorf("echo: %q", got)
		}
		if got := text(call(t, cs, "whoami", nil)); got != `{"userId":"user_cli","header":""}` {
			t.Errorf("whoami: %s", got)
		}
	})

	t.Run("streamable-http", func(t *testing.T) {
		cmd := exec.Command(bin, "-transport", "streamable-http")
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the URL: %v", err)
		}
		url := strings.TrimSpace(line)
		if !strings.HasSuffix(url, "/mcp") {
			t.Errorf("URL %q", url)
		}
		cs := connect(t, &sdk.StreamableClientTransport{Endpoint: url})
		if got := text(call(t, cs, "echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
			t.Errorf("echo: %q", got)
		}
	})
}
