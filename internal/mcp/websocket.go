package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/redact"
)

// wsSubprotocol is the websocket subprotocol of MCP servers: the one of the
// MCP TypeScript SDK's websocket transport, which LibreChat and supergateway use.
const wsSubprotocol = "mcp"

// wsReadLimit bounds one incoming message. Tool results carrying images or
// files are large, but a peer that sends more than this is broken.
const wsReadLimit = 32 << 20

// wsWriteTimeout bounds writing one message once it has started. A frame that
// is half written cannot be abandoned without corrupting the stream, so a write
// is not cut short by its caller's context; a peer that does not take a message
// in this long is gone, and the connection is closed.
const wsWriteTimeout = 30 * time.Second

// WebSocketTransport connects to an MCP server over a websocket: each JSON-RPC
// message is one text frame, under the subprotocol "mcp".
//
// A WebSocketTransport is used for one connection, like every [sdk.Transport].
type WebSocketTransport struct {
	// URL is the server's ws:// or wss:// address (http:// and https:// are
	// read as ws:// and wss://).
	URL string
	// Header is sent with the opening handshake.
	Header http.Header
	// HTTPClient performs the handshake; nil means http.DefaultClient. Its
	// Timeout, if any, bounds the handshake only.
	HTTPClient *http.Client
}

// Connect performs the websocket handshake and returns the connection. ctx
// bounds the handshake only; the connection lives until it is closed.
//
// A server that does not answer 101 Switching Protocols fails with an error
// naming the HTTP status; a server that picks another subprotocol fails too. A
// server that accepts without naming a subprotocol is accepted.
func (t *WebSocketTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	ws, resp, err := websocket.Dial(ctx, t.URL, &websocket.DialOptions{
		HTTPClient:   t.HTTPClient,
		HTTPHeader:   t.Header.Clone(),
		Subprotocols: []string{wsSubprotocol},
	})
	if err != nil {
		return nil, handshakeError(safeURL(t.URL), resp, err)
	}
	return NewWebSocketConn(ws), nil
}

// handshakeError says why a handshake failed in terms of what the server did.
func handshakeError(u string, resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("connecting to MCP websocket %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		msg := fmt.Sprintf("connecting to MCP websocket %s: server answered HTTP %s instead of switching to websocket", u, resp.Status)
		if resp.Body != nil {
			// The websocket library keeps the first KiB of the body for us.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			if s := strings.Join(strings.Fields(string(body)), " "); s != "" {
				msg += ": " + s
			}
		}
		return errors.New(msg)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "" && !strings.EqualFold(p, wsSubprotocol) {
		return fmt.Errorf("connecting to MCP websocket %s: server chose subprotocol %q, not %q", u, p, wsSubprotocol)
	}
	return fmt.Errorf("connecting to MCP websocket %s: %w", u, err)
}

// safeURL is a URL as error messages quote it: the user info and query masked
// (either may carry a secret substituted from the environment), the path kept
// for diagnostics but for segments that look like tokens.
func safeURL(raw string) string {
	return redact.URL(raw, true)
}

// NewWebSocketConn returns an [sdk.Connection] over ws, either end of an
// established websocket: from [websocket.Dial] (as [WebSocketTransport] does) or
// from [websocket.Accept]. The connection owns ws from then on.
//
// Each JSON-RPC message is one text frame. An incoming frame may hold a batch,
// whose messages Read returns one by one. A frame that is not JSON-RPC, or is
// larger than 32 MiB (the read limit of ws is set to that), makes this and
// every later Read fail.
//
// Read returns io.EOF once the peer closed the websocket normally (status 1000,
// 1001 or none), an error wrapping io.ErrUnexpectedEOF if the connection
// dropped without a close frame, and an error naming the status and reason of
// any other close.
//
// Write sends one message as one text frame; it is safe for concurrent use.
// Waiting for another Write to finish honours ctx, but once a frame has started
// it is not cut short by ctx: it is bounded by 30 seconds instead, after which
// the connection is closed.
//
// Close sends a normal close frame, waits briefly for the peer's answer and
// closes the connection. A pending Read returns io.EOF at once, and a later
// Write fails with [sdk.ErrConnectionClosed]. Close may be called more than
// once; it reports no error when the peer had already gone.
//
// SessionID is empty: a websocket connection has no MCP session id.
func NewWebSocketConn(ws *websocket.Conn) sdk.Connection {
	ws.SetReadLimit(wsReadLimit)
	c := &wsConn{
		ws:        ws,
		incoming:  make(chan wsFrame),
		closed:    make(chan struct{}),
		writeTurn: make(chan struct{}, 1),
	}
	go c.readLoop()
	return c
}

