package mcptest

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
)

// WebSocketHandler serves MCP over websockets: it upgrades each request
// (choosing the subprotocol "mcp" when the client offers it) and runs one
// server session per websocket, on a server from newServer, until either side
// closes. The connection is Relay's own ([mcp.NewWebSocketConn]): each
// JSON-RPC message is one text frame.
//
// Requests reaching tool handlers carry the handshake's header in
// [sdk.RequestExtra], as with the sdk's streamable handler, and its X-User
// header and their params' top-level "userId" in params._meta (see [XUser] and
// [UserID]).
func WebSocketHandler(newServer func() *sdk.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
		if err != nil {
			return // Accept has answered the request
		}
		conn := captureConn{Connection: mcp.NewWebSocketConn(ws), header: r.Header.Clone()}
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
