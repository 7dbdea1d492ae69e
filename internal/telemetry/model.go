package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-ai/relay/internal/llm"
)

// Outcomes of model requests and tool calls, besides a model provider's
// error kinds (llm.ErrorKind).
const (
	OutcomeOK        = "ok"
	OutcomeError     = "error"     // a failure of no known kind
	OutcomeCancelled = "cancelled" // the caller's context ended first
	// OutcomeToolError is a tool's result marked IsError: a failure the
	// model reads.
	OutcomeToolError = "tool_error"
)

// Model returns m measured and traced: each Stream is a model request
// (relay_model_* metrics, with the model its request names) and, with
// tracing on, a client span "chat <model>" with the GenAI attributes.
// provider names the provider's endpoint as configured ("openai",
// "anthropic", a custom endpoint's name). What m also is (llm.Bodier,
// llm.ParamChecker) the result is too.
func (t *Telemetry) Model(m llm.Model, provider string) llm.Model {
	if t == nil || m == nil {
		return m
	}
	d := &model{next: m, t: t, provider: t.m.modelProvider.value(provider), system: provider}
	b, isBodier := m.(llm.Bodier)
	c, isChecker := m.(llm.ParamChecker)
	switch {
	case isBodier && isChecker:
		return struct {
			*model
			llm.Bodier
			llm.ParamChecker
		}{d, b, c}
	case isBodier:
		return struct {
			*model
			llm.Bodier
		}{d, b}
	case isChecker:
		return struct {
			*model
			llm.ParamChecker
		}{d, c}
	}
	return d
}

// model is the decorator of Telemetry.Model.
type model struct {
	next llm.Model
	t    *Telemetry
	// provider is the capped label; system the name as given, for spans.
	provider, system string
}

// Unwrap returns the decorated model.
func (m *model) Unwrap() llm.Model { return m.next }

func (m *model) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	t := m.t
	start := time.Now()
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, strings.TrimSpace("chat "+req.Model), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.provider.name", m.system),
				attribute.String("gen_ai.system", m.system),
				attribute.String("gen_ai.request.model", req.Model),
			))
	}
	var first atomic.Int64 // nanoseconds to the first piece of the answer; 0 before
	turn, err := m.next.Stream(ctx, req, func(e llm.Event) {
		switch e.Kind {
		case llm.EventText, llm.EventToolCallDelta, llm.EventImage:
			if first.Load() == 0 {
				first.CompareAndSwap(0, max(int64(time.Since(start)), 1))
			}
		case llm.EventRetry:
			if span != nil && e.Retry != nil {
				span.AddEvent("retry", trace.WithAttributes(attribute.String("error.type", string(e.Retry.Kind))))
			}
		}
		if emit != nil {
			emit(e)
		}
	})
	elapsed := time.Since(start)
	name := t.m.modelName.value(req.Model)
	outcome := modelOutcome(ctx, err)
	t.m.modelRequests.WithLabelValues(m.provider, name, outcome).Inc()
	t.m.modelDuration.WithLabelValues(m.provider, name).Observe(elapsed.Seconds())
	if ns := first.Load(); ns > 0 {
		t.m.modelTTFT.WithLabelValues(m.provider, name).Observe(time.Duration(ns).Seconds())
	}
	var usage llm.Usage
	if turn != nil {
		usage = turn.Usage
	}
	if usage.PromptTokens > 0 {
		t.m.modelTokens.WithLabelValues(m.provider, name, "prompt").Add(float64(usage.PromptTokens))
	}
	if usage.CompletionTokens > 0 {
		t.m.modelTokens.WithLabelValues(m.provider, name, "completion").Add(float64(usage.CompletionTokens))
	}
	if span != nil {
		if turn != nil {
			span.SetAttributes(
				attribute.Int("gen_ai.usage.input_tokens", usage.PromptTokens),
				attribute.Int("gen_ai.usage.output_tokens", usage.CompletionTokens),
			)
			if turn.FinishReason != "" {
				span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{turn.FinishReason}))
			}
			if turn.Retries > 0 {
				span.SetAttributes(attribute.Int("relay.retries", turn.Retries))
			}
		}
		if ns := first.Load(); ns > 0 {
			span.SetAttributes(attribute.Float64("relay.time_to_first_token", time.Duration(ns).Seconds()))
		}
		endSpan(span, outcome)
	}
	return turn, err
}

// modelOutcome classifies a model request's end: ok, the provider error's
// kind, cancelled, or error.
func modelOutcome(ctx context.Context, err error) string {
	if err == nil {
		return OutcomeOK
	}
	var le *llm.Error
	switch {
	case errors.As(err, &le) && le.Kind != "":
		return string(le.Kind)
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return OutcomeCancelled
	}
	return OutcomeError
}

// endSpan ends span, marked as an error of kind outcome unless outcome is
// OutcomeOK. The status says the kind only: messages may quote what users
// or servers wrote, which traces do not carry.
func endSpan(span trace.Span, outcome string) {
	if outcome != OutcomeOK {
		span.SetAttributes(attribute.String("error.type", outcome))
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