// wsConn is the [sdk.Connection] of [NewWebSocketConn].
//
// One goroutine reads frames and decodes them; Read takes its output, so that
// Close can unblock a pending Read at once (the sdk requires it) without
// waiting for the closing handshake.
type wsConn struct {
	ws *websocket.Conn

	incoming chan wsFrame
	closed   chan struct{}

	readMu  sync.Mutex
	queue   []jsonrpc.Message // the rest of a batch
	readErr error             // once set, every Read returns it

	writeTurn chan struct{} // one writer at a time; waiting for a turn honours the caller's context

	closeOnce sync.Once
	closeErr  error
}

// wsFrame is what one incoming websocket message held.
type wsFrame struct {
	msgs []jsonrpc.Message
	err  error
}

func (c *wsConn) readLoop() {
	for {
		var f wsFrame
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			f.err = wsReadError(err)
		} else {
			f.msgs, f.err = DecodeMessages(data)
		}
		select {
		case c.incoming <- f:
		case <-c.closed:
			return
		}
		if f.err != nil {
			return
		}
	}
}

// wsReadError maps the end of a websocket to what the sdk expects: io.EOF for
// a clean close, which ends the session without an error, and a descriptive
// error for anything else.
func wsReadError(err error) error {
	switch websocket.CloseStatus(err) {
	case -1:
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		return io.EOF
	default:
		return fmt.Errorf("MCP websocket closed by the peer: %w", err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The peer went away without a close frame: not a clean end.
		return fmt.Errorf("%w: MCP websocket connection dropped without a close frame", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("reading MCP websocket message: %w", err)
}

// DecodeMessages decodes what one websocket message or HTTP body holds: a
// JSON-RPC message, or a batch of them (a non-empty JSON array), whose
// messages it returns in order. Leading and trailing white space is ignored.
func DecodeMessages(data []byte) ([]jsonrpc.Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, fmt.Errorf("decoding JSON-RPC batch: %w", err)
		}
		if len(raws) == 0 {
			return nil, errors.New("decoding JSON-RPC batch: empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			msg, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, fmt.Errorf("decoding JSON-RPC batch: %w", err)
			}
			msgs = append(msgs, msg)
		}
		return msgs, nil
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, fmt.Errorf("decoding JSON-RPC message: %w", err)
	}
	return []jsonrpc.Message{msg}, nil
}

// Read returns the next message; the messages of a batch come one by one. After
// Close, or once the peer closed the websocket normally, it returns io.EOF.
func (c *wsConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		return msg, nil
	}
	if c.readErr != nil {
		return nil, c.readErr
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case f := <-c.incoming:
		if f.err != nil {
			c.readErr = f.err
			return nil, f.err
		}
		c.queue = f.msgs[1:]
		return f.msgs[0], nil
	}
}

// Write sends msg as one text frame. It is safe for concurrent use.
func (c *wsConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding JSON-RPC message: %w", err)
	}
	select {
	case c.writeTurn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return sdk.ErrConnectionClosed
	}
	defer func() { <-c.writeTurn }()
	// The websocket library closes the connection when a write's context
	// ends, so the write gets its own bound rather than the caller's.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wsWriteTimeout)
	defer cancel()
	if err := c.ws.Write(wctx, websocket.MessageText, data); err != nil {
		if errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("%w: %w", sdk.ErrConnectionClosed, err)
		}
		return fmt.Errorf("writing MCP websocket message: %w", err)
	}
	return nil
}

// Close sends a normal close frame, waits briefly for the peer's answer and
// closes the connection. A pending Read returns io.EOF at once. Close may be
// called more than once.
func (c *wsConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		err := c.ws.Close(websocket.StatusNormalClosure, "")
		if err != nil && !peerGone(err) {
			c.closeErr = fmt.Errorf("closing MCP websocket: %w", err)
		}
	})
	return c.closeErr
}

// peerGone reports whether a close failed only because the connection was
// already closed or broken, which is no failure of Close.
func peerGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// SessionID is empty: a websocket connection has no MCP session id.
func (c *wsConn) SessionID() string { return "" }
