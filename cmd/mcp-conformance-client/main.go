// Command mcp-conformance-client is the client that the official MCP conformance
// suite drives. The suite starts a server for one scenario, then runs this program
// with the server's URL as the last argument and the scenario's name in
// MCP_CONFORMANCE_SCENARIO; the program connects with Relay's MCP package and does
// what the scenario asks, the way Relay itself would. It exits non-zero, saying
// why on stderr, when the client side of a scenario fails; the suite's own checks
// decide whether the scenario passes.
//
// For the auth scenarios it authorizes with Relay's mcp.Authorizer as Relay's
// server does, with the user's browser played by an HTTP GET of the
// authorization URL whose redirect to the callback is read instead of followed
// (the suite's authorization server answers at once). Inputs a scenario gives
// the client (a pre-registered client's credentials) come as JSON in
// MCP_CONFORMANCE_CONTEXT.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
)

// timeout bounds connecting and each request, as a server's `timeout` and
// `initTimeout` do in Relay's config. It is well inside the time after which the
// suite kills a client (30 s by default), so that a hang ends with a message.
const timeout = 10 * time.Second

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: MCP_CONFORMANCE_SCENARIO=NAME mcp-conformance-client [ARG...] SERVER_URL")
		os.Exit(2)
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	url := os.Args[len(os.Args)-1]
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-conformance-client: MCP_CONFORMANCE_CONTEXT: %v\n", err)
			os.Exit(2)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := run(ctx, scenario, url, sc, log)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-conformance-client: scenario %q: %v\n", scenario, err)
		os.Exit(1)
	}
}

// run connects to the scenario's server, plays the scenario, and closes the session.
func run(ctx context.Context, scenario, url string, sc scenarioContext, log *slog.Logger) (err error) {
	cfg := mcp.ServerConfig{
		Name:        "conformance",
		Transport:   mcp.TransportStreamableHTTP,
		URL:         url,
		Timeout:     timeout,
		InitTimeout: timeout,
	}
	opts := mcp.ConnectOptions{Version: "conformance", Logger: log}
	if strings.HasPrefix(scenario, "auth/") {
		opts.Authorization = newOAuth(url, scenario, sc)
	}
	connectCtx, cancel := context.WithTimeout(ctx, cfg.InitTimeout)
	s, err := mcp.Connect(connectCtx, cfg, opts)
	cancel()
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", url, err)
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the session: %w", cerr)
		}
	}()

	c := &client{s: s, timeout: cfg.Timeout}
	switch scenario {
	case "initialize":
		// Connecting is the whole scenario: initialize, then notifications/initialized.
		return nil
	case "tools_call":
		res, err := c.call(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
		if err != nil {
			return err
		}
		return expectText(res, "is 8")
	case "sse-retry":
		// The server ends the call's SSE stream after a priming event that carries
		// an event id and a retry delay; the result only arrives on the stream
		// resumed with Last-Event-ID after that delay.
		res, err := c.call(ctx, "test_reconnection", map[string]any{})
		if err != nil {
			return err
		}
		return expectText(res, "Reconnection test completed")
	case "elicitation-sep1034-client-defaults":
		return elicitDefaults(ctx, c)
	default:
		// Any other scenario (the auth ones): what Relay does on connecting,
		// discover the tools, then use one (where a server may ask for more
		// scope).
		tools, err := c.tools(ctx)
		if err != nil || !slices.ContainsFunc(tools, func(t *sdk.Tool) bool { return t.Name == "test-tool" }) {
			return err
		}
		_, err = c.call(ctx, "test-tool", map[string]any{})
		return err
	}
}

// elicitDefaults plays elicitation-sep1034-client-defaults: the server asks a
// question whose schema has defaults; the answer accepts with nothing typed,
// so that what the server gets is the defaults, filled by Relay's own code.
func elicitDefaults(ctx context.Context, c *client) error {
	ctx = mcp.WithAsker(ctx, "conformance", func(_ context.Context, q *mcp.Question) (*mcp.Answer, error) {
		content, err := mcp.FillAnswer(q.RequestedSchema, map[string]any{})
		if err != nil {
			return nil, err
		}
		return &mcp.Answer{Action: mcp.ActionAccept, Content: content}, nil
	})
	_, err := c.call(ctx, "test_client_elicitation_defaults", map[string]any{})
	return err
}

// client plays scenarios over one session, each request bounded by timeout.
type client struct {
	s       *mcp.Session
	timeout time.Duration
}

// tools lists every tool the server offers, following pagination.
func (c *client) tools(ctx context.Context) ([]*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var tools []*sdk.Tool
	for t, err := range c.s.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// call checks that the server lists the tool, calls it, and fails on a result
// marked as an error.
func (c *client) call(ctx context.Context, name string, args map[string]any) (*sdk.CallToolResult, error) {
	tools, err := c.tools(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	if !slices.Contains(names, name) {
		return nil, fmt.Errorf("the server does not list tool %q (it lists %q)", name, names)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("calling tool %q: %w", name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("tool %q returned an error: %s", name, text(res))
	}
	return res, nil
}

// expectText fails unless the result's text contains want.
func expectText(res *sdk.CallToolResult, want string) error {
	if got := text(res); !strings.Contains(got, want) {
		return fmt.Errorf("unexpected tool result %q: want it to contain %q", got, want)
	}
	return nil
}

// text joins the text parts of a result.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
