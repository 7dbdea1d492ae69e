package mcp_test

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

// wsClient connects an sdk client to url over a WebSocketTransport and closes
// it at cleanup.
func wsClient(t *testing.T, url string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return wsClientWith(t, &mcp.WebSocketTransport{URL: url}, opts)
}

func wsClientWith(t *testing.T, tr sdk.Transport, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "relay-test", Version: "0"}, opts).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// wsCall calls a tool and returns its text parts joined by newlines.
func wsCall(t *testing.T, cs *sdk.ClientSession, tool string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	return wsText(res)
}

func wsText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestWebSocketGoServer(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportWebSocket, mcptest.Options{Instructions: "Be brief."})
	cs := wsClient(t, url, nil)

	if got := cs.InitializeResult().Instructions; got != "Be brief." {
		t.Errorf("instructions %q", got)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(","+strings.Join(names, ",")+",", ",echo,") {
		t.Errorf("tools/list has no echo: %v", names)
	}
	if got := wsCall(t, cs, "echo", map[string]any{"message": "hi"}); got != "Echo: hi" {
		t.Errorf("echo: %q", got)
	}
	// Far above the websocket library's default limit of 32 KiB per message.
	big := strings.Repeat("x", 4<<20)
	if got := wsCall(t, cs, "echo", map[string]any{"message": big}); got != "Echo: "+big {
		t.Errorf("echo of 4 MiB came back with %d bytes", len(got))
	}
}

func TestWebSocketConcurrentCalls(t *testing.T) {
	cs := wsClient(t, mcptest.Start(t, mcptest.TransportWebSocket, mcptest.Options{}), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			msg := fmt.Sprintf("message %d", i)
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
			if err != nil {
				errs <- err
				return
			}
			if got := wsText(res); got != "Echo: "+msg {
				errs <- fmt.Errorf("call %d got %q", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestWebSocketProgress(t *testing.T) {
	var mu sync.Mutex
	var progress []float64
	cs := wsClient(t, mcptest.Start(t, mcptest.TransportWebSocket, mcptest.Options{}), &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if req.Params.ProgressToken == "op-1" {
				progress = append(progress, req.Params.Progress)
			}
		},
	})
	params := &sdk.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.25, "steps": 5}}
	params.SetProgressToken("op-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wsText(res), "Long running operation completed. Duration: 0.25 seconds, Steps: 5."; got != want {
		t.Errorf("result %q, want %q", got, want)
	}
	// The client handles notifications apart from results, so the last may
	// come in after the result although it was sent before.
	poll.Until(t, 2*time.Second, "progress [1 2 3 4 5]", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(progress) == "[1 2 3 4 5]"
	})
}

func TestWebSocketCancelReachesServer(t *testing.T) {
	stats := &mcptest.Stats{}
	cs := wsClient(t, mcptest.Start(t, mcptest.TransportWebSocket, mcptest.Options{Stats: stats}), nil)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	began := time.Now()
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 10000}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("cancelled call returned after %s", d)
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer wcancel()
	if _, err := stats.Await(wctx, func(s mcptest.Snapshot) bool { return s.Cancelled == 1 && s.Interrupted == 1 }); err != nil {
		t.Fatal(err)
	}
	// The connection survives the cancellation.
	if got := wsCall(t, cs, "echo", map[string]any{"message": "still here"}); got != "Echo: still here" {
		t.Errorf("after cancel: %q", got)
	}
}

// wsServer serves mcptest servers over websocket and returns the URL and the
// server, whose sessions the test can watch and close.
func wsServer(t *testing.T) (string, *sdk.Server) {
	t.Helper()
	srv := mcptest.NewServer(mcptest.Options{})
	hs := httptest.NewServer(mcptest.WebSocketHandler(func() *sdk.Server { return srv }))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/", srv
}

func wsSessions(srv *sdk.Server) int {
	n := 0
	for range srv.Sessions() {
		n++
	}
	return n
}

func TestWebSocketClientCloseEndsServerSession(t *testing.T) {
	url, srv := wsServer(t)
	cs := wsClient(t, url, nil)
	if n := wsSessions(srv); n != 1 {
		t.Fatalf("%d server sessions, want 1", n)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	poll.Until(t, 3*time.Second, "end of the server session after the client's", func() bool { return wsSessions(srv) == 0 })
}

func TestWebSocketServerCloseEndsClientSession(t *testing.T) {
	url, srv := wsServer(t)
	cs := wsClient(t, url, nil)
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	for ss := range srv.Sessions() {
		if err := ss.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("a normal close should end the client session cleanly: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the client session outlived the server's close")
	}
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}); !errors.Is(err, sdk.ErrConnectionClosed) {
		t.Errorf("call after close: %v, want ErrConnectionClosed", err)
	}
}

