package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-ai/relay/internal/tool"
)

// Builtin is the server label of Relay's own tools.
const Builtin = "builtin"

// Tool returns tl measured and traced: each Call is a tool call
// (relay_tool_* metrics) and, with tracing on, a span "execute_tool <name>".
// server is the MCP server the tool belongs to, or Builtin.
func (t *Telemetry) Tool(tl tool.Tool, server string) tool.Tool {
	if t == nil || tl == nil {
		return tl
	}
	return &measuredTool{next: tl, t: t, server: server}
}

// Tools returns the tools of m, each decorated as by Tool, in a new map.
func (t *Telemetry) Tools(m map[string]tool.Tool, server string) map[string]tool.Tool {
	if t == nil || m == nil {
		return m
	}
	out := make(map[string]tool.Tool, len(m))
	for k, tl := range m {
		out[k] = t.Tool(tl, server)
	}
	return out
}

type measuredTool struct {
	next   tool.Tool
	t      *Telemetry
	server string
}

// Unwrap returns the decorated tool.
func (m *measuredTool) Unwrap() tool.Tool { return m.next }

func (m *measuredTool) Name() string { return m.next.Name() }

func (m *measuredTool) Call(ctx context.Context, userID string, args json.RawMessage) (tool.Result, error) {
	ctx, call := m.t.StartTool(ctx, m.server, m.next.Name())
	res, err := m.next.Call(ctx, userID, args)
	call.End(res.IsError, err)
	return res, err
}

// ToolCall is one tool call being measured; End it once.
type ToolCall struct {
	t            *Telemetry
	span         trace.Span
	ctx          context.Context
	start        time.Time
	server, name string
	unknown      bool // the tool does not exist; see NoSuchTool
}

// NoSuchTool says that the call named a tool its server does not have: it is
// counted under the tool Other, so that names made up by a caller of
// POST /api/mcp/tools/{key}/call (or by a model) take none of the values the
// tool label keeps for real tools. Call it before End.
func (c *ToolCall) NoSuchTool() {
	if c != nil {
		c.unknown = true
	}
}

// StartTool starts measuring a call of the tool name of server (an MCP
// server's name, or Builtin), with a span "execute_tool <name>" when tracing
// is on; ctx carries the span to what the call does. For callers that do not
// go through a tool.Tool (MCP tool calls).
func (t *Telemetry) StartTool(ctx context.Context, server, name string) (context.Context, *ToolCall) {
	if t == nil {
		return ctx, nil
	}
	c := &ToolCall{t: t, start: time.Now(), server: server, name: name}
	if t.tracer != nil {
		ctx, c.span = t.tracer.Start(ctx, "execute_tool "+name, trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("relay.tool.server", server),
		))
	}
	c.ctx = ctx
	return ctx, c
}

// End records how the call ended: isError for a result marked IsError, err
// for a failure of the call itself.
func (c *ToolCall) End(isError bool, err error) {
	if c == nil {
		return
	}
	outcome := OutcomeOK
	switch {
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(c.ctx.Err(), context.Canceled)):
		outcome = OutcomeCancelled
	case err != nil:
		outcome = OutcomeError
	case isError:
		outcome = OutcomeToolError
	}
	m := c.t.m
	server, name := m.toolServer.value(c.server), Other
	if !c.unknown {
		name = m.toolName.value(c.name)
	}
	m.toolCalls.WithLabelValues(server, name, outcome).Inc()
	m.toolDuration.WithLabelValues(server, name).Observe(time.Since(c.start).Seconds())
	if c.span != nil {
		endSpan(c.span, outcome)
	}
}
