package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// everyTransport starts server-everything once per transport (and the in-repo Go
// websocket server) and returns the mcpServers block that reaches them.
func everyTransport(t *testing.T) string {
	t.Helper()
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	gateway := mcptest.Peer(t, "PEER_SUPERGATEWAY")
	sse, http_, ws := mcptest.FreePort(t), mcptest.FreePort(t), mcptest.FreePort(t)
	mcptest.StartProcess(t, sse, []string{fmt.Sprintf("PORT=%d", sse)}, "node", everything, "sse")
	mcptest.StartProcess(t, http_, []string{fmt.Sprintf("PORT=%d", http_)}, "node", everything, "streamableHttp")
	mcptest.StartProcess(t, ws, nil, "node", gateway, "--stdio", "node "+everything+" stdio", "--outputTransport", "ws", "--port", fmt.Sprint(ws), "--logLevel", "none")
	goWS := mcptest.Start(t, "websocket", mcptest.Options{})
	return fmt.Sprintf(`mcpServers:
  stdio:
    command: node
    args: [%q, stdio]
  sse:
    type: sse
    url: http://127.0.0.1:%d/sse
  http:
    type: streamable-http
    url: http://127.0.0.1:%d/mcp
  gateway:
    type: websocket
    url: ws://127.0.0.1:%d/message
  gows:
    url: %s
`, everything, sse, http_, ws, goWS)
}

func TestMCPCommandsOnEveryTransport(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), everyTransport(t))
	servers := []string{"stdio", "sse", "http", "gateway", "gows"}

	code, out, stderr := runCLI(t, nil, "", "mcp", "tools", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("relay mcp tools: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, s := range servers {
		if !strings.Contains(out, "echo__mcp__"+s+"\n") {
			t.Errorf("relay mcp tools lacks echo__mcp__%s", s)
		}
	}
	for _, s := range servers {
		t.Run(s, func(t *testing.T) {
			code, out, stderr := runCLI(t, nil, "", "mcp", "call", "--config", cfgPath, "--args", `{"message":"hi"}`, "echo__mcp__"+s)
			if code != 0 || out != "Echo: hi\n" {
				t.Errorf("relay mcp call echo__mcp__%s: exit %d, stdout %q, stderr %q", s, code, out, stderr)
			}
		})
	}
	code, out, _ = runCLI(t, nil, "", "mcp", "list", "--config", cfgPath, "--json")
	var sts []struct {
		Name, State string
		ToolCount   int `json:"tool_count"`
	}
	if err := json.Unmarshal([]byte(out), &sts); err != nil || code != 0 || len(sts) != len(servers) {
		t.Fatalf("relay mcp list: %d %q %v", code, out, err)
	}
	for _, s := range sts {
		if s.State != "connected" {
			t.Errorf("%s: state %s", s.Name, s.State)
		}
	}
}

func TestMCPCallFailures(t *testing.T) {
	goWS := mcptest.Start(t, "websocket", mcptest.Options{})
	closed := freeAddr(t)
	cfgPath := writeConfig(t, t.TempDir(), fmt.Sprintf(`mcpServers:
  gows:
    url: %s
  down:
    type: streamable-http
    url: http://%s/mcp
    initTimeout: 1000
`, goWS, closed))
	tests := []struct {
		name, key, args string
		want            string
	}{
		{"invalid arguments never reach the server", "echo__mcp__gows", `{"message":3}`, `"echo__mcp__gows" tool call failed: `},
		{"unknown tool", "nope__mcp__gows", `{}`, `"nope__mcp__gows" tool call failed: `},
		{"server down", "echo__mcp__down", `{"message":"x"}`, `"echo__mcp__down" tool call failed: `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runCLI(t, nil, "", "mcp", "call", "--config", cfgPath, "--args", tc.args, tc.key)
			if code != 1 || !strings.HasPrefix(out, tc.want) {
				t.Errorf("exit %d, stdout %q, want it to start with %q", code, out, tc.want)
			}
		})
	}
	code, out, _ := runCLI(t, nil, "", "mcp", "list", "--config", cfgPath)
	if code != 1 || !strings.Contains(out, "error") || !strings.Contains(out, "down") {
		t.Errorf("relay mcp list with a server down: exit %d\n%s", code, out)
	}
}

