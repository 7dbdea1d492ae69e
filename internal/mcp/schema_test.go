package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// listRaw asks server-everything over stdio for its tools by hand, and returns
// each tool's input schema exactly as it wrote it (compacted).
func listRaw(t *testing.T, everything string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", everything, "stdio")
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if _, err := in.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID != 2 {
			continue
		}
		out := map[string]string{}
		for _, tl := range resp.Result.Tools {
			var b bytes.Buffer
			if err := json.Compact(&b, tl.InputSchema); err != nil {
				t.Fatal(err)
			}
			out[tl.Name] = b.String()
		}
		return out
	}
	t.Fatalf("server-everything never answered tools/list: %v", sc.Err())
	return nil
}

// TestSchemasKeepTheServersKeyOrder: the schema the model is sent is the one
// the server published, byte for byte once compacted, its keys in the
// server's order — not decoded and encoded again with sorted keys.
func TestSchemasKeepTheServersKeyOrder(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	want := listRaw(t, everything)
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