// wsUserID adds a top-level userId to the params of outgoing tools/call
// requests, as Relay does on user-scoped connections.
type wsUserID struct {
	sdk.Transport
	userID string
}

func (t wsUserID) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return wsUserIDConn{c, t.userID}, err
}

type wsUserIDConn struct {
	sdk.Connection
	userID string
}

func (c wsUserIDConn) Write(ctx context.Context, msg jsonrpc.Message) error {
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

func TestWebSocketHeadersAndUserID(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportWebSocket, mcptest.Options{})
	tr := &mcp.WebSocketTransport{URL: url, Header: http.Header{"X-User": {"ann"}}}
	cs := wsClientWith(t, wsUserID{tr, "user_ann"}, nil)
	var who mcptest.Whoami
	if err := json.Unmarshal([]byte(wsCall(t, cs, "whoami", map[string]any{})), &who); err != nil {
		t.Fatal(err)
	}
	if who != (mcptest.Whoami{UserID: "user_ann", Header: "ann"}) {
		t.Errorf("server saw %+v", who)
	}
}

func TestWebSocketHandshakeContextBoundsOnlyTheHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Options{})
		client := serveMem(t, mcptest.Handler(func() *sdk.Server { return srv }))
		t.Cleanup(func() {
			for ss := range srv.Sessions() {
				_ = ss.Close()
			}
		})
		ctx, cancel := context.WithCancel(t.Context())
		tr := &mcp.WebSocketTransport{URL: "ws://mem" + mcptest.WebSocketPath, HTTPClient: client}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "relay-test", Version: "0"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		cancel()
		synctest.Wait() // whatever the end of ctx sets off has run
		if got := wsCall(t, cs, "echo", map[string]any{"message": "later"}); got != "Echo: later" {
			t.Errorf("echo after the connect context ended: %q", got)
		}
	})
}

func TestWebSocketHandshakeFailures(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/refuse", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unsupported subprotocol", http.StatusBadRequest)
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		wsSwitch(t, w, r, "graphql-ws")
	})
	mux.HandleFunc("/none", func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_, _, _ = ws.Read(context.Background()) // until the client closes
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	base := "ws" + strings.TrimPrefix(hs.URL, "http")

	for _, tc := range []struct {
		name, path string
		want       []string // in the error; none: success
	}{
		{"not a websocket endpoint", "/missing?token=secret", []string{"404 Not Found", "/missing"}},
		{"refuses the subprotocol", "/refuse", []string{"400 Bad Request", "unsupported subprotocol"}},
		{"picks another subprotocol", "/other", []string{`subprotocol "graphql-ws"`, `not "mcp"`}},
		{"names no subprotocol", "/none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := (&mcp.WebSocketTransport{URL: base + tc.path}).Connect(t.Context())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				if err := conn.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				return
			}
			if err == nil {
				conn.Close()
				t.Fatal("connected")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the URL's query", err)
			}
		})
	}
}

// wsSwitch answers a websocket handshake by hand, naming subprotocol.
func wsSwitch(t *testing.T, w http.ResponseWriter, r *http.Request, subprotocol string) {
	h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(h[:]), subprotocol)
	_ = buf.Flush()
}

// wsRaw serves one websocket connection with handle and returns a connection
// to it from WebSocketTransport.
func wsRaw(t *testing.T, handle func(ws *websocket.Conn)) sdk.Connection {
	t.Helper()
	hs := httptest.NewServer(wsRawHandler(handle))
	t.Cleanup(hs.Close)
	return wsRawOn(t, nil, hs.URL)
}

// wsRawHandler accepts a websocket and gives it to handle.
func wsRawHandler(handle func(ws *websocket.Conn)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		handle(ws)
	})
}