// TestServeReadyDespiteBrokenMCPServers: broken servers never
// delay readiness, and the others work.
func TestServeReadyDespiteBrokenMCPServers(t *testing.T) {
	// A server that accepts connections and never answers: initialize hangs.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	goWS := mcptest.Start(t, "websocket", mcptest.Options{})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
mcpServers:
  badcommand:
    command: /nonexistent/mcp-server
    initTimeout: 2000
  unreachable:
    type: streamable-http
    url: http://%s/mcp
    initTimeout: 2000
  slow:
    type: streamable-http
    url: http://%s/mcp
    initTimeout: 2000
  good:
    url: %s
`, filepath.Join(dir, "data"), freeAddr(t), hang.Addr(), goWS))
	began := time.Now()
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("ready after %s; broken MCP servers delayed readiness", d)
	}
	var tools struct {
		Data []struct{ Key string }
	}
	if code := s.call(t, testKey, "GET", "/api/mcp/servers/good/tools", "", &tools); code != 200 || len(tools.Data) == 0 {
		t.Fatalf("good server's tools: %d %+v", code, tools)
	}
	waitFor(t, 10*time.Second, "every server's state settled", func() bool {
		var sts struct {
			Data []struct {
				Name, State string
				LastError   string `json:"last_error"`
			}
		}
		s.call(t, testKey, "GET", "/api/mcp/servers", "", &sts)
		states := map[string]string{}
		for _, st := range sts.Data {
			states[st.Name] = st.State
			if st.State == "error" && st.LastError == "" {
				t.Errorf("%s: error state without a reason", st.Name)
			}
		}
		return states["good"] == "connected" && states["badcommand"] == "error" && states["unreachable"] == "error" && states["slow"] == "error"
	})
	var e map[string]any
	if code := s.call(t, testKey, "GET", "/api/mcp/servers/nope/tools", "", &e); code != http.StatusNotFound {
		t.Errorf("unknown server: %d", code)
	}
	var st struct{ Name, State string }
	if code := s.call(t, testKey, "POST", "/api/mcp/servers/good/reconnect", "", &st); code != 200 || st.State != "connected" {
		t.Errorf("reconnect: %d %+v", code, st)
	}
	if code := s.call(t, testKey, "POST", "/api/mcp/servers/unreachable/reconnect", "", &e); code != http.StatusServiceUnavailable {
		t.Errorf("reconnecting an unreachable server: %d %v", code, e)
	}
}

// relay mcp list counts each app-scoped server's tools, also for a server not
// started at start-up: it connects and lists them instead of showing 0.
func TestMCPListCountsTools(t *testing.T) {
	ws := mcptest.Start(t, "websocket", mcptest.Options{})
	cfgPath := writeConfig(t, t.TempDir(), fmt.Sprintf(`mcpServers:
  eager:
    url: %s
  lazy:
    url: %s
    startup: false
`, ws, ws))
	code, out, errOut := runCLI(t, nil, "", "mcp", "tools", "eager", "--config", cfgPath, "--json")
	var tools []json.RawMessage
	if code != 0 || json.Unmarshal([]byte(out), &tools) != nil || len(tools) == 0 {
		t.Fatalf("relay mcp tools eager: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, nil, "", "mcp", "list", "--json", "--config", cfgPath)
	var sts []struct {
		Name      string
		State     string
		ToolCount int `json:"tool_count"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sts) != nil || len(sts) != 2 {
		t.Fatalf("relay mcp list: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range sts {
		if s.State != "connected" || s.ToolCount != len(tools) {
			t.Errorf("%s: %s with %d tools; want connected with %d", s.Name, s.State, s.ToolCount, len(tools))
		}
	}
}
