package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// PublishedSchemas asks the stdio MCP server whose Node entry point is bin
// for its tools by hand, with no MCP client in between, and returns each
// tool's input schema as the server wrote it, compacted: what a test
// compares the schemas Relay sends with.
func PublishedSchemas(t testing.TB, bin string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", bin, "stdio")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var resp struct {
			ID     int
			Result struct {
				Tools []struct {
					Name        string
					InputSchema json.RawMessage
				}
			}
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID != 2 {
			continue
		}
		schemas := map[string]string{}
		for _, tl := range resp.Result.Tools {
			var b bytes.Buffer
			if err := json.Compact(&b, tl.InputSchema); err != nil {
				t.Fatal(err)
			}
			schemas[tl.Name] = b.String()
		}
		return schemas
	}
	t.Fatalf("the server never answered tools/list: %v", sc.Err())
	return nil
}
