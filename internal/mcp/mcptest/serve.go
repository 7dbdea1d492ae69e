package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
)

// Transport names, as Relay's config writes them.
const (
	TransportWebSocket      = "websocket"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Paths of the endpoints [Handler] serves.
const (
	StreamablePath = "/mcp"
	SSEPath        = "/sse"
	WebSocketPath  = "/"
)

// Start serves a new test server on a local port for the life of the test and
// returns the URL a client configures: ws://HOST/ for "websocket",
// http://HOST/mcp for "streamable-http" (or "http"), http://HOST/sse for
// "sse". All three endpoints are served whichever transport is named; one
// server (see [Options.Configure]) serves every session. At cleanup the
// sessions are closed, then the listener.
func Start(t testing.TB, transport string, opts Options) string {
	t.Helper()
	srv := NewServer(opts)
	hs := httptest.NewServer(Handler(func() *sdk.Server { return srv }))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	})
	u, err := Endpoint(hs.URL, transport)
	if err != nil {
		t.Fatalf("mcptest.Start: %v", err)
	}
	return u
}

// Endpoint returns the URL of transport's endpoint on a server serving
// [Handler] at base (http://HOST:PORT).
func Endpoint(base, transport string) (string, error) {
	base = strings.TrimSuffix(base, "/")
	switch transport {
	case TransportWebSocket:
		switch {
		case strings.HasPrefix(base, "http://"):
			return "ws://" + strings.TrimPrefix(base, "http://") + WebSocketPath, nil
		case strings.HasPrefix(base, "https://"):
			return "wss://" + strings.TrimPrefix(base, "https://") + WebSocketPath, nil
		}
		return base + WebSocketPath, nil
	case TransportStreamableHTTP, "http":
		return base + StreamablePath, nil
	case TransportSSE:
		return base + SSEPath, nil
	}
	return "", fmt.Errorf("unknown MCP transport %q (want %s, %s or %s)", transport, TransportWebSocket, TransportStreamableHTTP, TransportSSE)
}

// Handler serves servers from newServer over streamable HTTP at /mcp, SSE at
// /sse, and websocket on every other path.
func Handler(newServer func() *sdk.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(StreamablePath, StreamableHandler(newServer))
	mux.Handle(SSEPath, SSEHandler(newServer))
	mux.Handle(WebSocketPath, WebSocketHandler(newServer))
	return mux
}

// StreamableHandler is the sdk's streamable HTTP handler over servers from
// newServer (called once per new session), with the top-level "userId" of
// tools/call params and the X-User header made visible to tool handlers.
func StreamableHandler(newServer func() *sdk.Server) http.Handler {
	return liftBodies(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return newServer() }, nil))
}

// SSEHandler is the sdk's SSE handler (the 2024-11-05 transport: GET opens the
// stream, POSTs carry messages) over servers from newServer (called once per
// stream), with the top-level "userId" of tools/call params and the X-User
// header made visible to tool handlers.
func SSEHandler(newServer func() *sdk.Server) http.Handler {
	return liftBodies(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return newServer() }, nil))
}

// readLimit bounds one POSTed body, as Relay's client bounds one websocket
// message.
const readLimit = 32 << 20

// liftBodies rewrites POSTed JSON-RPC requests so that what the sdk drops
// reaches tool handlers: see liftParams.
func liftBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, readLimit))
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if lifted, ok := liftBody(body, r.Header.Get("X-User")); ok {
			body = lifted
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", fmt.Sprint(len(body)))
		next.ServeHTTP(w, r)
	})
}

// liftBody applies liftParams to every request in a body holding a JSON-RPC
// message or batch. It reports false, leaving the body to the sdk, when there
// is nothing to change or the body is not JSON-RPC.
func liftBody(body []byte, xUser string) ([]byte, bool) {
	msgs, err := mcp.DecodeMessages(body)
	if err != nil {
		return nil, false
	}
	changed := false
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			p := liftParams(req.Params, xUser)
			if !bytes.Equal(p, req.Params) {
				req.Params = p
				changed = true
			}
		}
	}
	if !changed {
		return nil, false
	}
	raws := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		if raws[i], err = jsonrpc.EncodeMessage(m); err != nil {
			return nil, false
		}
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		out, err := json.Marshal(raws)
		return out, err == nil
	}
	return raws[0], true
}

// liftParams copies the top-level "userId" of a request's params, and the
// X-User header, into params._meta, where tool handlers can read them (see
// [UserID] and [XUser]): the sdk decodes params into fixed structs and drops
// unknown fields. Params that are not a JSON object are left alone.
func liftParams(params json.RawMessage, xUser string) json.RawMessage {
	if len(params) == 0 || params[0] != '{' {
		return params
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil {
		return params
	}
	userID, hasUserID := fields["userId"]
	if !hasUserID && xUser == "" {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return params
		}
	}
	if hasUserID {
		meta[metaUserID] = userID
	}
	if xUser != "" {
		meta[metaXUser], _ = json.Marshal(xUser)
	}
	var err error
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return params
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return out
}

// CaptureUserID wraps a transport (stdio, in-memory, …) so that the top-level
// "userId" of incoming requests' params reaches tool handlers, as it does over
// this package's HTTP and websocket handlers: see [UserID].
func CaptureUserID(t sdk.Transport) sdk.Transport {
	return captureTransport{t}
}

type captureTransport struct{ inner sdk.Transport }

func (t captureTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return captureConn{Connection: c}, nil
}

// captureConn applies liftParams to the requests read from a connection. With
// a header (of a websocket's handshake), it lifts the header's X-User too and
// puts the header in each request's [sdk.RequestExtra].
type captureConn struct {
	sdk.Connection
	header http.Header
}

func (c captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil {
		req.Params = liftParams(req.Params, c.header.Get("X-User"))
		if c.header != nil {
			req.Extra = &sdk.RequestExtra{Header: c.header}
		}
	}
	return m, err
}