// wsRawOn connects to url with client (nil: http.DefaultClient); the
// connection is closed when the test ends.
func wsRawOn(t *testing.T, client *http.Client, url string) sdk.Connection {
	t.Helper()
	conn, err := (&mcp.WebSocketTransport{URL: url, HTTPClient: client}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestWebSocketBatch(t *testing.T) {
	conn := wsRaw(t, func(ws *websocket.Conn) {
		ctx := context.Background()
		_ = ws.Write(ctx, websocket.MessageText, []byte(`[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","id":7,"result":{}}]`))
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"notifications/c"}`+"\n"))
		_ = ws.Close(websocket.StatusNormalClosure, "")
	})
	var got []string
	for {
		msg, err := conn.Read(t.Context())
		if err != nil {
			if err != io.EOF {
				t.Errorf("after %v: %v, want io.EOF", got, err)
			}
			break
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			got = append(got, m.Method)
		case *jsonrpc.Response:
			got = append(got, fmt.Sprint(m.ID.Raw()))
		}
	}
	if fmt.Sprint(got) != "[notifications/a 7 notifications/c]" {
		t.Errorf("read %v", got)
	}
}

func TestWebSocketCloseUnblocksRead(t *testing.T) {
	synctest.Test(t, testWebSocketCloseUnblocksRead)
}

func testWebSocketCloseUnblocksRead(t *testing.T) {
	status := make(chan websocket.StatusCode, 1)
	conn := wsRawOn(t, serveMem(t, wsRawHandler(func(ws *websocket.Conn) {
		_, _, err := ws.Read(context.Background())
		status <- websocket.CloseStatus(err)
	})), "ws://mem/")
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		read <- err
	}()
	synctest.Wait() // the read is blocked on the connection
	if err := conn.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-read:
		if err != io.EOF {
			t.Errorf("pending read: %v, want io.EOF", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if got := <-status; got != websocket.StatusNormalClosure {
		t.Errorf("server saw close status %v", got)
	}
	if err := conn.Write(t.Context(), &jsonrpc.Request{Method: "ping"}); !errors.Is(err, sdk.ErrConnectionClosed) {
		t.Errorf("write after close: %v", err)
	}
	if err := conn.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestWebSocketAbnormalClose(t *testing.T) {
	t.Run("close frame with an error status", func(t *testing.T) {
		conn := wsRaw(t, func(ws *websocket.Conn) {
			_ = ws.Close(websocket.StatusPolicyViolation, "token expired")
		})
		_, err := conn.Read(t.Context())
		if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "token expired") {
			t.Errorf("read after a policy-violation close: %v", err)
		}
	})
	t.Run("no close frame", func(t *testing.T) {
		conn := wsRaw(t, func(ws *websocket.Conn) { _ = ws.CloseNow() })
		_, err := conn.Read(t.Context())
		if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			t.Errorf("read after the connection dropped: %v, want an unexpected EOF", err)
		}
	})
}

func TestWebSocketSupergateway(t *testing.T) {
	gateway := mcptest.Peer(t, "PEER_SUPERGATEWAY")
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	port := mcptest.FreePort(t)
	mcptest.StartProcess(t, port, nil, "node", gateway,
		"--stdio", "node "+everything+" stdio", "--outputTransport", "ws", "--port", fmt.Sprint(port), "--logLevel", "none")
	cs := wsClient(t, fmt.Sprintf("ws://127.0.0.1:%d/message", port), nil)
	if got := wsCall(t, cs, "echo", map[string]any{"message": "hi"}); got != "Echo: hi" {
		t.Errorf("echo: %q", got)
	}
	if got := wsCall(t, cs, "get-sum", map[string]any{"a": 2, "b": 3}); got != "The sum of 2 and 3 is 5." {
		t.Errorf("get-sum: %q", got)
	}
}

// TestWebSocketConnAcceptedEnd runs NewWebSocketConn on the end of a websocket
// that websocket.Accept returns, as mcptest's server does.
func TestWebSocketConnAcceptedEnd(t *testing.T) {
	got := make(chan string, 8)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		conn := mcp.NewWebSocketConn(ws)
		defer conn.Close()
		defer close(got)
		if err := conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/hello"}); err != nil {
			got <- fmt.Sprint("write: ", err)
			return
		}
		for {
			msg, err := conn.Read(context.Background())
			if err != nil {
				got <- fmt.Sprint(err)
				return
			}
			switch m := msg.(type) {
			case *jsonrpc.Request:
				got <- m.Method
			case *jsonrpc.Response:
				got <- fmt.Sprint(m.ID.Raw())
			}
		}
	}))
	defer hs.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	typ, data, err := ws.Read(ctx)
	if err != nil || typ != websocket.MessageText || !strings.Contains(string(data), `"notifications/hello"`) {
		t.Errorf("client read %v %s: %v", typ, data, err)
	}
	_ = ws.Write(ctx, websocket.MessageText, []byte(`[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","id":7,"result":{}}]`))
	_ = ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"notifications/c"}`))
	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("client close: %v", err)
	}
	var seen []string
collect:
	for {
		select {
		case s, ok := <-got:
			if !ok {
				break collect
			}
			seen = append(seen, s)
		case <-ctx.Done():
			t.Fatalf("server read %v, then nothing", seen)
		}
	}
	if fmt.Sprint(seen) != "[notifications/a 7 notifications/c EOF]" {
		t.Errorf("server read %v", seen)
	}
}
