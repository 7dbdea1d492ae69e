package mcptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// readLimit bounds one incoming websocket message, as Relay's client does.
const readLimit = 32 << 20

// WebSocketHandler serves MCP over websockets: it upgrades each request
// (choosing the subprotocol "mcp" when the client offers it) and runs one
// server session per websocket, on a server from newServer, until either side
// closes. Each JSON-RPC message is one text frame.
//
// Requests reaching tool handlers carry the handshake's header in
// [sdk.RequestExtra], as with the sdk's streamable handler.
func WebSocketHandler(newServer func() *sdk.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
		if err != nil {
			return // Accept has answered the request
		}
		ws.SetReadLimit(readLimit)
		conn := newServerConn(ws, r.Header.Clone())
		ss, err := newServer().Connect(context.WithoutCancel(r.Context()), connTransport{conn}, nil)
		if err != nil {
			_ = ws.Close(websocket.StatusInternalError, "starting MCP session failed")
			return
		}
		_ = ss.Wait()
	})
}

// connTransport hands out a connection made beforehand.
type connTransport struct{ conn sdk.Connection }

func (t connTransport) Connect(context.Context) (sdk.Connection, error) { return t.conn, nil }

// serverConn is an [sdk.Connection] over the server end of a websocket.
type serverConn struct {
	ws     *websocket.Conn
	header http.Header // of the handshake

	incoming chan serverFrame
	closed   chan struct{}

	readMu  sync.Mutex
	queue   []jsonrpc.Message
	readErr error

	writeMu sync.Mutex

	closeOnce sync.Once
}

type serverFrame struct {
	msgs []jsonrpc.Message
	err  error
}

func newServerConn(ws *websocket.Conn, header http.Header) *serverConn {
	c := &serverConn{
		ws:       ws,
		header:   header,
		incoming: make(chan serverFrame),
		closed:   make(chan struct{}),
	}
	go c.readLoop()
	return c
}

func (c *serverConn) readLoop() {
	for {
		var f serverFrame
		_, data, err := c.ws.Read(context.Background())
		switch {
		case websocket.CloseStatus(err) == websocket.StatusNormalClosure,
			websocket.CloseStatus(err) == websocket.StatusGoingAway,
			websocket.CloseStatus(err) == websocket.StatusNoStatusRcvd:
			f.err = io.EOF
		case err != nil:
			f.err = fmt.Errorf("reading websocket message: %w", err)
		default:
			f.msgs, f.err = decodeMessages(data)
			for _, m := range f.msgs {
				if req, ok := m.(*jsonrpc.Request); ok {
					req.Params = liftParams(req.Params, c.header.Get("X-User"))
					req.Extra = &sdk.RequestExtra{Header: c.header}
				}
			}
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

func (c *serverConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
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

func (c *serverConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return sdk.ErrConnectionClosed
	default:
	}
	// Detached from ctx: the websocket library closes the connection when a
	// write's context ends, and a cancelled request must not end the session.
	return c.ws.Write(context.WithoutCancel(ctx), websocket.MessageText, data)
}

func (c *serverConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
	})
	return nil
}

func (c *serverConn) SessionID() string { return "" }
