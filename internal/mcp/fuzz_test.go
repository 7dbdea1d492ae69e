package mcp

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzJSONRPC feeds any bytes to the JSON-RPC reader of the websocket
// transport and to the reader of tools/list answers that keeps the servers'
// schemas: they decode or refuse, never panic, and a kept schema is valid
// JSON.
func FuzzJSONRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`,
		`{"tools":[{"name":"get-sum","inputSchema":{"type":"object","properties":{"b":{},"a":{}}}},{"name":"x","inputSchema":null}]}`,
		`[]`, `[1]`, ` `, `{"jsonrpc":"1.0"}`, `{"tools":[{"name":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := DecodeMessages(data)
		if err == nil && len(msgs) == 0 {
			t.Fatal("DecodeMessages returned no message and no error")
		}
		for _, m := range msgs {
			if _, err := jsonrpc.EncodeMessage(m); err != nil {
				t.Fatalf("a decoded message does not encode again: %v", err)
			}
		}
		var r rawSchemas
		r.keep(data)
		for name, s := range r.byName {
			if !json.Valid(s) {
				t.Fatalf("schema of %q kept as invalid JSON: %q", name, s)
			}
		}
	})
}
