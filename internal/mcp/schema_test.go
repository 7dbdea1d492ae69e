package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// TestSchemasKeepTheServersKeyOrder: the schema the model is sent is the one
// the server published, byte for byte once compacted, its keys in the
// server's order — not decoded and encoded again with sorted keys.
func TestSchemasKeepTheServersKeyOrder(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	want := mcptest.PublishedSchemas(t, everything)
	s := server("everything", mcp.TransportStdio, "")
	s.Command, s.Args = "node", []string{everything, "stdio"}
	m := newManager(t, mcp.Options{}, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := m.Tools(ctx, "everything", nil)
	if err != nil {
		t.Fatal(err)
	}
	// What it lists depends on the client's capabilities: compare the tools
	// listed to both.
	reordered, compared := 0, 0
	for _, tl := range tools {
		if _, ok := want[tl.Name]; !ok {
			continue
		}
		compared++
		got := string(tl.Schema.JSON())
		if got != want[tl.Name] {
			t.Errorf("%s: schema\n%s\nthe server sent\n%s", tl.Name, got, want[tl.Name])
		}
		// The same schema decoded and encoded again: keys sorted.
		var v any
		if err := json.Unmarshal([]byte(want[tl.Name]), &v); err != nil {
			t.Fatal(err)
		}
		sorted, _ := json.Marshal(v)
		if string(sorted) != want[tl.Name] {
			reordered++
		}
	}
	if compared < 5 {
		t.Fatalf("only %d of %d tools were listed to both clients", compared, len(tools))
	}
	if reordered == 0 {
		t.Error("no schema of server-everything has its keys out of sorted order; the test shows nothing")
	}
}
