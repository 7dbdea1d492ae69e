package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemaTransport keeps the input schemas of a server's tools/list answers as
// the server wrote them. The go-sdk decodes a schema into a map, which loses
// the order of its keys, and the model is to see the schema the server
// published, key order included (docs/mcp.md "Tool schemas").
type schemaTransport struct {
	sdk.Transport
	schemas *rawSchemas
}

func (t *schemaTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &schemaConn{Connection: c, schemas: t.schemas, pending: map[string]bool{}}, nil
}

// rawSchemas are a session's tool input schemas as last listed, by tool name,
// compacted but otherwise as sent.
type rawSchemas struct {
	mu     sync.Mutex
	byName map[string]json.RawMessage
}

// keep records the schemas of one tools/list result.
func (r *rawSchemas) keep(result json.RawMessage) {
	var page struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return // the go-sdk reports a result it cannot read
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[string]json.RawMessage{}
	}
	for _, t := range page.Tools {
		var b bytes.Buffer
		if len(t.InputSchema) == 0 || json.Compact(&b, t.InputSchema) != nil {
			delete(r.byName, t.Name)
			continue
		}
		r.byName[t.Name] = b.Bytes()
	}
}

// get returns the schema of the tool name as the server sent it.
func (r *rawSchemas) get(name string) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.byName[name]
	return s, ok
}

// schemaConn notes the ids of tools/list requests and keeps the schemas of
// their answers.
type schemaConn struct {
	sdk.Connection
	schemas *rawSchemas
	mu      sync.Mutex
	pending map[string]bool // ids of tools/list requests not answered yet
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *schemaConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.mu.Lock()
		c.pending[idKey(req.ID)] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *schemaConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.ID.IsValid() {
		k := idKey(resp.ID)
		c.mu.Lock()
		listed := c.pending[k]
		delete(c.pending, k)
		c.mu.Unlock()
		if listed && resp.Error == nil {
			c.schemas.keep(resp.Result)
		}
	}
	return msg, err
}
