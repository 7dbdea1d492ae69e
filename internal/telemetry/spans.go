package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// noEnd is the end function of a span not started.
func noEnd(error) {}

// Run is one run being measured; End it once.
type Run struct {
	t     *Telemetry
	span  trace.Span
	start time.Time
	agent string
}

// StartRun starts measuring a run that agent answers (relay_runs_in_progress)
// and, with tracing on, its span "run <agent>", a child of the span of ctx
// (the request that started it). The run's and conversation's ids are
// attributes of the span, never labels of a metric.
func (t *Telemetry) StartRun(ctx context.Context, agent, runID, conversationID string) (context.Context, *Run) {
	if t == nil {
		return ctx, nil
	}
	t.m.runsInProgress.Inc()
	r := &Run{t: t, start: time.Now(), agent: agent}
	if t.tracer != nil {
		ctx, r.span = t.tracer.Start(ctx, "run "+agent, trace.WithAttributes(
			attribute.String("gen_ai.agent.id", agent),
			attribute.String("relay.run.id", runID),
			attribute.String("gen_ai.conversation.id", conversationID),
		))
	}
	return ctx, r
}

// End records how the run ended: outcome is the run's final status
// (succeeded, failed, cancelled); any other than succeeded marks its span as
// an error of that kind.
func (r *Run) End(outcome string) {
	if r == nil {
		return
	}
	m := r.t.m
	m.runsInProgress.Dec()
	agent, out := m.runAgent.value(r.agent), m.runOutcome.value(outcome)
	m.runs.WithLabelValues(agent, out).Inc()
	m.runDuration.WithLabelValues(agent, out).Observe(time.Since(r.start).Seconds())
	if r.span != nil {
		if outcome == "succeeded" {
			outcome = OutcomeOK
		}
		endSpan(r.span, outcome)
	}
}

// StartAgent starts, with tracing on, the span "invoke_agent <agent>" of one
// agent's turn in a run (its loop between model and tools, until it answers
// or hands over); the model's and tools' spans are its children. Call the
// returned function with the turn's error when it ends.
func (t *Telemetry) StartAgent(ctx context.Context, agent string) (context.Context, func(error)) {
	if t == nil || t.tracer == nil {
		return ctx, noEnd
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent "+agent, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.id", agent),
	))
	return ctx, func(err error) { endSpan(span, errOutcome(err)) }
}

// StartMCPRequest starts, with tracing on, the client span of one MCP
// request to server: "<method> <target>" (target is the tool of a
// tools/call, else empty) with the MCP attributes. ctx carries it to the
// transport, which sends its trace context along (Transport). Call the
// returned function with the request's error when it ends.
func (t *Telemetry) StartMCPRequest(ctx context.Context, server, method, target, sessionID string) (context.Context, func(error)) {
	if t == nil || t.tracer == nil {
		return ctx, noEnd
	}
	name := method
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", method),
		attribute.String("relay.mcp.server", server),
	}
	if target != "" {
		name += " " + target
		if method == "tools/call" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", target))
		}
	}
	if sessionID != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", sessionID))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, func(err error) { endSpan(span, errOutcome(err)) }
}

// StartDB starts, with tracing on, the client span of one database write
// transaction: its name is operation (the store's method, such as
// WriteBatch), with db.system.name system ("sqlite", "postgresql"). Call the
// returned function with the transaction's error when it ends.
func (t *Telemetry) StartDB(ctx context.Context, system, operation string) (context.Context, func(error)) {
	if t == nil || t.tracer == nil {
		return ctx, noEnd
	}
	ctx, span := t.tracer.Start(ctx, operation, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("db.system.name", system),
		attribute.String("db.operation.name", operation),
	))
	return ctx, func(err error) { endSpan(span, errOutcome(err)) }
}

// errOutcome is OutcomeOK, OutcomeCancelled or OutcomeError for err.
func errOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	}
	return OutcomeError
}
